/// A JSON document as a value, with object members kept in order.
///
/// Sightline reads operations files and writes its `--json` output with this
/// type rather than Foundation's coders: the reader reports the exact column of a
/// syntax error and keeps `null` apart from an absent member (an update's "clear"
/// versus "keep"), and the writer's output is byte-for-byte deterministic.
public enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// A short name of the value's type for error messages: "a string", "null", …
    public var typeDescription: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .integer, .double: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }
}

/// The members of a JSON object in document order. Keys are unique: the reader
/// refuses a document that repeats one.
///
/// Finding a member is constant time whatever the object's size: past a few
/// members the object keeps each key's position, so reading a document of
/// n members, or looking each of them up, is linear in n (an operations line
/// or a manifest is outside bytes, and may hold hundreds of thousands).
public struct JSONObject: Hashable, Sendable, ExpressibleByDictionaryLiteral {
    /// One member of an object: its key and its value.
    public struct Member: Hashable, Sendable {
        public var key: String
        public var value: JSONValue
    }

    public private(set) var members: [Member]
    /// Each key's index in `members`, kept once the object has more than
    /// `indexedFrom` members; smaller objects are searched in order.
    private var positions: [String: Int]?
    private static let indexedFrom = 8

    public init(_ members: [Member] = []) {
        self.members = []
        self.members.reserveCapacity(members.count)
        for member in members { self[member.key] = member.value }
    }

    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(elements.map { Member(key: $0.0, value: $0.1) })
    }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.members == rhs.members
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(members)
    }

    private func position(of key: String) -> Int? {
        if let positions { return positions[key] }
        return members.firstIndex { $0.key == key }
    }

    public subscript(key: String) -> JSONValue? {
        get { position(of: key).map { members[$0].value } }
        set {
            if let index = position(of: key) {
                if let newValue {
                    members[index].value = newValue
                } else {
                    members.remove(at: index)
                    if positions != nil {
                        positions?[key] = nil
                        for later in index..<members.count { positions?[members[later].key] = later }
                    }
                }
            } else if let newValue {
                append(Member(key: key, value: newValue))
            }
        }
    }

    /// Adds a member whose key the object does not hold (the reader has checked).
    mutating func append(_ member: Member) {
        members.append(member)
        if positions != nil {
            positions?[member.key] = members.count - 1
        } else if members.count > JSONObject.indexedFrom {
            var index: [String: Int] = [:]
            index.reserveCapacity(members.count * 2)
            for (position, member) in members.enumerated() { index[member.key] = position }
            positions = index
        }
    }

    public var keys: [String] { members.map(\.key) }
}
