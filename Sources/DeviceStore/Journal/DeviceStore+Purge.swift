import Foundation
import GRDB
import IndexModel
import SQLiteSupport

/// What `purge(dryRun:)` did, or would do.
public struct PurgeReport: Hashable, Sendable {
    /// The rows whose payloads were purged, in seq order.
    public var purgedSeqs: [Seq] = []
    /// The deleted items whose content went, sorted.
    public var items: [ItemKey] = []
    /// How many bytes of payload went: the payloads' sizes less their residues'.
    public var bytes = 0
    /// The journal seq the store's latest backup snapshot covers (`Seq.none`: none yet).
    public var backedUpThrough: Seq = .none
    /// Deleted items whose content stays until a backup covers their deletion.
    public var waitingForBackup: [ItemKey] = []
    /// Whether the WAL was emptied after the purge, so no page of it holds
    /// what went. False when another connection kept a read open on it.
    public var walEmptied = true
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
    /// Before the rows change, the search index is brought up to the journal,
    /// which takes the deleted items' words out of it. `secure_delete` is on,
    /// so SQLite overwrites what it frees with zeros, and afterwards the WAL
    /// is checkpointed and truncated: no page of the store file or its WAL
    /// keeps a purged payload. `dryRun` reports what would go and changes
    /// nothing.
    public func purge(dryRun: Bool = false) throws(DeviceStoreError) -> PurgeReport {
        if dryRun {
            // A store of format 4, read-only, has no purged rows (nor a column for them).
            let marked = journalChain == .overPayloadHashes ? "purged_payload_hash IS NOT NULL" : "0"
            return try read { db in try DeviceStore.purge(db, purgedColumn: marked, apply: false) }
        }
        guard !isReadOnly else {
            throw DeviceStoreError(.readOnly, "the store was opened read-only")
        }
        _ = try refreshSearchIndex()
        var report = try write { db in
            try db.execute(sql: "PRAGMA secure_delete = ON")
            return try DeviceStore.purge(db, purgedColumn: "purged_payload_hash IS NOT NULL", apply: true)
        }
        if !isInMemory && !report.purgedSeqs.isEmpty {
            report.walEmptied = try emptyWAL()
        }
        return report
    }

    /// Checkpoints the WAL into the store file and truncates it to nothing.
    /// False when a reader kept it from finishing.
    private func emptyWAL() throws(DeviceStoreError) -> Bool {
        do {
            return try queue.writeWithoutTransaction { db in
                let row = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
                return row.map { ($0[0] as Int64?) == 0 } ?? false
            }
        } catch {
            throw DeviceStoreError(.database, "the purge was committed, but the WAL could not be emptied: \(DeviceStore.describe(error))")
        }
    }

    /// The seq the store's latest backup snapshot covers.
    static func backedUpThrough(_ db: Database) throws -> Seq {
        guard let value = try Int64.fetchOne(db, sql: "SELECT value FROM store_meta WHERE key = 'backed_up_through'") else {
            return .none
        }
        return Seq(try StoredValue.position(value, "store_meta.backed_up_through"))
    }

    /// Records that a backup snapshot covers the journal through `seq`.
    static func recordBackup(_ db: Database, through seq: Seq) throws {
        try db.execute(sql: """
            INSERT INTO store_meta (key, value) VALUES ('backed_up_through', ?)
            ON CONFLICT (key) DO UPDATE SET value = max(value, excluded.value)
            """, arguments: [Int64(seq.rawValue)])
    }

    /// `purgedColumn`: SQL saying whether a row is purged already.
    private static func purge(_ db: Database, purgedColumn: String, apply: Bool) throws -> PurgeReport {
        var report = PurgeReport()
        report.backedUpThrough = try backedUpThrough(db)
        // Each item's rows that still hold content, since its last deletion.
        var pending: [ItemKey: [Seq]] = [:]
        var purged: [(Seq, ItemKey)] = []
        var waiting = Set<ItemKey>()
        let rows = try Row.fetchCursor(db, sql: """
            SELECT seq, payload, \(purgedColumn) FROM event_journal WHERE kind IN (?, ?, ?, ?) ORDER BY seq
            """, arguments: [EventKind.itemIndexed.rawValue, EventKind.itemUpdated.rawValue,
                             EventKind.itemDeleted.rawValue, EventKind.itemExpired.rawValue])
        while let row = try rows.next() {
            let seq = Seq(try StoredValue.position(row[0], "event_journal.seq"))
            let event: JournalEvent
            do {
                event = try EventCodec.decode([UInt8](row[1] as Data? ?? Data()))
            } catch {
                throw DeviceStoreError(.corruptJournal, "seq \(seq): payload does not decode: \(error)", seq: seq)
            }
            guard let key = event.itemKey else { continue }
            if event.removesItem {
                guard let contents = pending.removeValue(forKey: key) else { continue }
                if seq <= report.backedUpThrough {
                    purged += contents.map { ($0, key) }
                    waiting.remove(key)
                } else {
                    pending[key] = contents
                    waiting.insert(key)
                }
            } else if !(row[2] as Bool) {
                pending[key, default: []].append(seq)
            }
        }
        purged.sort { $0.0 < $1.0 }
        report.waitingForBackup = waiting.sorted()
        report.items = Set(purged.map(\.1)).sorted()
        report.purgedSeqs = purged.map(\.0)
        let update = apply ? try db.cachedStatement(sql: """
            UPDATE event_journal SET payload = ?, purged_payload_hash = ? WHERE seq = ?
            """) : nil
        for (seq, _) in purged {
            let record = try purgeable(db, seq)
            guard let residue = try record.event().purgedResidue else { continue }
            let encoded = EventCodec.encode(residue)
            report.bytes += record.payload.count - encoded.count
            if let update {
                try update.execute(arguments: [Data(encoded), Data(ChainHash.ofPayload(record.payload).bytes), Int64(seq.rawValue)])
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
