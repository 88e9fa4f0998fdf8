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
public struct JSONObject: Hashable, Sendable, ExpressibleByDictionaryLiteral {
    /// One member of an object: its key and its value.
    public struct Member: Hashable, Sendable {
        public var key: String
        public var value: JSONValue
    }

    public private(set) var members: [Member]

    public init(_ members: [Member] = []) {
        self.members = members
    }

    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        members = elements.map { Member(key: $0.0, value: $0.1) }
    }

    public subscript(key: String) -> JSONValue? {
        get { members.first(where: { $0.key == key })?.value }
        set {
            if let index = members.firstIndex(where: { $0.key == key }) {
                if let newValue { members[index].value = newValue } else { members.remove(at: index) }
            } else if let newValue {
                members.append(Member(key: key, value: newValue))
            }
        }
    }

    public var keys: [String] { members.map(\.key) }
}
