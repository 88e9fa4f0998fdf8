import Crypto
import Foundation
import GRDB
import IndexModel
import SQLiteSupport
import SyncWire

extension DeviceStore {
    /// A SHA-256 digest of every projection (items, activities, client states,
    /// engagement counts, and the privacy projection: public activities, votes
    /// and the outbox after the durable watermark), over their rows in key order,
    /// excluding SQLite rowids. Two stores with the same projections have the
    /// same digest.
    public func projectionDigest() throws(DeviceStoreError) -> String {
        try read { db in try ProjectionDigest.compute(db, after: OutboxStore.durable(db)) }
    }

    /// Replays the journal into fresh projections in a private in-memory database
    /// and returns their digest. The store is not modified, so this works on
    /// read-only stores too. Equal to `projectionDigest()` when the projections
    /// are exactly the fold of the journal.
    public func rebuiltProjectionDigest() throws(DeviceStoreError) -> String {
        try replayedDigest { fold in try replayWholeJournal(into: fold) }
    }

    /// Folds this store's whole journal into `fold` and returns the store's
    /// durable watermark, read in the same transaction.
    private func replayWholeJournal(into fold: JournalFold) throws -> OutboxPosition {
        try onConnection { queue in try queue.snapshotRead { sourceDB in
            try DeviceStore.replayJournal(from: sourceDB, into: fold)
            return try OutboxStore.durable(sourceDB)
        } }
    }

    /// `rebuiltProjectionDigest()` over the rows of `stream`, which another
    /// thread reads, verifies and decodes meanwhile (`restore`): the journal is
    /// read once for both checks. A stream that ends early (the verification
    /// stopped at a bad row) gives the digest of the rows before it.
    func rebuiltProjectionDigest(replaying stream: VerifiedEventStream) throws(DeviceStoreError) -> String {
        defer { stream.abandon() }
        return try replayedDigest { fold in
            while let batch = stream.nextBatch() {
                // Rows are borrowed in place: `for row in batch` copied each
                // one, retaining every string and payload of the event (a
                // tenth of the replay).
                try batch.withUnsafeBufferPointer { rows in
                    for index in rows.indices {
                        try fold.apply(rows[index].event, payload: rows[index].payload, epoch: rows[index].epoch,
                                       seq: rows[index].seq, time: rows[index].time)
                    }
                }
                stream.recycle(consume batch)
            }
            return try read { db in try OutboxStore.durable(db) }
        }
    }

    /// Makes fresh projections in a private in-memory database, lets `replay`
    /// fold the journal into them and return the durable watermark, and
    /// returns their digest.
    private func replayedDigest(_ replay: (JournalFold) throws -> OutboxPosition) throws(DeviceStoreError) -> String {
        try inScratchProjections { scratchDB, fold in
            try ProjectionDigest.compute(scratchDB, after: try replay(fold))
        }
    }

    /// The outbox this store's journal implies (nothing pruned) after
    /// `position` and before `end`: the messages a store dropped once the
    /// cloud's backup held them come back under their original positions,
    /// since the fold numbers them the same way every time.
    func replayedOutbox(after position: OutboxPosition, before end: OutboxPosition) throws(DeviceStoreError)
        -> [(position: OutboxPosition, journalSeq: Int64, message: [UInt8])] {
        try inScratchProjections { scratchDB, fold in
            _ = try replayWholeJournal(into: fold)
            return try Row.fetchAll(scratchDB, sql: """
                SELECT epoch, seq, journal_seq, message FROM outbox
                WHERE (epoch, seq) > (?, ?) AND (epoch, seq) < (?, ?) ORDER BY epoch, seq
                """, arguments: [position.epoch, position.seq, end.epoch, end.seq]).map { row in
                (try StoredValue.outboxPosition(epoch: StoredValue.column(row, 0, "outbox.epoch"),
                                                seq: StoredValue.column(row, 1, "outbox.seq"), "outbox."),
                 try StoredValue.column(row, 2, "outbox.journal_seq"), [UInt8](try StoredValue.column(row, 3, "outbox.message") as Data))
            }
        }
    }

    /// The last outbox seq of each epoch that this store's journal implies:
    /// how far it can send each epoch, from its outbox or, for what the
    /// outbox dropped, made again from the journal (`recoverDroppedMessages`).
    public func impliedOutboxHeads() throws(DeviceStoreError) -> [Epoch: OutboxSeq] {
        try inScratchProjections { scratchDB, fold in
            _ = try replayWholeJournal(into: fold)
            var heads: [Epoch: OutboxSeq] = [:]
            for row in try Row.fetchAll(scratchDB, sql: "SELECT epoch, max(seq) FROM outbox GROUP BY epoch") {
                let head = try StoredValue.outboxPosition(epoch: StoredValue.column(row, 0, "outbox.epoch"),
                                                          seq: StoredValue.column(row, 1, "outbox.seq"), "outbox.")
                heads[head.epoch] = head.seq
            }
            return heads
        }
    }

    /// Runs `work` with fresh, empty projections in a private in-memory
    /// database (`ScratchProjections`).
    private func inScratchProjections<T>(_ work: (Database, JournalFold) throws -> T) throws(DeviceStoreError) -> T {
        do {
            return try ScratchProjections.shared.with(deviceID: deviceID, app: privacyKeys.app,
                                                      voteSecret: privacyKeys.voteSecret) { scratchDB in
                try work(scratchDB, JournalFold(into: scratchDB, keys: privacyKeys))
            }
        } catch let error as DeviceStoreError {
            throw error
        } catch {
            throw DeviceStoreError(.database, "rebuild failed: \(DeviceStore.describe(error))")
        }
    }

