/// Carries one upload frame to the cloud and brings its reply back. A thrown
/// error means the outcome is unknown: the cloud may or may not have applied the
/// frame, and the uploader will send the same frame again.
public protocol Transport: Sendable {
    func exchange(_ frame: [UInt8]) async throws(TransportError) -> [UInt8]
}

/// A frame's exchange that ended without a reply (a timeout, a refused or
/// dropped connection, an unexpected status): the outcome is unknown, so the
/// uploader sends the same frame again after a backoff.
public struct TransportError: Error, Hashable, Sendable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
