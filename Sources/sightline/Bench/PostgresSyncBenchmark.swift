import CloudCore
import CloudPostgres
import CloudSQLite
import DeviceStore
import Foundation
import IndexModel
import Logging
import Snapshot
import SyncWire

/// `bench sync --db postgres://…`: `bench sync`'s workload and devices,
/// with the cloud on PostgreSQL.
///
/// Untimed: a new database on the server the URL names, the cloud store
/// made in it (`PostgresCloud`, K = 3, the app registered), `servers`
/// `sightline cloud serve` processes started from this binary on it, each
/// with its own pool of `poolSize` connections, and the device stores
/// filled as `bench sync` fills them, device `i` enrolled at server
/// `i % servers`. Timed: every device syncing its whole outbox at once to
/// its server, until every message is acknowledged.
///
/// Baselines in the same run, after the servers stopped, each on one
/// connection into a new database, a transaction committed before the next
/// begins:
///
/// - The one the targets are judged against: the same rows in the same
///   tables. Every row the run left in the tables ingest writes (the log,
///   the flags and the projections) is read back (untimed), and `COPY`'d
///   into the same tables of a new cloud schema, with their keys and
///   indexes, cut into as many transactions as the run had frames, one
///   `COPY` per table in each: what holding the cloud's rows costs, without
///   the reads, the locks, the fold, the acks, HTTP and the updates a row
///   goes through before it settles.
/// - For reference, the raw SQLite baseline of `bench sync` on PostgreSQL:
///   the same messages as (device, epoch, seq, message) rows, cut into the
///   same frames, each frame one `COPY` into a table keyed by (device,
///   epoch, seq): what making the messages durable one row each costs.
struct PostgresSyncBenchmark {
    let devices: Int
    let callsPerDevice: Int
    let seed: UInt64
    let directory: URL
    let databases: BenchDatabases
    let servers: Int
    let spread: SyncBenchmark.Spread
    let poolSize: Int
    let statementTimeout: Int

    struct Result {
        var calls = 0
        var messages = 0
        var frames = 0
        var logRows = 0
        var seconds = 0.0
        var wireBytes = 0
        var jsonDeflateBytes = 0
        /// The same rows in the same tables.
        var copySeconds = 0.0
        var copiedRows = 0
        /// The messages as rows.
        var messageRowsCopySeconds = 0.0
        var setupSeconds = 0.0
        var publicItems = 0
        var retries = 0
        var dictionaryResets = 0
        var serverVersion = ""

        var messagesPerSecond: Double { Double(messages) / seconds }
        var copyMessagesPerSecond: Double { Double(messages) / copySeconds }
        var ratio: Double { messagesPerSecond / copyMessagesPerSecond }
        var messageRowsCopyMessagesPerSecond: Double { Double(messages) / messageRowsCopySeconds }
        var messageRowsRatio: Double { messagesPerSecond / messageRowsCopyMessagesPerSecond }
        var wireRatio: Double { Double(wireBytes) / Double(jsonDeflateBytes) }
    }

    static let targetMessagesPerSecond = 100_000.0
    static let targetRatio = 0.5

    func run(progress: (String) -> Void) async throws -> Result {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var result = Result()
        let setupStart = ContinuousClock.now
        let location = try databases.make("sync")
        var logger = Logger(label: "sightline.bench")
        logger.logLevel = .critical
        let cloud = try PostgresCloud(at: location, password: databases.password, options: PostgresCloudOptions(
            store: CloudOptions(random: SeededRandom(seed: seed), threshold: 3), poolSize: 1, logger: logger))
        defer { cloud.close() }
        try cloud.registerApp(SyncBenchmark.app, enrolmentSecret: SyncBenchmark.secret)
        result.serverVersion = try PostgresSyncBenchmark.serverVersion(databases, location)

        progress("starting \(servers) cloud serve processes on \(location)")
        var environment: [String: String] = [:]
        if let password = databases.password { environment["PGPASSWORD"] = password }
        let processes = try (0..<servers).map { index in
            try ServeProcess(db: location.description, arguments: [
                "--pool-size", String(poolSize), "--statement-timeout", String(statementTimeout),
                "--rate", "1e9", "--address-rate", "1e9", "--address-burst", "1e9", "--log-level", "critical",
            ], environment: environment, log: directory.appendingPathComponent("serve-\(index).err"))
        }
        defer { for process in processes { process.stop() } }
        let urls = processes.map(\.url)

        progress("filling \(devices) device stores with \(callsPerDevice) calls each")
        var stores: [DeviceStore] = []
        var outboxes: [[OutboxRecord]] = []
        for index in 0..<devices {
            let device = try await SyncBenchmark.fillDevice(index, directory: directory, callsPerDevice: callsPerDevice, seed: seed,
                                                            enrolAt: urls[index % urls.count])
            stores.append(device.store)
            outboxes.append(device.records)
            result.calls += device.calls
            result.messages += device.records.count
        }
        result.setupSeconds = setupStart.duration(to: .now).seconds

        progress("syncing \(result.messages) messages from \(devices) devices over \(urls.joined(separator: ", "))")
        let configuration = UploaderConfiguration()
        let sync = try await SyncBenchmark.syncAll(stores, urls: urls, configuration: configuration, spread: spread)
        result.seconds = sync.seconds
        (result.frames, result.wireBytes, result.retries, result.dictionaryResets) = (sync.frames, sync.wireBytes, sync.retries, sync.dictionaryResets)
        for process in processes { process.stop() }
        let stats = try cloud.stats()
        // Content answers are journaled during the run, so the cloud holds at least the messages counted here.
        guard stats.messages >= result.messages else {
            throw BenchError(message: "the cloud holds \(stats.messages) messages, the devices sent \(result.messages)")
        }
        result.messages = stats.messages
        result.logRows = stats.logRows
        result.publicItems = stats.publicItems

        progress("baselines: JSON + deflate, COPY of the same rows into the same tables, COPY of the messages as rows")
        result.jsonDeflateBytes = SyncBenchmark.jsonDeflateBytes(outboxes, frame: configuration.maximumMessages)
        (result.copySeconds, result.copiedRows) = try sameRowsBaseline(cloud, transactions: result.frames)
        result.messageRowsCopySeconds = try messageRowsBaseline(outboxes, frame: configuration.maximumMessages)
        return result
    }

