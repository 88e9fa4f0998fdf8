import Synchronization

/// Hands rows that one thread has read, checked and decoded to another that
/// replays them, in order and in batches, so that a restore reads and decodes
/// each row once instead of once per check (a device's journal events, a
/// cloud log's frames).
///
/// The producing thread appends rows and calls `finish()` when it stops, for
/// any reason; the replaying thread takes batches until `nextBatch()` returns
/// nil, gives each back with `recycle` once folded, and calls `abandon()` when
/// it stops, so that the producer never waits for a replay that has given up.
///
/// Folded batches go back to be freed on the producing thread, which
/// allocated them: freed on the replaying thread, glibc's allocator keeps that
/// memory there, and the producer faults in fresh pages for every batch,
/// which slows both threads down.
public final class RowStream<Row: Sendable>: Sendable {
    private let batchSize: Int
    private let handoff: Handoff<[Row]>
    /// The batch being filled, touched by the producing thread only.
    private nonisolated(unsafe) var filling: [Row] = []
    /// Batches the replay has folded, to be freed by the producing thread.
    private let folded = Mutex<[[Row]]>([])

    /// A stream that hands rows over `batchSize` at a time, with at most
    /// `batchesAhead` batches waiting for the replay.
    public init(batchSize: Int = 256, batchesAhead: Int = 8) {
        self.batchSize = batchSize
        handoff = Handoff(capacity: batchesAhead)
        filling.reserveCapacity(batchSize)
    }

    // MARK: - Producing thread

    /// Adds `row` to the batch being filled, and hands the batch over when it
    /// is full (waiting while `batchesAhead` batches wait already). The row is
    /// taken, not copied, so its references are not retained again.
    public func append(_ row: consuming Row) {
        filling.append(row)
        if filling.count == batchSize { handOver() }
    }

    /// No more rows: the last batch goes, and the replay sees the end.
    public func finish() {
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

    /// The next batch in order, nil after the last.
    public func nextBatch() -> [Row]? {
        handoff.next()
    }

    /// Gives a folded batch back, to be freed where it was made.
    public func recycle(_ batch: consuming [Row]) {
        let batch = batch
        folded.withLock { $0.append(batch) }
    }

    /// The replay takes no more rows.
    public func abandon() {
        handoff.abandon()
    }
}
