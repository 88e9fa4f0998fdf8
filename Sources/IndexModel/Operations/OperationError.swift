/// An operation that cannot be applied as written: the path of the offending
/// field (`items[2].title`, `ops[0].ids[1]`, or `column 17` for a JSON syntax
/// error) and what is wrong with it. Messages name fields and limits, never the
/// user's text, so they are safe to log.
public struct OperationError: Error, Hashable, Sendable, CustomStringConvertible {
    public let path: String
    public let message: String

    public init(path: String, _ message: String) {
        self.path = path
        self.message = message
    }

    public var description: String { path.isEmpty ? message : "\(path): \(message)" }

    /// This error as if it had been found at `prefix` (for errors of nested values).
    public func nested(under prefix: String) -> OperationError {
        guard !prefix.isEmpty else { return self }
        if path.isEmpty { return OperationError(path: prefix, message) }
        let separator = path.hasPrefix("[") ? "" : "."
        return OperationError(path: prefix + separator + path, message)
    }
}
