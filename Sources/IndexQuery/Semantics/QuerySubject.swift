import IndexModel

/// Something a query can be asked about: an item, a public item in the cloud, a
/// journal event. A subject answers by attribute name with the model's typed
/// values; a list of strings is matched element by element.
public protocol QuerySubject {
    /// The value of one named attribute; nil when the subject has none.
    func value(of attribute: String) -> AttributeValue?
    /// Every value `*` looks at; with `includingContent`, also the text content
    /// that only `**` looks at.
    func values(includingContent: Bool) -> [AttributeValue]
}

/// The attribute that holds an item's text content: searched by `**`, not by `*`.
public let textContentAttribute = "textContent"

extension AttributeKey {
    /// Whether `*` skips this attribute: only `**` looks at text content.
    public func isSearched(includingContent: Bool) -> Bool {
        includingContent || self != .custom(textContentAttribute)
    }
}

extension AttributeSet {
    /// The values `*` (and, with content, `**`) look at in an attribute set.
    public func queryValues(includingContent: Bool) -> [AttributeValue] {
        entries.compactMap { $0.key.isSearched(includingContent: includingContent) ? $0.value : nil }
    }
}

extension AttributeSet: QuerySubject {
    public func value(of attribute: String) -> AttributeValue? {
        self[AttributeKey(name: attribute)]
    }

    public func values(includingContent: Bool) -> [AttributeValue] {
        queryValues(includingContent: includingContent)
    }
}

/// Item-level properties are queryable beside the attribute set:
/// `uniqueIdentifier`, `domainIdentifier` (the item's domain) and
/// `expirationDate`.
extension SearchableItem: QuerySubject {
    public func value(of attribute: String) -> AttributeValue? {
        switch attribute {
        case "uniqueIdentifier": .string(uniqueIdentifier)
        case "domainIdentifier": domainIdentifier.map(AttributeValue.string)
        case "expirationDate": expirationDate.map(AttributeValue.date)
        default: attributes[AttributeKey(name: attribute)]
        }
    }

    public func values(includingContent: Bool) -> [AttributeValue] {
        attributes.queryValues(includingContent: includingContent)
    }
}
