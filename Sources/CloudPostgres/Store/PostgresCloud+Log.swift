import CloudCore
import CloudSQLite
import Foundation
import IndexModel
import SyncWire

extension PostgresCloud {
    /// Rows read per statement when a whole table is read: fewer of the
    /// cloud log, whose rows hold payloads of up to 1 MiB.
    static func pageRows(_ table: String) -> Int { table == "cloud_log" ? 256 : 2_000 }

    /// Reads `table`'s `columns` in order of `key` (the first columns of
    /// `columns`), `pageRows(table)` at a time, each page after the last row of the
    /// one before (inside the caller's transaction, so the pages agree), until
    /// `body` returns false. `condition` (with binds from `$1`) narrows the rows.
    static func pages(_ session: PostgresSession, table: String, columns: [String], key: Int, condition: String = "TRUE",
                      binds: [PostgresValue] = [], _ body: ([PostgresRowValues]) throws -> Bool) throws {
        let keys = columns.prefix(key).joined(separator: ", ")
        var after: [PostgresValue]?
        while true {
            var sql = "SELECT \(columns.joined(separator: ", ")) FROM \(table) WHERE (\(condition))"
            var values = binds
            if let after {
                let places = (0..<after.count).map { "$\(binds.count + $0 + 1)" }.joined(separator: ", ")
                sql += " AND (\(keys)) > (\(places))"
                values += after
            }
            let limit = pageRows(table)
            sql += " ORDER BY \(keys) LIMIT \(limit)"
            let rows = try session.query(sql, values)
            guard !rows.isEmpty, try body(rows), rows.count == limit, let last = rows.last else { return }
            after = Array(last.values.prefix(key))
        }
    }

    /// Checks every log row, each app's in order (`LogChainCheck`).
    public func verifyLog() throws(CloudError) -> CloudLogVerification {
        try read { session in
            var check = LogChainCheck()
            try PostgresCloud.pages(session, table: "cloud_log", columns: PostgresCloud.logColumnList + ["prev_hash", "hash"], key: 2) { rows in
                for row in rows {
                    do throws(CloudError) {
                        let stored = try PostgresCloud.logRow(row)
                        guard check.check(stored, prevHash: try row.bytes(12, "cloud_log.prev_hash"),
                                          hash: try row.bytes(13, "cloud_log.hash")) != nil else { return false }
                    } catch {
                        check.fail(error.message)
                        return false
                    }
                }
                return true
            }
            return check.finish()
        }
    }

