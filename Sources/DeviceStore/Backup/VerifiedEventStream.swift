import IndexModel
import Threads

/// What the replay needs of a journal row that the chain verification has
/// checked and decoded: not its hashes.
struct VerifiedEventRow: Sendable {
    let epoch: Epoch
    let seq: Seq
    let time: Timestamp
    let payload: [UInt8]
    let event: JournalEvent
}

/// The verified journal rows a restore's chain verification hands to its
/// replay on another thread (`RowStream`).
typealias VerifiedEventStream = RowStream<VerifiedEventRow>

extension RowStream where Row == VerifiedEventRow {
    func append(_ record: JournalRecord, _ event: consuming JournalEvent) {
        append(VerifiedEventRow(epoch: record.epoch, seq: record.seq, time: record.time, payload: record.payload, event: event))
    }
}
