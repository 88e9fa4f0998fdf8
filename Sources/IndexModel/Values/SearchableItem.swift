/// An item an app puts in a named index, as `CSSearchableItem`.
///
/// Items are keyed by (index name, `uniqueIdentifier`); indexing an item whose key
/// exists replaces it. `domainIdentifier` groups items for deletion: deleting the
/// domain "a" deletes items of "a" and of "a.b", not of "ab".
public struct SearchableItem: Hashable, Sendable {
    public var uniqueIdentifier: String
    public var domainIdentifier: String?
    public var attributes: AttributeSet
    /// When the clock passes this instant the item leaves search at once and is
    /// removed by a journaled expiry event.
    public var expirationDate: Timestamp?

    public init(
        uniqueIdentifier: String,
        domainIdentifier: String? = nil,
        attributes: AttributeSet = AttributeSet(),
        expirationDate: Timestamp? = nil
    ) {
        self.uniqueIdentifier = uniqueIdentifier
        self.domainIdentifier = domainIdentifier
        self.attributes = attributes
        self.expirationDate = expirationDate
    }

    /// Applies an update with Core Spotlight's isUpdate semantics.
    public func applying(_ update: ItemUpdate) -> SearchableItem {
        precondition(update.uniqueIdentifier == uniqueIdentifier, "an update applies to its own item only")
        var updated = self
        updated.domainIdentifier = update.domainIdentifier.applied(to: domainIdentifier)
        updated.expirationDate = update.expirationDate.applied(to: expirationDate)
        updated.attributes = attributes.merging(update.attributes)
        return updated
    }
}

/// A change to one optional field of an update: keep it, set it, or clear it.
public enum FieldChange<Value: Hashable & Sendable>: Hashable, Sendable {
    case keep
    case set(Value)
    case clear

    public func applied(to current: Value?) -> Value? {
        switch self {
        case .keep: current
        case .set(let value): value
        case .clear: nil
        }
    }
}

/// A partial update of an existing item (`isUpdate = true`): fields not mentioned
/// keep their value, nil clears. An update of an item that does not exist is ignored.
public struct ItemUpdate: Hashable, Sendable {
    public var uniqueIdentifier: String
    public var domainIdentifier: FieldChange<String>
    public var expirationDate: FieldChange<Timestamp>
    public var attributes: AttributeChanges

    public init(
        uniqueIdentifier: String,
        domainIdentifier: FieldChange<String> = .keep,
        expirationDate: FieldChange<Timestamp> = .keep,
        attributes: AttributeChanges = AttributeChanges()
    ) {
        self.uniqueIdentifier = uniqueIdentifier
        self.domainIdentifier = domainIdentifier
        self.expirationDate = expirationDate
        self.attributes = attributes
    }
}
