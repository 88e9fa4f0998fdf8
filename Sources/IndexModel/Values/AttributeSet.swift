/// The searchable metadata of an item or activity, as `CSSearchableItemAttributeSet`.
///
/// Values are kept by key; the standard attributes have typed accessors. Setting a
/// standard attribute to a value of the wrong type is a programming error and is
/// refused by `validate()`; values arriving from files are checked by the
/// operations parser before they get here.
public struct AttributeSet: Hashable, Sendable {
    /// One attribute: its key and its value. A set holds at most one entry per key.
    public struct Entry: Hashable, Sendable {
        public let key: AttributeKey
        public let value: AttributeValue
    }

    /// The entries in canonical (encoding) order: sorted by key, one per key.
    /// Kept sorted on every change, so encoding never sorts.
    public private(set) var entries: [Entry]

    public init(_ values: [AttributeKey: AttributeValue] = [:]) {
        entries = values.map { Entry(key: $0.key, value: $0.value) }.sorted { $0.key < $1.key }
    }

    /// Entries already in canonical order with no key twice (the codec checks).
    init(sortedUniqueEntries entries: [Entry]) {
        self.entries = entries
    }

    public var values: [AttributeKey: AttributeValue] {
        Dictionary(uniqueKeysWithValues: entries.map { ($0.key, $0.value) })
    }

    public subscript(key: AttributeKey) -> AttributeValue? {
        get { position(of: key).map { entries[$0].value } }
        set {
            if let existing = position(of: key) { entries.remove(at: existing) }
            if let newValue { entries.insert(Entry(key: key, value: newValue), at: lowerBound(key)) }
        }
    }

    /// Where `key` is. Custom names are compared as Swift strings compare them
    /// (canonical equivalence: "é" is "e\u{301}"), as a dictionary would, while
    /// their order is by UTF-8 bytes; so they are searched one by one (they are
    /// few, and sort after every standard key).
    private func position(of key: AttributeKey) -> Int? {
        if case .custom = key { return entries.firstIndex { $0.key == key } }
        let position = lowerBound(key)
        return position < entries.count && entries[position].key == key ? position : nil
    }

    /// The position of the first entry whose key is not below `key`.
    private func lowerBound(_ key: AttributeKey) -> Int {
        var low = 0
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].key < key { low = middle + 1 } else { high = middle }
        }
        return low
    }

    public var isEmpty: Bool { entries.isEmpty }
    public var count: Int { entries.count }

    /// The entries in canonical (encoding) order.
    public var sortedEntries: [(key: AttributeKey, value: AttributeValue)] {
        entries.map { (key: $0.key, value: $0.value) }
    }

    public var title: String? {
        get { string(.title) }
        set { self[.title] = newValue.map(AttributeValue.string) }
    }

    public var displayName: String? {
        get { string(.displayName) }
        set { self[.displayName] = newValue.map(AttributeValue.string) }
    }

    public var contentDescription: String? {
        get { string(.contentDescription) }
        set { self[.contentDescription] = newValue.map(AttributeValue.string) }
    }

    public var keywords: [String]? {
        get { if case .strings(let list)? = self[.keywords] { return list } else { return nil } }
        set { self[.keywords] = newValue.map(AttributeValue.strings) }
    }

    public var contentURL: String? {
        get { string(.contentURL) }
        set { self[.contentURL] = newValue.map(AttributeValue.string) }
    }

    public var rankingHint: Double? {
        get { if case .number(let value)? = self[.rankingHint] { return value } else { return nil } }
        set { self[.rankingHint] = newValue.map(AttributeValue.number) }
    }

    public func string(_ key: AttributeKey) -> String? {
        if case .string(let text)? = self[key] { return text }
        return nil
    }

    /// Applies a change set: a key mapped to a value sets it, a key mapped to nil
    /// clears it, keys not mentioned keep their value (Core Spotlight's isUpdate).
    public func merging(_ changes: AttributeChanges) -> AttributeSet {
        var merged = self
        for (key, value) in changes.entries {
            merged[key] = value
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
