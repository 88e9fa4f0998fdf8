import Foundation
import GRDB
import IndexModel
import SQLiteSupport
import SyncWire

/// What `purge(dryRun:)` did, or would do.
public struct PurgeReport: Hashable, Sendable {
    /// The rows whose payloads were purged, in seq order.
    public var purgedSeqs: [Seq] = []
    /// The deleted items whose content went, sorted.
    public var items: [ItemKey] = []
    /// How many bytes of payload went: the sizes of the payloads the
    /// residues took the place of. (An activity's residues, with their
    /// pseudonyms, are not always shorter than what they replaced.)
    public var bytes = 0
    /// The journal seq the store's latest backup snapshot covers (`Seq.none`: none yet).
    public var backedUpThrough: Seq = .none
    /// Deleted items whose content stays until a backup covers their deletion.
    public var waitingForBackup: [ItemKey] = []
    /// Deleted items a backup covers whose deletion is more recent than an
    /// automatic purge's delay (`purgeIfDue`).
    public var waitingForDelay: [ItemKey] = []
    /// The deleted activities whose content went, by key, sorted.
    public var activities: [String] = []
    /// Engagement events (`shown`, `engage`) whose reference went with the activities.
    public var references = 0
    /// Deletions of activities whose content stays for now, and why, in the
    /// journal's order (an activity deleted twice may wait twice).
    public var activitiesWaiting: [ActivityWait] = []
    /// The earliest deletion among `waitingForDelay` and the activities
    /// waiting for the delay, by the journal's time.
    public var earliestWaitingDeletion: Timestamp?
    /// Whether the WAL was emptied after the purge, so no page of it holds
    /// what went. False when another connection kept a read open on it.
    public var walEmptied = true
}

/// A deleted activity whose content a purge left, and why.
public struct ActivityWait: Hashable, Sendable {
    public enum Reason: String, Hashable, Sendable {
        /// No backup covers its removal yet.
        case backup
        /// Its removal is more recent than an automatic purge's delay.
        case delay
        /// It was public, and the cloud's backup does not yet hold every
        /// message the store sent before its removal (the outbox keeps some).
        case cloud
        /// It was public, and its web page URL is still named by an activity
        /// the purge keeps or by an item: engagement with that URL stays, and
        /// so does the activity, whose votes that engagement made.
        case sharedURL
    }

    public var key: String
    public var reason: Reason

    public init(key: String, reason: Reason) {
        self.key = key
        self.reason = reason
    }
}

extension DeviceStore {
    /// Takes the content out of every journal row that indexed or updated
    /// an item deleted (or expired) since, once a backup snapshot of this
    /// store covers the deletion (`Journal/FORMAT.md`, "Purged rows"). Each
    /// such row keeps its seq, epoch, call, kind, time and hashes, and its
    /// payload becomes the event's residue (`JournalEvent.purgedResidue`: the
    /// index and the identifier), with the SHA-256 of the payload it had in
    /// `purged_payload_hash`, so the chain still verifies. Items never reach
    /// the cloud, so a backup is the only copy the deletion must be in.
    ///
    /// A deleted activity goes the same way (`PurgePlan`): its recordings,
    /// its removal and the engagement with its URL up to the removal keep
    /// pseudonyms, the public hash and its related identifiers. One that was
    /// public waits, too, until the cloud's backup holds every message sent
    /// before its removal (the outbox's durable watermark has passed them).
    ///
    /// Before the rows change, the search index (if the store has one) is
    /// brought up to the journal, which takes the deleted items' words out of it. `secure_delete` is on,
    /// so SQLite overwrites what it frees with zeros, and afterwards the WAL
    /// is checkpointed and truncated: no page of the store file or its WAL
    /// keeps a purged payload. `dryRun` reports what would go and changes
    /// nothing.
    ///
    /// `deletedBy`, when given, purges only the items and activities deleted
    /// at or before that instant (by the journal's time of the deletion).
    public func purge(dryRun: Bool = false, deletedBy: Timestamp? = nil) throws(DeviceStoreError) -> PurgeReport {
        if dryRun {
            // A store of format 4, read-only, has no purged rows (nor a column for them).
            let marked = journalChain == .overPayloadHashes ? "purged_payload_hash IS NOT NULL" : "0"
            return try read { db in
                try DeviceStore.purge(db, purgedColumn: marked, deletedBy: deletedBy, keys: privacyKeys, apply: false)
            }
        }
        guard !isReadOnly else {
            throw DeviceStoreError(.readOnly, "the store was opened read-only")
        }
        var report = try write { db in
            try DeviceStore.purge(db, purgedColumn: "purged_payload_hash IS NOT NULL", deletedBy: deletedBy, keys: privacyKeys,
                                  apply: true)
        }
        if !isInMemory && !report.purgedSeqs.isEmpty {
            report.walEmptied = try emptyWAL()
        }
        return report
    }

