import CloudCore
import Foundation
import GRDB
import IndexModel
import SQLiteSupport
import SyncWire
import Threads

extension CloudIndex {
    /// Appends `frame` (whose messages from `acceptedFrom` on are new) to its
    /// app's chain and returns its log seq there.
    static func appendLog(app: AppID, _ frame: UploadFrame, acceptedFrom: OutboxSeq, receivedAt: Timestamp, db: Database,
                          statements: StatementSlots) throws -> Int64 {
        let head = try statements.statement(.logHead, db)
        head.bind(1, app)
        var seq: Int64 = 1
        var previousHash = CloudLog.genesis
        do {
            defer { head.reset() }
            if try head.step() {
                seq = head.int64(0) + 1
                previousHash = head.blob(1)
            }
        }
        let hash = CloudLog.chainHash(previous: previousHash, app: app, device: frame.device, epoch: frame.epoch,
                                      firstSeq: frame.firstSeq, lastSeq: frame.lastSeq, acceptedFrom: acceptedFrom,
                                      digest: frame.digest, receivedAt: receivedAt)
        let insert = try statements.statement(.logAppend, db)
        insert.bind(1, app)
        insert.bind(2, seq)
        insert.bind(3, frame.device)
        insert.bind(4, frame.epoch)
        insert.bind(5, frame.firstSeq)
        insert.bind(6, frame.lastSeq)
        insert.bind(7, acceptedFrom)
        insert.bind(8, Int64(frame.codec.rawValue))
        insert.bind(9, Int64(frame.uncompressedLength))
        insert.bind(10, frame.digest)
        insert.bind(11, frame.payload)
        insert.bind(12, receivedAt.millisecondsSince1970)
        insert.bind(13, previousHash)
        insert.bind(14, hash)
        try insert.execute()
        return seq
    }

    /// Checks every log row, each app's in order (`LogChainCheck`): seqs
    /// dense from 1, each previous hash the predecessor's hash, each hash
    /// recomputed, each payload inflating to its digest and decoding to its
    /// count of messages. Stops at the first bad row.
    public func verifyLog() throws(CloudError) -> CloudLogVerification {
        try verifyLog(handingTo: nil)
    }

    /// `verifyLog()`, handing each verified row's newly accepted messages to
    /// `stream` for a replay on another thread (a restore's check of the
    /// projections), so that each payload is inflated and decoded once. The
    /// caller finishes the stream.
    func verifyLog(handingTo stream: RowStream<LoggedFrame>?) throws(CloudError) -> CloudLogVerification {
        try read { db in
            var check = LogChainCheck()
            let rows = try Row.fetchCursor(db, sql: """
                SELECT \(StoredLogRow.columns), prev_hash, hash FROM cloud_log ORDER BY app, seq
                """)
            while let row = try rows.next() {
                do throws(CloudError) {
                    let stored = try StoredLogRow(row)
                    guard let messages = check.check(stored, prevHash: [UInt8](try Stored.column(row, 12, "prev_hash") as Data),
                                                     hash: [UInt8](try Stored.column(row, 13, "hash") as Data)) else { break }
                    stream?.append(LoggedFrame(stored, messages: messages))
                } catch {
                    check.fail(error.message)
                    break
                }
            }
            return check.finish()
        }
    }

    /// Each app's chain head, from the log's last rows alone (no row is checked).
    /// The apps are found by skipping through the log's key from one app to
    /// the next, and each head by its key: a few lookups an app. A scan of
    /// the log for the rows that are their app's last grows with the log
    /// (0.3 s at 197,125 rows), and this runs at every cloud snapshot.
    func logHeads(_ db: Database) throws -> [CloudLogHead] {
        try Row.fetchAll(db, sql: """
            WITH RECURSIVE apps(app) AS (
                SELECT (SELECT min(app) FROM cloud_log)
                UNION ALL
                SELECT (SELECT min(app) FROM cloud_log WHERE app > apps.app) FROM apps WHERE apps.app IS NOT NULL
            )
            SELECT l.app, l.seq, l.hash FROM apps
            JOIN cloud_log l ON l.app = apps.app AND l.seq = (SELECT max(seq) FROM cloud_log WHERE app = apps.app)
            ORDER BY l.app
            """).map { row throws(CloudError) in
            CloudLogHead(app: try Stored.column(row, 0, "cloud_log.app"), rows: try Stored.column(row, 1, "cloud_log.seq"),
                         hash: [UInt8](try Stored.column(row, 2, "cloud_log.hash") as Data))
        }
    }

