import Foundation
import GRDB
import IndexModel
import SQLiteSupport

/// Reads journal rows in seq order, as much of them as can be read.
///
/// Inspection must work on damaged stores, so a row that SQLite cannot read ends
/// the scan with a `stop` that says after which seq and why, instead of an error
/// that hides the rows before it.
public struct JournalScan: Sendable {
    /// Why and where a scan ended early, nil when it read to the end.
    public var stop: DeviceStoreError?
    /// The last seq read before the scan stopped (or the head when it did not).
    public var lastSeq: Seq?
}

extension DeviceStore {
    /// Calls `body` with every journal row from `start` on, in seq order, until the
    /// end, until `body` returns false, or until a row cannot be read.
    @discardableResult
    public func scanJournal(from start: Seq = Seq(1), _ body: (JournalRecord) throws -> Bool) throws(DeviceStoreError) -> JournalScan {
        var scan: JournalScan?
        do {
            try access.with { connection in
                try connection.queue.snapshotRead(connection.writePath.connection) { db in scan = try DeviceStore.scanJournal(db, from: start, body) }
            }
        } catch let error as DeviceStoreError {
            throw error
        } catch {
            // SQLite reports a corrupt page again when the read transaction ends;
            // the scan has already said where it stopped.
            if let scan, scan.stop != nil { return scan }
            throw DeviceStoreError(.corruptJournal, "cannot read the journal: \(DeviceStore.describe(error))")
        }
        return scan ?? JournalScan()
    }

    /// The scan itself, on a connection the caller holds (so a write transaction
    /// can replay its own journal without re-entering the queue).
    static func scanJournal(_ db: Database, from start: Seq, _ body: (JournalRecord) throws -> Bool) throws -> JournalScan {
        var scan = JournalScan()
        let rows = try JournalRows(db, from: start)
        defer { rows.finish() }
        do {
            while let record = try rows.next() {
                scan.lastSeq = record.seq
                guard try body(record) else { break }
            }
        } catch let error as DeviceStoreError {
            scan.stop = error
        } catch let error as DatabaseError {
            let unreadable = scan.lastSeq?.next ?? Seq(1)
            scan.stop = DeviceStoreError(.corruptJournal, "the row after seq \(scan.lastSeq ?? .none) cannot be read: \(DeviceStore.describe(error))",
                                         seq: unreadable)
        }
        return scan
    }

    /// The records with seqs in `range`, in order (for `tail`, `show`).
    public func records(_ range: ClosedRange<Seq>) throws(DeviceStoreError) -> [JournalRecord] {
        var records: [JournalRecord] = []
        let scan = try scanJournal(from: range.lowerBound) { record in
            guard record.seq <= range.upperBound else { return false }
            records.append(record)
            return true
        }
        if let stop = scan.stop, records.isEmpty { throw stop }
        return records
    }

    /// The journal head: its last seq (`Seq.none` when empty), that row's hash and
    /// the store's current epoch.
    public func journalHead() throws(DeviceStoreError) -> (seq: Seq, hash: ChainHash, epoch: Epoch) {
        try read { db in
            let epochValue = try Int64.fetchOne(db.cachedStatement(sql: "SELECT value FROM store_meta WHERE key = 'epoch'")) ?? 1
            let epoch = Epoch(try StoredValue.position(epochValue, "store_meta.epoch"))
            guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT seq, hash FROM event_journal ORDER BY seq DESC LIMIT 1")) else {
                return (Seq.none, ChainHash.genesis, epoch)
            }
            let seq = try StoredValue.position(StoredValue.column(row, 0, "the journal's last seq"), "the journal's last seq")
            let hash: Data = try StoredValue.column(row, 1, "the hash of journal seq \(seq)")
            return (Seq(seq), ChainHash([UInt8](hash)) ?? ChainHash.genesis, epoch)
        }
    }
}

/// The journal's rows from a seq on, in seq order, read through the SQLite C
/// API so that each record is built straight from SQLite's column buffers.
/// (GRDB's `Row` made a `Data` of every blob before the array, which cost more
/// than checking the row's hash on a million-row scan.)
///
/// A value that is NULL where the journal needs one throws a `DeviceStoreError`
/// naming the seq; a row SQLite cannot read throws its `DatabaseError`.
struct JournalRows {
    private let statement: DirectStatement