    /// The store's automatic purge delay in milliseconds (`store_meta.purge_after_ms`), nil when it has none.
    public func automaticPurgeDelay() throws(DeviceStoreError) -> Int64? {
        try read { db in
            guard let value = try Int64.fetchOne(db, sql: "SELECT value FROM store_meta WHERE key = 'purge_after_ms'") else { return nil }
            return Int64(try StoredValue.position(value, "store_meta.purge_after_ms"))
        }
    }

    /// Sets (or with nil, clears) the store's automatic purge: `purgeIfDue`
    /// then purges what `purge` would of items deleted at least
    /// `milliseconds` ago. The delay leaves time to undo a deletion from the
    /// journal; purged content is gone for good.
    public func setAutomaticPurge(afterMilliseconds milliseconds: Int64?) throws(DeviceStoreError) {
        if let milliseconds, milliseconds < 0 || UInt64(milliseconds) > WireLimits.maximumPosition {
            throw DeviceStoreError(.invalidOption, "an automatic purge delay is 0 to \(WireLimits.maximumPosition) ms, not \(milliseconds)")
        }
        try write { db in
            if let milliseconds {
                try db.execute(sql: """
                    INSERT INTO store_meta (key, value) VALUES ('purge_after_ms', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value
                    """, arguments: [milliseconds])
            } else {
                try db.execute(sql: "DELETE FROM store_meta WHERE key = 'purge_after_ms'")
            }
            // What the last automatic purge knew was for the old delay.
            try db.execute(sql: "DELETE FROM store_meta WHERE key IN ('purge_scanned_through', 'purge_next_due', 'purge_scanned_floor')")
        }
    }

    /// The automatic purge: when the store has a delay, purges the items
    /// deleted at least that long ago by the store's clock whose deletion a
    /// backup covers. Nil when the store has no delay. The CLI runs it after
    /// `device snapshot`, `device apply` and `sync`; an app calls it as often
    /// as it likes.
    ///
    /// Nothing becomes due but by a later backup, by the clock passing a
    /// waiting deletion's time plus the delay, or by the outbox dropping
    /// messages the cloud's backup now holds, so the store remembers the
    /// backup its last automatic purge read (`store_meta.purge_scanned_through`),
    /// when the next waiting deletion falls due (`purge_next_due`), and the
    /// earliest event the outbox still held messages of (`purge_scanned_floor`).
    /// Until one of them moves, the journal is not read again and the report
    /// is empty: reading every item event after each `device apply` would
    /// cost a large store seconds a call.
    public func purgeIfDue() throws(DeviceStoreError) -> PurgeReport? {
        guard !isReadOnly, let delay = try automaticPurgeDelay() else { return nil }
        let now = clock.now()
        let memo = try read { db in
            (backedUp: try DeviceStore.backedUpThrough(db),
             scanned: try DeviceStore.storedPosition(db, "purge_scanned_through"),
             nextDue: try Int64.fetchOne(db, sql: "SELECT value FROM store_meta WHERE key = 'purge_next_due'"),
             floor: try DeviceStore.outboxFloor(db),
             scannedFloor: try Int64.fetchOne(db, sql: "SELECT value FROM store_meta WHERE key = 'purge_scanned_floor'"))
        }
        if let scanned = memo.scanned, scanned == memo.backedUp, memo.scannedFloor == memo.floor ?? -1,
           memo.nextDue.map({ now.millisecondsSince1970 < $0 }) ?? true {
            var report = PurgeReport()
            report.backedUpThrough = memo.backedUp
            return report
        }
        let (cutoff, overflow) = now.millisecondsSince1970.subtractingReportingOverflow(delay)
        let report = try purge(deletedBy: Timestamp(millisecondsSince1970: overflow ? .min : cutoff))
        let nextDue = report.earliestWaitingDeletion.map { $0.millisecondsSince1970.addingReportingOverflow(delay) }
        try write { db in
            try db.execute(sql: """
                INSERT INTO store_meta (key, value) VALUES ('purge_scanned_through', ?)
                ON CONFLICT (key) DO UPDATE SET value = excluded.value
                """, arguments: [Int64(report.backedUpThrough.rawValue)])
            try db.execute(sql: """
                INSERT INTO store_meta (key, value) VALUES ('purge_scanned_floor', ?)
                ON CONFLICT (key) DO UPDATE SET value = excluded.value
                """, arguments: [memo.floor ?? -1])
            if let nextDue {
                try db.execute(sql: """
                    INSERT INTO store_meta (key, value) VALUES ('purge_next_due', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value
                    """, arguments: [nextDue.overflow ? Int64.max : nextDue.partialValue])
            } else {
                try db.execute(sql: "DELETE FROM store_meta WHERE key = 'purge_next_due'")
            }
        }
        return report
    }

