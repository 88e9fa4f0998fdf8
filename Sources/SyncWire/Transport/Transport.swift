import Synchronization

/// Carries one upload frame to the cloud and brings its reply back. A thrown
/// error means the outcome is unknown: the cloud may or may not have applied the
/// frame, and the uploader will send the same frame again.
public protocol Transport: Sendable {
    func exchange(_ frame: [UInt8]) async throws(TransportError) -> [UInt8]
}

public struct TransportError: Error, Hashable, Sendable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}

/// A transport that hands each frame to a receiver in the same process (a cloud
/// index's ingest) and keeps a copy of every byte that crossed it, both ways, so
/// that tests can search the traffic (the privacy canary).
public final class InMemoryTransport: Transport {
    private let receiver: @Sendable ([UInt8]) -> [UInt8]
    private let log = Mutex<[[UInt8]]>([])

    public init(receiver: @escaping @Sendable ([UInt8]) -> [UInt8]) {
        self.receiver = receiver
    }

    public func exchange(_ frame: [UInt8]) async throws(TransportError) -> [UInt8] {
        log.withLock { $0.append(frame) }
        let reply = receiver(frame)
        log.withLock { $0.append(reply) }
        return reply
    }

    /// Every frame and reply that crossed, in order.
    public var traffic: [[UInt8]] { log.withLock { $0 } }
}