    init(_ db: Database, from start: Seq) throws {
        // The connection's cached statement, unless a scan whose body scans
        // the journal too is stepping it: then one of its own. Compiled for
        // every scan, it would be compiled again for each search's fold.
        let sql = try SchemaLookup.hasColumn(db, table: "event_journal", column: "purged_payload_hash")
            ? JournalRows.sql : JournalRows.sqlBeforeVersion5
        let cached = try DirectStatement(db, sql)
        statement = cached.isBusy ? try DirectStatement(uncached: db, sql) : cached
        statement.bind(1, Int64(start.rawValue))
    }

    private static let sql = """
        SELECT seq, epoch, call, kind, time, payload, prev_hash, hash, purged_payload_hash FROM event_journal
        WHERE seq >= ? ORDER BY seq
        """

    /// A store of version 4 or older, opened read-only, has no purge column: none of its rows is purged.
    private static let sqlBeforeVersion5 = """
        SELECT seq, epoch, call, kind, time, payload, prev_hash, hash, NULL FROM event_journal
        WHERE seq >= ? ORDER BY seq
        """

    /// The next record, nil after the last.
    func next() throws -> JournalRecord? {
        guard try statement.step() else { return nil }
        let storedSeq = statement.int64(0)
        guard storedSeq >= 1 else {
            throw DeviceStoreError(.corruptJournal, "a journal row has seq \(storedSeq); seqs start at 1", seq: Seq.none)
        }
        let seq = Seq(UInt64(storedSeq))
        // As GRDB read them: NULL is missing, anything else is taken as SQLite converts it.
        func blob(_ column: Int32, _ name: String) throws -> [UInt8] {
            guard !statement.isNull(column) else {
                throw DeviceStoreError(.corruptJournal, "seq \(seq): \(name) is not a blob", seq: seq)
            }
            return statement.blob(column)
        }
        func integer(_ column: Int32, _ name: String) throws -> Int64 {
            guard !statement.isNull(column) else {
                throw DeviceStoreError(.corruptJournal, "seq \(seq): \(name) is not an integer", seq: seq)
            }
            return statement.int64(column)
        }
        /// A column no store writes negative: an epoch, a call number.
        func count(_ column: Int32, _ name: String) throws -> UInt64 {
            let value = try integer(column, name)
            guard value >= 0 else {
                throw DeviceStoreError(.corruptJournal, "seq \(seq): \(name) is \(value), which no store writes (it is never negative)", seq: seq)
            }
            return UInt64(value)
        }
        guard let previousHash = ChainHash(try blob(6, "prev_hash")), let chainHash = ChainHash(try blob(7, "hash")) else {
            throw DeviceStoreError(.corruptJournal, "seq \(seq): a chain hash is not 32 bytes", seq: seq)
        }
        var purgedPayloadHash: ChainHash?
        if !statement.isNull(8) {
            guard let hash = ChainHash(statement.blob(8)) else {
                throw DeviceStoreError(.corruptJournal, "seq \(seq): purged_payload_hash is not 32 bytes", seq: seq)
            }
            purgedPayloadHash = hash
        }
        let kind = try integer(3, "kind")
        guard (0...255).contains(kind) else {
            throw DeviceStoreError(.corruptJournal, "seq \(seq): kind \(kind) is out of range", seq: seq)
        }
        return JournalRecord(
            seq: seq, epoch: Epoch(try count(1, "epoch")), call: CallID(try count(2, "call")), kind: UInt8(kind),
            time: Timestamp(millisecondsSince1970: try integer(4, "time")), payload: try blob(5, "payload"),
            previousHash: previousHash, hash: chainHash, purgedPayloadHash: purgedPayloadHash)
    }

    /// Ends the query, so that the statement holds no read open.
    func finish() {
        statement.reset()
    }
}

extension DeviceStore {
    /// The time of the journal's last event, nil when the journal is empty.
    public func latestEventTime() throws(DeviceStoreError) -> Timestamp? {
        try read { db in
            try Int64.fetchOne(db, sql: "SELECT time FROM event_journal ORDER BY seq DESC LIMIT 1")
                .map { Timestamp(millisecondsSince1970: $0) }
        }
    }
}
