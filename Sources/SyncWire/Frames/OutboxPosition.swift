/// A position in a device's outbox: outbox seqs are dense from 1 within each
/// epoch, and a restore starts the next epoch, so (epoch, seq) never names two
/// different messages. Seq 0 is "before the first message of the epoch".
public struct OutboxPosition: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var epoch: UInt64
    public var seq: UInt64

    public init(epoch: UInt64, seq: UInt64) {
        self.epoch = epoch
        self.seq = seq
    }

    /// Before anything: nothing is acknowledged yet.
    public static let start = OutboxPosition(epoch: 1, seq: 0)
    /// Before every position of every epoch (nothing backed up yet).
    public static let nothing = OutboxPosition(epoch: 0, seq: 0)

    public static func < (lhs: OutboxPosition, rhs: OutboxPosition) -> Bool {
        (lhs.epoch, lhs.seq) < (rhs.epoch, rhs.seq)
    }

    /// Whether this is the position right after `previous`: the next seq in
    /// the same epoch, or the first seq of a later epoch.
    public func follows(_ previous: OutboxPosition) -> Bool {
        if epoch == previous.epoch { return seq == previous.seq + 1 }
        return epoch > previous.epoch && seq == 1
    }

    public var description: String { "\(epoch):\(seq)" }
}

/// One message of a device's outbox with its position, as stored (the message
/// is kept encoded, so a frame is the concatenation of its records' bytes).
public struct OutboxRecord: Hashable, Sendable {
    public var position: OutboxPosition
    public var encoded: [UInt8]

    public init(position: OutboxPosition, encoded: [UInt8]) {
        self.position = position
        self.encoded = encoded
    }

    public init(position: OutboxPosition, message: OutboxMessage) {
        self.init(position: position, encoded: message.encoded)
    }
}