    /// A SHA-256 digest of every projection row in key order.
    public func projectionDigest() throws(CloudError) -> String {
        try read { db in try CloudIndex.digest(db) }
    }

    /// Replays the cloud log into fresh projections in a private in-memory
    /// database and returns their digest; the store is not modified.
    public func rebuiltProjectionDigest() throws(CloudError) -> String {
        try inScratchProjections { replay in
            try queue.snapshotRead { source in try CloudIndex.readLog(from: source, into: &replay) }
        }
    }

    /// `rebuiltProjectionDigest()` over the frames of `stream`, which another
    /// thread reads, verifies and decodes meanwhile (`verifyLog(handingTo:)`,
    /// in a restore): the log is read once for both checks. A stream that ends
    /// early (the verification stopped at a bad row) gives the digest of the
    /// rows before it.
    func rebuiltProjectionDigest(replaying stream: RowStream<LoggedFrame>) throws(CloudError) -> String {
        defer { stream.abandon() }
        return try inScratchProjections { replay in
            while let batch = stream.nextBatch() {
                for frame in batch { try replay.apply(frame) }
                stream.recycle(consume batch)
            }
        }
    }

    /// The fold into `db`'s projections, with statements kept for this fold
    /// only, and each app's popularity as `registry` (`db` unless given) holds it.
    static func fold(_ db: Database, threshold: Int, agreement: Int, secrets: CloudSecrets,
                     registry: Database? = nil) throws -> CloudFold<SQLiteFoldRows> {
        CloudFold(rows: SQLiteFoldRows(db: db, statements: StatementSlots(count: CloudStatement.allCases.count)),
                  threshold: threshold, agreement: agreement, secrets: secrets,
                  popularity: try privatePopularity(registry ?? db))
    }