    /// Checkpoints the WAL into the store file and truncates it to nothing.
    /// False when a reader kept it from finishing.
    private func emptyWAL() throws(DeviceStoreError) -> Bool {
        do {
            return try onConnection { queue in try queue.writeWithoutTransaction { db in
                let row = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
                return row.map { ($0[0] as Int64?) == 0 } ?? false
            } }
        } catch {
            throw DeviceStoreError(.database, "the purge was committed, but the WAL could not be emptied: \(DeviceStore.describe(error))")
        }
    }

    /// The SHA-256 of every payload this store purged (`purged_payload_hash`):
    /// what a restore of an older backup must not bring back
    /// (`restore(snapshot:to:force:toSeq:toTime:key:purged:options:)`).
    public func purgedPayloadHashes() throws(DeviceStoreError) -> Set<ChainHash> {
        guard journalChain == .overPayloadHashes else { return [] }
        return try read { db in
            var hashes = Set<ChainHash>()
            let rows = try Row.fetchCursor(db, sql: "SELECT seq, purged_payload_hash FROM event_journal WHERE purged_payload_hash IS NOT NULL")
            while let row = try rows.next() {
                let seq = Seq(try StoredValue.position(StoredValue.column(row, 0, "event_journal.seq"), "event_journal.seq"))
                guard let hash = ChainHash([UInt8](try StoredValue.column(row, 1, "purged_payload_hash of seq \(seq)", as: Data.self))) else {
                    throw DeviceStoreError(.corruptJournal, "seq \(seq): purged_payload_hash is not 32 bytes", seq: seq)
                }
                hashes.insert(hash)
            }
            return hashes
        }
    }

    /// The live items of the store in `db` whose current content a purge
    /// took away, back with a restore: content from a row whose payload's
    /// SHA-256 is in `purged` (a backup older than the purge), and, when
    /// `cut` (the restore cut the journal back), from a row purged here
    /// whose deletion the cut removed. (An item indexed again after its purge
    /// has its content from a later row, and stays. Without a cut, every
    /// purged row is followed by its item's deletion, as verification checks.)
    static func itemsBack(_ db: Database, purged: Set<ChainHash>, cut: Bool) throws -> [ItemKey] {
        let back = try rowsBack(db, kinds: [.itemIndexed, .itemUpdated], purged: purged, cut: cut)
        guard !back.isEmpty else { return [] }
        var keys: [ItemKey] = []
        let items = try Row.fetchCursor(db, sql: "SELECT index_name, item_id, changed_seq FROM items")
        while let item = try items.next() {
            guard back.contains(try StoredValue.column(item, 2, "items.changed_seq", as: Int64.self)) else { continue }
            keys.append(ItemKey(index: try StoredValue.column(item, 0, "items.index_name"),
                                identifier: try StoredValue.column(item, 1, "items.item_id")))
        }
        return keys.sorted()
    }

    /// The live activities of the store in `db` whose current content a
    /// purge took away, back with a restore, by key, as `itemsBack` finds
    /// items. An activity a cut left as its bare residue is live under its
    /// key's pseudonym, and goes under it.
    static func activitiesBack(_ db: Database, purged: Set<ChainHash>, cut: Bool) throws -> [String] {
        // A purged recording keeps its row's kind (`activityRecorded`).
        let back = try rowsBack(db, kinds: [.activityRecorded], purged: purged, cut: cut)
        guard !back.isEmpty else { return [] }
        var keys: [String] = []
        let activities = try Row.fetchCursor(db, sql: "SELECT activity_key, changed_seq FROM activities")
        while let activity = try activities.next() {
            guard back.contains(try StoredValue.column(activity, 1, "activities.changed_seq", as: Int64.self)) else { continue }
            keys.append(try StoredValue.column(activity, 0, "activities.activity_key"))
        }
        return keys.sorted()
    }

