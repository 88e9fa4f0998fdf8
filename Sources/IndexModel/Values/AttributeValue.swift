/// A typed attribute value, as Core Spotlight's attribute set holds them.
public enum AttributeValue: Hashable, Sendable {
    case string(String)
    case strings([String])
    /// A finite number. NaN and infinities are rejected where values enter the system.
    case number(Double)
    case date(Timestamp)
    case bool(Bool)

    public var type: AttributeType {
        switch self {
        case .string: .string
        case .strings: .strings
        case .number: .number
        case .date: .date
        case .bool: .bool
        }
    }
}

/// The type of an attribute value. The raw values are the type tags of the binary
/// codec (`Journal/FORMAT.md`); they never change once released.
public enum AttributeType: UInt8, Hashable, Sendable, CustomStringConvertible {
    case string = 1
    case strings = 2
    case number = 3
    case date = 4
    case bool = 5

    public var description: String {
        switch self {
        case .string: "a string"
        case .strings: "an array of strings"
        case .number: "a number"
        case .date: "an ISO 8601 date"
        case .bool: "a boolean"
        }
    }
}
