/// A payload that cannot be decoded: what was wrong, and at which byte offset.
public struct CodecError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of fault, for callers that act on it; `message` says the details.
    public enum Code: String, Hashable, Sendable {
        case truncated
        case overlongVarint
        case invalidUTF8
        case unknownVersion
        case unknownKind
        case unknownTag
        case typeMismatch
        case nonCanonical
        case trailingBytes
        case limitExceeded
    }

    public let code: Code
    public let offset: Int
    public let message: String

    public init(_ code: Code, at offset: Int, _ message: String) {
        self.code = code
        self.offset = offset
        self.message = message
    }

    public var description: String { "\(message) (at byte \(offset))" }
}
