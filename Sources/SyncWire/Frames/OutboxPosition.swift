import IndexModel

/// A position in a device's outbox: outbox seqs are dense from 1 within each
/// epoch, and a restore starts the next epoch, so (epoch, seq) never names two
/// different messages. Seq 0 is "before the first message of the epoch".
public struct OutboxPosition: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var epoch: Epoch
    public var seq: OutboxSeq

    public init(epoch: Epoch, seq: OutboxSeq) {
        self.epoch = epoch
        self.seq = seq
    }

    /// Before anything: nothing is acknowledged yet.
    public static let start = OutboxPosition(epoch: .first, seq: .beforeFirst)
    /// Before every position of every epoch (nothing backed up yet).
    public static let nothing = OutboxPosition(epoch: .beforeFirst, seq: .beforeFirst)

    public static func < (lhs: OutboxPosition, rhs: OutboxPosition) -> Bool {
        (lhs.epoch, lhs.seq) < (rhs.epoch, rhs.seq)
    }

    /// Whether this is the position right after `previous`: the next seq in
    /// the same epoch, or the first seq of a later epoch.
    public func follows(_ previous: OutboxPosition) -> Bool {
        if epoch == previous.epoch { return seq == previous.seq.next }
        return epoch > previous.epoch && seq == .first
    }

    /// The next position in this epoch.
    public var nextInEpoch: OutboxPosition {
        OutboxPosition(epoch: epoch, seq: seq.next)
    }

    /// The position before this one in its epoch; nil at seq 0, before the
    /// epoch's first message.
    public var previousInEpoch: OutboxPosition? {
        seq.previous.map { OutboxPosition(epoch: epoch, seq: $0) }
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