    /// Empties the projections and folds the whole journal into them again, in one
    /// transaction. A journal row that does not decode aborts the rebuild and
    /// leaves the projections as they were.
    public func rebuildProjections() throws(DeviceStoreError) {
        try write { db in
            for table in StoreSchema.projectionTables {
                try db.execute(sql: "DELETE FROM \(table)")
            }
            try SearchIndex.reset(db)
            try DeviceStore.replayJournal(from: db, into: JournalFold(into: db, keys: privacyKeys))
            // The cloud holds the messages up to the durable watermark, so they
            // are dropped again; the positions after it come out the same.
            // (With slots of its own: a restore rebuilds a store it then
            // closes, which the write path's kept statements would keep open.)
            try OutboxStore.prune(db, StatementSlots(count: OutboxState.Statement.allCases.count),
                                  through: OutboxStore.durable(db))
        }
    }

    /// Folds every event of the journal in `source` into `fold`'s projections
    /// (on the same connection for an in-place rebuild).
    private static func replayJournal(from source: Database, into fold: JournalFold) throws {
        var failure: (any Error)?
        let scan = try scanJournal(source, from: Seq(1)) { record in
            do {
                try fold.apply(record, try record.event())
                return true
            } catch {
                failure = error
                return false
            }
        }
        if let failure { throw failure }
        if let stop = scan.stop { throw stop }
    }
}

/// The fold of journal events into the projections of one connection: the
/// projector, then the privacy projection's look at what the event changes
/// among its own tables, which the projector never writes, then the messages
/// the change implies.
struct JournalFold {
    let projector: Projector
    let privacy: PrivacyProjection

    /// A one-off fold, as a rebuild or a restore makes.
    init(into target: Database, keys: PrivacyProjection.Keys) {
        self.init(projector: Projector(db: target), privacy: PrivacyProjection(db: target, keys: keys))
    }

    /// `projector` and `privacy` must write the same connection.
    init(projector: Projector, privacy: PrivacyProjection) {
        self.projector = projector
        self.privacy = privacy
    }

    /// Folds `event`, decoded from `record`.
    func apply(_ record: JournalRecord, _ event: JournalEvent) throws {
        try apply(event, payload: record.payload, epoch: record.epoch, seq: record.seq, time: record.time)
    }

    /// Folds `event`, decoded from `payload`, journaled at `epoch`/`seq` and `time`.
    func apply(_ event: JournalEvent, payload: [UInt8], epoch: Epoch, seq: Seq, time: Timestamp) throws {
        let recordedNewKey = try projector.apply(event, payload: payload, seq: seq, time: time)
        let prior = try privacy.before(event, activityKeyIsNew: recordedNewKey)
        try privacy.after(event, prior: prior, epoch: epoch, seq: seq, time: time)
    }
}

enum ProjectionDigest {
    static let queries = [
        """
        SELECT index_name, item_id, domain, expires, title, display_name, content_description, keywords,
        content_url, ranking_hint, attributes, changed_seq FROM items ORDER BY index_name, item_id
        """,
        """
        SELECT activity_key, activity_type, title, keywords, content_description, webpage_url, related,
        weak_related, domain, persistent_id, expires, eligible_search, eligible_handoff, eligible_public,
        related_deleted, view_count, first_seen, last_seen, payload, changed_seq FROM activities ORDER BY activity_key
        """,
        "SELECT index_name, state, changed_seq FROM client_states ORDER BY index_name",
        "SELECT ref, shown, engaged FROM engagement ORDER BY ref",
        "SELECT activity_key, hash, refs, related, live FROM public_activities ORDER BY activity_key",
        "SELECT hash, live FROM public_hashes ORDER BY hash",
        "SELECT ref, hash, activities FROM public_refs ORDER BY ref, hash",
        "SELECT hash FROM public_votes ORDER BY hash",
        "SELECT seq, index_name, identifiers, acknowledged_seq FROM reindex_requests ORDER BY seq",
        // The head, and the messages the cloud has not durably taken: the rest are pruned.
        "SELECT epoch, seq FROM outbox ORDER BY epoch DESC, seq DESC LIMIT 1",
        "SELECT epoch, seq, journal_seq, message FROM outbox WHERE (epoch, seq) > (?, ?) ORDER BY epoch, seq",
    ]

    /// The tables version 4 added, and their queries: a store of version 3
    /// opened read-only has none of them, which digests as both empty.
    static let versionFourQueries = [
        ("popularity_mode", "SELECT id, mode FROM popularity_mode ORDER BY id"),
        ("privacy_budget", "SELECT day, spent FROM privacy_budget ORDER BY day"),
    ]

    /// The digest, with the outbox counted from after `durable`.
    static func compute(_ db: Database, after durable: OutboxPosition) throws -> String {
        let position: StatementArguments = [durable.epoch, durable.seq]
        var all = queries.map { ($0, $0.contains("?") ? position : StatementArguments()) }
        for (table, query) in versionFourQueries {
            all.append((try SchemaLookup.hasTable(db, table) ? query : "SELECT NULL WHERE 0", []))
        }
        let digest = try RowDigest.compute(db, all)
        return ChainHash(unchecked: digest).hex
    }
}
