/// The searchable metadata of an item or activity, as `CSSearchableItemAttributeSet`.
///
/// Values are kept by key; the standard attributes have typed accessors. Setting a
/// standard attribute to a value of the wrong type is a programming error and is
/// refused by `validate()`; values arriving from files are checked by the
/// operations parser before they get here.
public struct AttributeSet: Hashable, Sendable {
    public private(set) var values: [AttributeKey: AttributeValue]

    public init(_ values: [AttributeKey: AttributeValue] = [:]) {
        self.values = values
    }

    public subscript(key: AttributeKey) -> AttributeValue? {
        get { values[key] }
        set { values[key] = newValue }
    }

    public var isEmpty: Bool { values.isEmpty }

    /// The entries in canonical (encoding) order.
    public var sortedEntries: [(key: AttributeKey, value: AttributeValue)] {
        values.sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value) }
    }

    public var title: String? {
        get { string(.title) }
        set { values[.title] = newValue.map(AttributeValue.string) }
    }

    public var displayName: String? {
        get { string(.displayName) }
        set { values[.displayName] = newValue.map(AttributeValue.string) }
    }

    public var contentDescription: String? {
        get { string(.contentDescription) }
        set { values[.contentDescription] = newValue.map(AttributeValue.string) }
    }

    public var keywords: [String]? {
        get { if case .strings(let list)? = values[.keywords] { return list } else { return nil } }
        set { values[.keywords] = newValue.map(AttributeValue.strings) }
    }

    public var contentURL: String? {
        get { string(.contentURL) }
        set { values[.contentURL] = newValue.map(AttributeValue.string) }
    }

    public var rankingHint: Double? {
        get { if case .number(let value)? = values[.rankingHint] { return value } else { return nil } }
        set { values[.rankingHint] = newValue.map(AttributeValue.number) }
    }

    public func string(_ key: AttributeKey) -> String? {
        if case .string(let text)? = values[key] { return text }
        return nil
    }

    /// Applies a change set: a key mapped to a value sets it, a key mapped to nil
    /// clears it, keys not mentioned keep their value (Core Spotlight's isUpdate).
    public func merging(_ changes: AttributeChanges) -> AttributeSet {
        var merged = self
        for (key, value) in changes.entries {
            merged.values[key] = value
        }
        return merged
    }
}

/// Attribute changes of an update: each key maps to its new value, or to nil to clear it.
public struct AttributeChanges: Hashable, Sendable {
    public private(set) var entries: [AttributeKey: AttributeValue?]

    public init(_ entries: [AttributeKey: AttributeValue?] = [:]) {
        self.entries = entries
    }

    public subscript(key: AttributeKey) -> AttributeValue?? {
        get { entries[key] }
        set { entries[key] = newValue }
    }

    public var isEmpty: Bool { entries.isEmpty }

    public var sortedEntries: [(key: AttributeKey, value: AttributeValue?)] {
        entries.sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value) }
    }
}