    /// The settings of every app of `db` whose popularity is private.
    static func privatePopularity(_ db: Database) throws -> [AppID: PrivatePopularity] {
        var settings: [AppID: PrivatePopularity] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT app, popularity FROM apps WHERE popularity IS NOT NULL") {
            let app: AppID = try Stored.column(row, 0, "apps.app")
            let bytes = [UInt8](try Stored.column(row, 1, "apps.popularity of \(app)") as Data)
            settings[app] = try Stored.popularity(bytes, app: app).privateSettings
        }
        return settings
    }

    /// Makes fresh projections in a private in-memory database, lets `body`
    /// fold the log into them, and returns their digest.
    private func inScratchProjections(_ body: (inout LogReplay<SQLiteFoldRows>) throws -> Void) throws(CloudError) -> String {
        let popularity = try read { db in try CloudIndex.privatePopularity(db) }
        do {
            let scratch = try DatabaseQueue()
            return try scratch.write { scratchDB in
                try CloudSchema.create(scratchDB, threshold: threshold, voterSecret: secrets.secret, createdAt: 0)
                let fold = CloudFold(rows: SQLiteFoldRows(db: scratchDB, statements: StatementSlots(count: CloudStatement.allCases.count)),
                                     threshold: threshold, agreement: agreement, secrets: secrets, popularity: popularity)
                var replay = LogReplay(fold: fold)
                try body(&replay)
                try replay.finish()
                return try CloudIndex.digest(scratchDB)
            }
        } catch let error as CloudError {
            throw error
        } catch {
            throw CloudError(.database, "rebuild failed: \(CloudIndex.describe(error))")
        }
    }

    /// Empties the projections and folds the whole cloud log into them again, in
    /// one transaction.
    public func rebuildProjections() throws(CloudError) {
        ingestMemory.forget()
        try write { db in try CloudIndex.refold(db, threshold: threshold, agreement: agreement, secrets: secrets) }
    }

    /// Empties `db`'s projections and folds its cloud log into them, in the
    /// caller's transaction.
    static func refold(_ db: Database, threshold: Int, agreement: Int, secrets: CloudSecrets) throws {
        for table in CloudSchema.projectionTables { try db.execute(sql: "DELETE FROM \(table)") }
        var replay = LogReplay(fold: try fold(db, threshold: threshold, agreement: agreement, secrets: secrets))
        try readLog(from: db, into: &replay)
        try replay.finish()
    }

    /// Folds every row of the cloud log in `source` into `replay`, each app's in order.
    private static func readLog(from source: Database, into replay: inout LogReplay<SQLiteFoldRows>) throws {
        let rows = try Row.fetchCursor(source, sql: "SELECT \(StoredLogRow.columns) FROM cloud_log ORDER BY app, seq")
        while let row = try rows.next() {
            let stored = try StoredLogRow(row)
            try replay.apply(LoggedFrame(stored, messages: try stored.messages()))
        }
    }

    static let digestQueries = StoreTables.projections.map(StoreTables.digestQuery)

    static func digest(_ db: Database) throws -> String {
        RowDigest.hex(try RowDigest.compute(db, digestQueries.map { ($0, []) }))
    }

    public func newestLoggedPayloads(app: AppID, device: DeviceID, limit: Int, maximumBytes: Int) throws(CloudError) -> [[UInt8]] {
        try read { db in
            let order = "WHERE app = ? AND device = ? ORDER BY epoch DESC, last_seq DESC LIMIT ?"
            let lengths = try Row.fetchAll(db.cachedStatement(sql: "SELECT uncompressed_length FROM cloud_log \(order)"),
                                           arguments: [app, device, max(limit, 0)])
                .map { row throws(CloudError) in try Stored.column(row, 0, "cloud_log.uncompressed_length", as: Int64.self) }
            let rows = FrameDictionaries.rows(lengths, within: maximumBytes)
            guard rows > 0 else { return [] }
            return try Row.fetchAll(db.cachedStatement(sql: "SELECT \(StoredLogRow.columns) FROM cloud_log \(order)"),
                                    arguments: [app, device, rows]).map { row throws(CloudError) in try StoredLogRow(row).plainPayload() }
        }
    }

    /// Reads the cloud log of `app` (every app when nil, one after another)
    /// from `seq` on, in order, until `body` returns false.
    public func scanLog(app: AppID?, from start: Int64, _ body: (CloudLogRecord) throws -> Bool) throws(CloudError) {
        try read { db in
            let rows = try app.map { app in
                try Row.fetchCursor(db, sql: """
                    SELECT \(StoredLogRow.columns), hash FROM cloud_log WHERE app = ? AND seq >= ? ORDER BY seq
                    """, arguments: [app, start])
            } ?? Row.fetchCursor(db, sql: """
                SELECT \(StoredLogRow.columns), hash FROM cloud_log WHERE seq >= ? ORDER BY app, seq
                """, arguments: [start])
            try CloudIndex.each(rows, body)
        }
    }

    public func scanLogByDevice(app: AppID, _ body: (CloudLogRecord) throws -> Bool) throws(CloudError) {
        try read { db in
            // In the index's order, one row read at a time: SQLite sorts only
            // rows that tie on the index's columns, which a log the cloud
            // wrote never has (each frame's last seq is past the one before).
            let rows = try Row.fetchCursor(db, sql: """
                SELECT \(StoredLogRow.columns), hash FROM cloud_log WHERE app = ? ORDER BY device, epoch, last_seq, seq
                """, arguments: [app])
            try CloudIndex.each(rows, body)
        }
    }

    /// Hands each log row of `rows` (`StoredLogRow.columns`, then the hash)
    /// to `body`, checked, until `body` returns false.
    private static func each(_ rows: RowCursor, _ body: (CloudLogRecord) throws -> Bool) throws {
        while let row = try rows.next() {
            let stored = try StoredLogRow(row)
            guard try body(CloudLogRecord(stored, hash: [UInt8](try Stored.column(row, 12, "hash") as Data))) else { break }
        }
    }
}