    static let logColumnList = logColumns.split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }

    public func newestLoggedPayloads(app: AppID, device: DeviceID, limit: Int, maximumBytes: Int) throws(CloudError) -> [[UInt8]] {
        try read { session in
            let order = "WHERE app = $1 AND device = $2 ORDER BY epoch DESC, last_seq DESC LIMIT $3"
            let lengths = try session.query("SELECT uncompressed_length FROM cloud_log \(order)",
                                            [.text(app.rawValue), .text(device.rawValue), .int64(Int64(max(limit, 0)))])
                .map { row throws(CloudError) in try row.integer(0, "cloud_log.uncompressed_length") }
            let rows = FrameDictionaries.rows(lengths, within: maximumBytes)
            guard rows > 0 else { return [] }
            // A row another server logged since is newer: the rows read are
            // then those newest, each checked against the budget again.
            var budget = Int64(maximumBytes)
            var payloads: [[UInt8]] = []
            for row in try session.query("SELECT \(PostgresCloud.logColumns) FROM cloud_log \(order)",
                                         [.text(app.rawValue), .text(device.rawValue), .int64(Int64(rows))]) {
                let stored = try PostgresCloud.logRow(row)
                budget -= Int64(stored.uncompressedLength)
                guard budget >= 0 else { break }
                payloads.append(try stored.plainPayload())
            }
            return payloads
        }
    }

    public func scanLog(app: AppID?, from start: Int64, _ body: (CloudLogRecord) throws -> Bool) throws(CloudError) {
        try read { session in
            let condition = app == nil ? "seq >= $1" : "seq >= $1 AND app = $2"
            let binds: [PostgresValue] = [.int64(start)] + (app.map { [.text($0.rawValue)] } ?? [])
            try PostgresCloud.pages(session, table: "cloud_log", columns: PostgresCloud.logColumnList + ["hash"], key: 2,
                                    condition: condition, binds: binds) { rows in
                for row in rows {
                    let stored = try PostgresCloud.logRow(row)
                    guard try body(CloudLogRecord(stored, hash: try row.bytes(12, "cloud_log.hash"))) else { return false }
                }
                return true
            }
        }
    }

    /// Pages through the log in `cloud_log_by_device`'s order, each page
    /// after the last row of the one before.
    public func scanLogByDevice(app: AppID, _ body: (CloudLogRecord) throws -> Bool) throws(CloudError) {
        try read { session in
            let limit = PostgresCloud.pageRows("cloud_log")
            var after: StoredLogRow?
            while true {
                var sql = "SELECT \(PostgresCloud.logColumns), hash FROM cloud_log WHERE app = $1"
                var binds: [PostgresValue] = [.text(app.rawValue)]
                if let after {
                    sql += " AND (device, epoch, last_seq, seq) > ($2, $3, $4, $5)"
                    binds += [.text(after.device.rawValue), .int64(Int64(after.epoch.rawValue)),
                              .int64(Int64(after.lastSeq.rawValue)), .int64(after.seq)]
                }
                sql += " ORDER BY device, epoch, last_seq, seq LIMIT \(limit)"
                let rows = try session.query(sql, binds)
                for row in rows {
                    let stored = try PostgresCloud.logRow(row)
                    guard try body(CloudLogRecord(stored, hash: try row.bytes(12, "cloud_log.hash"))) else { return }
                    after = stored
                }
                guard rows.count == limit else { return }
            }
        }
    }

    /// A SHA-256 digest of every projection row in key order, the same bytes
    /// as the SQLite backend's for the same rows (`ProjectionDigest`).
    public func projectionDigest() throws(CloudError) -> String {
        try read { session in
            var digest = ProjectionDigest()
            for (index, table) in StoreTables.projections.enumerated() {
                digest.table(index)
                try PostgresCloud.pages(session, table: table.name, columns: table.columns, key: table.key.count) { rows in
                    for row in rows {
                        for column in table.columns.indices { digest.value(try row.storeValue(column, table: table.name)) }
                    }
                    return true
                }
            }
            return digest.finish()
        }
    }

    /// Replays each app's cloud log into projections made afresh in memory
    /// and returns their digest; the store is not modified.
    public func rebuiltProjectionDigest() throws(CloudError) -> String {
        let sets = try read { session in
            try PostgresCloud.apps(session).map { app in try replay(app, session: session) }
        }
        var digest = ProjectionDigest()
        for (index, table) in StoreTables.projections.enumerated() {
            digest.table(index)
            for rows in sets {
                for row in rows.storeRows(table) {
                    for value in row { digest.value(value) }
                }
            }
        }
        return digest.finish()
    }

    /// Empties each app's projections and folds its log into them again, in
    /// one transaction per app, which holds the app's lock: a server
    /// ingesting meanwhile waits for it.
    public func rebuildProjections() throws(CloudError) {
        let apps = try read { session in try PostgresCloud.apps(session) }
        for app in apps {
            try run { session in
                try session.transaction {
                    _ = try session.query("SELECT 1 FROM apps WHERE app = $1 FOR UPDATE", [.text(app.rawValue)])
                    try refold(app, session: session)
                }
            }
        }
    }

    /// Empties `app`'s projections and folds its log into them again, in the
    /// caller's transaction, which holds the app's row locked.
    func refold(_ app: AppID, session: PostgresSession) throws {
        for table in StoreTables.projections {
            _ = try session.execute("DELETE FROM \(table.name) WHERE app = $1", [.text(app.rawValue)])
        }
        let rows = try replay(app, session: session)
        for table in StoreTables.projections {
            try session.copyFrom(table: table.name, columns: table.columns, rows: rows.storeRows(table).map { $0.map(\.postgresValue) })
        }
    }

    /// How `app`'s devices report popularity (`apps.popularity`); exact for
    /// an app not registered.
    static func popularity(_ app: AppID, session: PostgresSession) throws -> PopularityMode {
        guard let row = try session.query("SELECT popularity FROM apps WHERE app = $1", [.text(app.rawValue)]).first else {
            return .exact
        }
        return try Stored.popularity(try row.optionalBytes(0, "apps.popularity of \(app)"), app: app)
    }

    /// Every registered app, in byte order of its name.
    static func apps(_ session: PostgresSession) throws -> [AppID] {
        try session.query("SELECT app FROM apps ORDER BY app").map { row throws(CloudError) in AppID(try row.text(0, "apps.app")) }
    }

    /// Folds `app`'s whole log, in order, into a working set made from
    /// nothing, with the store's K and agreement and the app's popularity
    /// as `session` reads them.
    func replay(_ app: AppID, session: PostgresSession) throws -> WorkingSet {
        let settings = try FoldSettings.read(session)
        let rows = WorkingSet(app: app, wantedSeq: 0, isComplete: true)
        let popularity = try PostgresCloud.popularity(app, session: session)
        var replay = LogReplay(fold: CloudFold(rows: rows, threshold: settings.threshold, agreement: settings.agreement,
                                               secrets: secrets, popularity: popularity.privateSettings.map { [app: $0] } ?? [:]))
        try PostgresCloud.pages(session, table: "cloud_log", columns: PostgresCloud.logColumnList, key: 2, condition: "app = $1",
                                binds: [.text(app.rawValue)]) { page in
            for row in page {
                let stored = try PostgresCloud.logRow(row)
                try replay.apply(LoggedFrame(stored, messages: try stored.messages()))
            }
            return true
        }
        try replay.finish()
        return rows
    }
}