    /// The seqs of the rows of `kinds` whose content a projection must not
    /// keep after a restore: those whose payload's SHA-256 is in `purged`,
    /// and, when `cut`, those purged here.
    private static func rowsBack(_ db: Database, kinds: [EventKind], purged: Set<ChainHash>, cut: Bool) throws -> Set<Int64> {
        guard cut || !purged.isEmpty else { return [] }
        var back = Set<Int64>()
        let rows = try Row.fetchCursor(db, sql: """
            SELECT seq, payload, purged_payload_hash IS NOT NULL FROM event_journal
            WHERE kind IN (\(kinds.map { String($0.rawValue) }.joined(separator: ", ")))
            """)
        while let row = try rows.next() {
            let seq = try StoredValue.column(row, 0, "event_journal.seq", as: Int64.self)
            if try StoredValue.column(row, 2, "whether journal seq \(seq) is purged", as: Bool.self) {
                if cut { back.insert(seq) }
            } else if !purged.isEmpty {
                let payload = try StoredValue.column(row, 1, "the payload of journal seq \(seq)", as: Data.self)
                if purged.contains(ChainHash.ofPayload([UInt8](payload))) { back.insert(seq) }
            }
        }
        return back
    }

    /// The earliest journal seq some message of which the cloud's backup
    /// may not hold yet (one after the outbox's durable watermark), nil when
    /// there is none.
    private static func outboxFloor(_ db: Database) throws -> Int64? {
        let durable = try OutboxStore.durable(db)
        return try Int64.fetchOne(db.cachedStatement(sql: "SELECT min(journal_seq) FROM outbox WHERE (epoch, seq) > (?, ?)"),
                                  arguments: [durable.epoch, durable.seq])
    }

    /// The seq the store's latest backup snapshot covers.
    static func backedUpThrough(_ db: Database) throws -> Seq {
        try storedPosition(db, "backed_up_through") ?? .none
    }

    /// The journal seq `store_meta` keeps under `key`, nil when it has none.
    private static func storedPosition(_ db: Database, _ key: String) throws -> Seq? {
        guard let value = try Int64.fetchOne(db.cachedStatement(sql: "SELECT value FROM store_meta WHERE key = ?"), arguments: [key]) else {
            return nil
        }
        return Seq(try StoredValue.position(value, "store_meta.\(key)"))
    }

    /// Records that a backup snapshot covers the journal through `seq`.
    static func recordBackup(_ db: Database, through seq: Seq) throws {
        try db.execute(sql: """
            INSERT INTO store_meta (key, value) VALUES ('backed_up_through', ?)
            ON CONFLICT (key) DO UPDATE SET value = max(value, excluded.value)
            """, arguments: [Int64(seq.rawValue)])
    }

