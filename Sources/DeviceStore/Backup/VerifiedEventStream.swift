import IndexModel
import Snapshot
import Synchronization

/// Hands the journal rows that the chain verification has checked and decoded
/// to the replay on another thread, in seq order and in batches, so that a
/// restore reads and decodes each row once instead of once per check.
///
/// The verifying thread appends rows and calls `finish()` when it stops, for
/// any reason; the replaying thread takes batches until `nextBatch()` returns
/// nil, gives each back with `recycle` once folded, and calls `abandon()` when
/// it stops, so that the verifier never waits for a replay that has given up.
///
/// Folded batches go back to be freed on the verifying thread, which
/// allocated them: freed on the replaying thread, glibc's allocator kept that
/// memory there, and the verifier faulted in fresh pages for every batch
/// (both threads ran at half speed).
final class VerifiedEventStream: Sendable {
    /// What the replay needs of a verified row: not its hashes.
    struct Row: Sendable {
        let epoch: Epoch
        let seq: Seq
        let time: Timestamp
        let payload: [UInt8]
        let event: JournalEvent
    }

    private let batchSize: Int
    private let handoff: Handoff<[Row]>
    /// The batch being filled, touched by the verifying thread only.
    private nonisolated(unsafe) var filling: [Row] = []
    /// Batches the replay has folded, to be freed by the verifying thread.
    private let folded = Mutex<[[Row]]>([])

    init(batchSize: Int = 256, batchesAhead: Int = 8) {
        self.batchSize = batchSize
        handoff = Handoff(capacity: batchesAhead)
        filling.reserveCapacity(batchSize)
    }

    // MARK: - Verifying thread

    func append(_ record: JournalRecord, _ event: JournalEvent) {
        filling.append(Row(epoch: record.epoch, seq: record.seq, time: record.time, payload: record.payload, event: event))
        if filling.count == batchSize { handOver() }
    }

    /// No more rows: the last batch goes, and the replay sees the end.
    func finish() {
        handOver()
        handoff.finish()
    }

    private func handOver() {
        guard !filling.isEmpty else { return }
        let batch = filling
        filling = []
        filling.reserveCapacity(batchSize)
        handoff.put(batch)
        // Freed here, at the end of this scope, on this thread.
        let spent = folded.withLock { batches in
            defer { batches = [] }
            return batches
        }
        _ = spent
    }

    // MARK: - Replaying thread

    /// The next batch in seq order, nil after the last.
    func nextBatch() -> [Row]? {
        handoff.next()
    }

    /// Gives a folded batch back, to be freed where it was made.
    func recycle(_ batch: consuming [Row]) {
        let batch = batch
        folded.withLock { $0.append(batch) }
    }

    /// The replay takes no more rows.
    func abandon() {
        handoff.abandon()
    }
}