    /// The tables ingest writes: the log, the flags and the projections.
    static let ingestTables = Set(["cloud_log", "flags"] + StoreTables.projections.map(\.name))

    /// The baseline of the targets: the rows `cloud` holds in the tables
    /// ingest writes, read back untimed, then `COPY`'d into the same tables of
    /// a new cloud schema, cut into `transactions` committed transactions of
    /// one `COPY` per table; the seconds the writes took and the rows.
    private func sameRowsBaseline(_ cloud: PostgresCloud, transactions: Int) throws -> (seconds: Double, rows: Int) {
        let copy = try cloud.copyForSnapshot(to: directory.appendingPathComponent("rows.slsnap").path)
        defer { StoreFiles.remove(copy.copyPath) }
        var tables: [(name: String, columns: [String], rows: [[PostgresValue]])] = []
        try CloudStoreFile.read(at: copy.copyPath, batch: 10_000) { table, rows in
            guard PostgresSyncBenchmark.ingestTables.contains(table.name) else { return }
            if tables.last?.name != table.name { tables.append((table.name, table.columns, [])) }
            tables[tables.count - 1].rows.append(contentsOf: rows.map { $0.map(\.postgresValue) })
        }
        let total = tables.reduce(0) { $0 + $1.rows.count }
        let location = try databases.make("rows")
        let target = databases.pool(location)
        defer { target.close() }
        return try target.withSession { session in
            try session.executeScript(PostgresSchema.ddl)
            // Untimed: the connection is opened and COPY's path warmed on an empty transaction.
            try session.transaction { _ = try session.query("SELECT count(*) FROM cloud_log") }
            let parts = max(transactions, 1)
            let start = ContinuousClock.now
            for part in 0..<parts {
                try session.transaction {
                    for table in tables {
                        let slice = table.rows[table.rows.count * part / parts ..< table.rows.count * (part + 1) / parts]
                        guard !slice.isEmpty else { continue }
                        _ = try session.copyFrom(table: table.name, columns: table.columns, rows: slice)
                    }
                }
            }
            let seconds = start.duration(to: .now).seconds
            var copied = 0
            for table in tables {
                copied += Int(try session.query("SELECT count(*) FROM \(table.name)")[0][0].int64)
            }
            guard copied == total else { throw BenchError(message: "the baseline copied \(copied) rows of \(total)") }
            return (seconds, total)
        }
    }

    /// The reference baseline: the same messages as rows, one `COPY` and one
    /// committed transaction per frame; the seconds the writes took.
    private func messageRowsBaseline(_ outboxes: [[OutboxRecord]], frame: Int) throws -> Double {
        let location = try databases.make("copy")
        let target = databases.pool(location)
        defer { target.close() }
        return try target.withSession { session in
            // In the schema the pool's search_path names, as the cloud's tables are.
            try session.executeScript("""
                CREATE SCHEMA sightline;
                CREATE TABLE sightline.messages (device bigint, epoch bigint, seq bigint, message bytea,
                                                 PRIMARY KEY (device, epoch, seq))
                """)
            // Untimed: the connection is opened and COPY's path warmed on an empty transaction.
            try session.transaction { _ = try session.query("SELECT count(*) FROM messages") }
            var written = 0
            let start = ContinuousClock.now
            for (device, records) in outboxes.enumerated() {
                for chunkStart in stride(from: 0, to: records.count, by: frame) {
                    let chunk = records[chunkStart..<min(chunkStart + frame, records.count)]
                    try session.transaction {
                        try session.copyFrom(table: "messages", columns: ["device", "epoch", "seq", "message"], rows: chunk.map { record in
                            [.int64(Int64(device)), .int64(Int64(clamping: record.position.epoch.rawValue)),
                             .int64(Int64(clamping: record.position.seq.rawValue)), .bytea(record.encoded)]
                        })
                    }
                    written += chunk.count
                }
            }
            let seconds = start.duration(to: .now).seconds
            let copied = try session.query("SELECT count(*) FROM messages")[0][0].int64
            guard copied == Int64(written) else {
                throw BenchError(message: "the baseline copied \(copied) rows of \(written)")
            }
            return seconds
        }
    }

    /// The server's version, for the report.
    static func serverVersion(_ databases: BenchDatabases, _ location: PostgresLocation) throws -> String {
        let pool = databases.pool(location)
        defer { pool.close() }
        return try pool.withSession { try $0.query("SELECT current_setting('server_version')")[0][0].text }
    }
}