extension WorkingSet {
    /// The rows this working set holds of a projection, as `table`'s columns
    /// in key order (bytewise, as both backends order them): what a replay
    /// writes, and what its digest is taken over.
    func storeRows(_ table: StoreTables.Table) -> [[StoreValue]] {
        let app = StoreValue.text(self.app.rawValue)
        func blob(_ data: Data) -> StoreValue { .blob([UInt8](data)) }
        func integer(_ value: Int64?) -> StoreValue { value.map(StoreValue.integer) ?? .null }
        func text(_ value: String?) -> StoreValue { value.map(StoreValue.text) ?? .null }
        func bytewise(_ a: Data, _ b: Data) -> Bool { a.lexicographicallyPrecedes(b) }
        switch table.name {
        case "device_epochs":
            return epochs.sorted { Array($0.key.rawValue.utf8).lexicographicallyPrecedes(Array($1.key.rawValue.utf8)) }
                .flatMap { device, held in
                    held.sorted { $0.key < $1.key }.map { epoch, last in
                        [app, .text(device.rawValue), .integer(Int64(clamping: epoch.rawValue)), .integer(Int64(clamping: last.rawValue))]
                    }
                }
        case "hashes":
            return hashes.sorted { bytewise($0.key, $1.key) }.map { key, row in
                [app, blob(key), row.hash.map { StoreValue.blob($0) } ?? .null, .integer(row.liveVotes), .integer(row.voters),
                 .integer(row.views), .integer(row.shown), .integer(row.engaged), integer(row.wantedSeq), .integer(row.hasContent ? 1 : 0)]
            }
        case "votes":
            return votes.sorted { $0.key.key != $1.key.key ? bytewise($0.key.key, $1.key.key) : bytewise($0.key.voter, $1.key.voter) }
                .map { key, row in
                    [app, blob(key.key), blob(key.voter), .blob(row.token), .integer(row.live ? 1 : 0), .integer(row.day),
                     .integer(Int64(clamping: row.used.views)), .integer(Int64(clamping: row.used.shown)),
                     .integer(Int64(clamping: row.used.engaged))]
                }
        case "public_content":
            return contents.compactMap { key, row in row.map { (key, $0) } }.sorted { bytewise($0.0, $1.0) }.map { key, row in
                [app, blob(key), .text(row.content.activityType), text(row.content.title),
                 .blob(PublicKeywords.encode(row.content.keywords)), text(row.content.contentDescription),
                 text(row.content.webpageURL), .integer(row.logSeq)]
            }
        case "app_state":
            return wantedSeqChanged ? [[app, .integer(wantedSeq)]] : []
        case "pages":
            return pages.sorted { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }.map { url, recorded in
                [app, .text(url), .blob(recorded.page.encoded), .integer(recorded.logSeq)]
            }
        case "content_offers":
            return offers.sorted { bytewise($0.key, $1.key) }.flatMap { key, held in
                held.sorted { bytewise($0.key, $1.key) }.map { voter, digest in [app, blob(key), blob(voter), blob(digest)] }
            }
        case "sketch_cells":
            return sketch.sorted { $0.key < $1.key }.map { cell, counted in
                [app, .integer(cell), .integer(counted.reports), .integer(counted.total)]
            }
        case "report_allowances":
            return allowances.compactMap { device, allowance in allowance.map { (device, $0) } }
                .sorted { Array($0.0.rawValue.utf8).lexicographicallyPrecedes(Array($1.0.rawValue.utf8)) }
                .map { device, allowance in [app, .text(device.rawValue), .integer(allowance.day), .integer(allowance.used)] }
        default:
            return []
        }
    }
}