    /// `purgedColumn`: SQL saying whether a row is purged already. With
    /// `apply`, when rows are to change: first the search index, if the store
    /// has one, is brought up to the journal (`refreshSearchIndex`), which
    /// takes the deleted items' words out of it, and `secure_delete` is
    /// turned on. (A store never searched has no index to hold the words;
    /// one is not built for this.)
    private static func purge(_ db: Database, purgedColumn: String, deletedBy: Timestamp?, keys: PrivacyProjection.Keys,
                              apply: Bool) throws -> PurgeReport {
        var report = PurgeReport()
        report.backedUpThrough = try backedUpThrough(db)
        // The cloud's backup holds every message the fold made of events before this seq.
        let cloudHolds = try outboxFloor(db).map { Seq(UInt64(max($0, 0))) }
        var plan = PurgePlan(backedUpThrough: report.backedUpThrough, deletedBy: deletedBy, cloudHoldsBefore: cloudHolds,
                             app: keys.app)
        // Stepped through the C API, as `JournalRows` reads the journal: a
        // purge follows every backup and reads every row of these kinds.
        let kinds: [EventKind] = [.itemIndexed, .itemUpdated, .itemDeleted, .itemExpired, .activityRecorded, .activityDeleted,
                                  .activityExpired, .resultShown, .resultEngaged, .activityPurged]
        let rows = try DirectStatement(db, """
            SELECT seq, payload, \(purgedColumn), time FROM event_journal
            WHERE kind IN (\(kinds.map { String($0.rawValue) }.joined(separator: ", "))) ORDER BY seq
            """)
        defer { rows.reset() }
        while try rows.step() {
            let seq = Seq(try StoredValue.position(StoredValue.integer(rows, 0, "event_journal.seq"), "event_journal.seq"))
            guard !rows.isNull(1) else { throw DeviceStoreError(.corruptStore, "the payload of journal seq \(seq) is missing") }
            let isPurged = try StoredValue.integer(rows, 2, "whether journal seq \(seq) is purged") != 0
            let time = try StoredValue.integer(rows, 3, "the time of journal seq \(seq)")
            let event: JournalEvent
            do {
                event = try EventCodec.decode(rows.blob(1))
            } catch {
                throw DeviceStoreError(.corruptJournal, "seq \(seq): payload does not decode: \(error)", seq: seq)
            }
            plan.read(event, seq: seq, time: time, isPurged: isPurged)
        }
        let pseudonyms = Pseudonyms(voteSecret: keys.voteSecret)
        let purged = try plan.finish(db, pseudonyms: pseudonyms)
        report.waitingForBackup = plan.waitingItems.sorted()
        report.waitingForDelay = plan.waitingForDelay.subtracting(plan.waitingItems).sorted()
        report.earliestWaitingDeletion = plan.earliestWaiting.map(Timestamp.init(millisecondsSince1970:))
        report.items = Set(plan.purgedItems.map(\.1)).sorted()
        report.activities = plan.purgedActivities.sorted()
        report.activitiesWaiting = plan.activitiesWaiting
        report.references = plan.purgedReferences.values.reduce(0) { $0 + $1.shown + $1.engaged }
        report.purgedSeqs = purged.keys.sorted()
        guard !report.purgedSeqs.isEmpty else { return report }
        if apply {
            if try SearchIndex.isBuilt(db) { _ = try SearchIndex.refresh(db) }
            try db.execute(sql: "PRAGMA secure_delete = ON")
        }
        let update = apply ? try db.makeStatement(sql: """
            UPDATE event_journal SET payload = ?, purged_payload_hash = ? WHERE seq = ?
            """) : nil
        for seq in report.purgedSeqs {
            let record = try purgeable(db, seq)
            guard let residue = try purged[seq]?.of(record.event()) else { continue }
            let encoded = EventCodec.encode(residue)
            report.bytes += record.payload.count
            if let update {
                try update.execute(arguments: [Data(encoded), Data(ChainHash.ofPayload(record.payload).bytes), Int64(seq.rawValue)])
            }
        }
        if apply && !plan.purgedReferences.isEmpty {
            // The residues count their engagement under the reference's pseudonym, so the projection does too.
            let add = try db.makeStatement(sql: """
                INSERT INTO engagement (ref, shown, engaged) VALUES (?, ?, ?)
                ON CONFLICT (ref) DO UPDATE SET shown = shown + excluded.shown, engaged = engaged + excluded.engaged
                """)
            let subtract = try db.makeStatement(sql: "UPDATE engagement SET shown = shown - ?, engaged = engaged - ? WHERE ref = ?")
            let dropEmpty = try db.makeStatement(sql: "DELETE FROM engagement WHERE ref = ? AND shown <= 0 AND engaged <= 0")
            for (reference, counts) in plan.purgedReferences.sorted(by: { $0.key < $1.key }) {
                try add.execute(arguments: [pseudonyms(reference), counts.shown, counts.engaged])
                try subtract.execute(arguments: [counts.shown, counts.engaged, reference])
                try dropEmpty.execute(arguments: [reference])
            }
        }
        return report
    }

    /// The row at `seq`, checked against its own hash: a purge never takes
    /// away the evidence that a row was altered.
    private static func purgeable(_ db: Database, _ seq: Seq) throws -> JournalRecord {
        let rows = try JournalRows(db, from: seq)
        defer { rows.finish() }
        guard let record = try rows.next(), record.seq == seq else {
            throw DeviceStoreError(.corruptJournal, "seq \(seq) cannot be read back to purge it", seq: seq)
        }
        guard record.recomputedHash(.overPayloadHashes) == record.hash else {
            throw DeviceStoreError(.corruptJournal, """
                seq \(seq): stored hash does not match the row's content (row altered); nothing was purged \
                (`journal verify` names the first bad row)
                """, seq: seq)
        }
        return record
    }
}
