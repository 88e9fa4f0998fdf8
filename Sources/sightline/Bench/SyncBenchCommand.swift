import ArgumentParser
import CloudCore
import CloudPostgres
import CloudSQLite
import DeviceStore
import Foundation
import IndexModel

struct SyncBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "End-to-end sync over loopback HTTP with a real server: messages per second and wire bytes.",
        discussion: """
            Fills --devices device stores with --calls app calls each (untimed), then times every \
            device syncing its whole outbox at once through HTTP to `CloudServer` and \
            `CloudIndex.ingest`, until every message is acknowledged. In the same run: the \
            request bytes beside the same messages as JSON Lines deflated at level 6, and the \
            same messages inserted as rows through the raw SQLite C API. Targets: at least \
            150,000 messages per second end to end; wire bytes at most 0.35 times JSON + deflate.

            With --db postgres://USER@HOST:PORT/DATABASE the cloud is on PostgreSQL: the run \
            makes a new database on that server (the role must be allowed to create databases) \
            and drops it at the end, and serves it from --servers `sightline cloud serve` \
            processes of this binary, each with a pool of --pool-size connections; the devices \
            are spread over them. Its baselines, after the servers stop, each in another new \
            database: the rows the run left in the tables ingest writes (the log, the flags, the \
            projections) COPY'd into the same tables, cut into as many committed transactions as \
            the run had frames, one COPY per table in each, which the targets are judged against; \
            and, for reference, the same messages as (device, epoch, seq, message) rows, one COPY \
            per frame. Targets: at least 100,000 messages per second and 0.5 times the first.
            """
    )

    @OptionGroup var fleet: FleetBenchOptions

    @Option(name: .long, help: ArgumentHelp(
        "Run the cloud on PostgreSQL: a server as postgres://USER@HOST:PORT/DATABASE, where the run makes (and drops) databases of its own.",
        valueName: "url"))
    var db: String?

    @Option(name: .long, help: ArgumentHelp("With --db: the cloud serve processes the devices are spread over.", valueName: "count"))
    var servers: Int = 1

    @Option(name: .long, help: ArgumentHelp("""
        With --db: how requests go to the servers: each device to one (device), or each request to the next \
        server (frame), as a round-robin load balancer sends them.
        """, valueName: "device|frame"))
    var spread: SyncBenchmark.Spread = .device

    @OptionGroup(title: "PostgreSQL") var postgres: PostgresOptions

    @OptionGroup var output: JSONOption

    @OptionGroup var progressOption: ProgressOption

    func validate() throws {
        if let db {
            try CloudStoreOption.validatePostgresURL(db, option: "--db",
                                                     otherwise: "without --db the cloud is a SQLite file in --dir")
            guard (1...16).contains(servers) else { throw ValidationError("--servers must be between 1 and 16 (got \(servers))") }
        } else if servers != 1 || spread != .device {
            throw ValidationError("--servers and --spread need --db")
        }
    }

    func run() async throws {
        if let db {
            try await runPostgres(db)
            return
        }
        let result: SyncBenchmark.Result = try await BenchRun.run(dir: fleet.dir, name: "sync", progress: progressOption.mode) { directory, progress in
            try await SyncBenchmark(devices: fleet.devices, callsPerDevice: fleet.calls, seed: fleet.seed, directory: directory).run(progress: progress)
        }
        let meetsRate = result.messagesPerSecond >= SyncBenchmark.targetMessagesPerSecond
        let meetsWire = result.wireRatio <= SyncBenchmark.targetWireRatio
        if output.json {
            var object = figures(result)
            object["rawMessagesPerSecond"] = .double(result.rawMessagesPerSecond.rounded())
            object["meetsRateTarget"] = .bool(meetsRate)
            object["meetsWireTarget"] = .bool(meetsWire)
            Output.json(.object(object))
        } else {
            Output.line("bench sync  seed=\(fleet.seed)  devices=\(fleet.devices)  calls=\(result.calls)  SQLite \(AppendBenchmark.sqliteVersion)")
            Output.line(String(format: "setup (untimed): %.1f s; %d messages in %d frames (%d retries), %d public items",
                               result.setupSeconds, result.messages, result.frames, result.retries, result.publicItems))
            Output.table([
                ["", "messages/s", "ratio", "target", ""],
                ["end to end (HTTP)", String(format: "%.0f", result.messagesPerSecond),
                 String(format: "%.2f× raw", result.messagesPerSecond / result.rawMessagesPerSecond),
                 "≥ 150000", meetsRate ? "met" : "MISSED"],
                ["raw SQLite inserts", String(format: "%.0f", result.rawMessagesPerSecond), "", "", ""],
            ])
            SyncBenchCommand.printWire(result)
        }
        if fleet.check && !(meetsRate && meetsWire) {
            Output.error("sync missed a target")
            throw ExitStatus.checkFailed
        }
    }
}

extension SyncBenchCommand {
    /// `bench sync --db URL`: the PostgreSQL backend against `COPY`.
    func runPostgres(_ url: String) async throws {
        let databases = try BenchDatabases.on(url, postgres.settings)
        defer { databases.dropAll() }
        let result: PostgresSyncBenchmark.Result = try await BenchRun.run(dir: fleet.dir, name: "sync", progress: progressOption.mode) { directory, progress in
            try await PostgresSyncBenchmark(devices: fleet.devices, callsPerDevice: fleet.calls, seed: fleet.seed, directory: directory,
                                            databases: databases, servers: servers, spread: spread, poolSize: postgres.poolSize,
                                            statementTimeout: postgres.statementTimeout).run(progress: progress)
        }
        let meetsRate = result.messagesPerSecond >= PostgresSyncBenchmark.targetMessagesPerSecond
        let meetsRatio = result.ratio >= PostgresSyncBenchmark.targetRatio
        let meetsWire = result.wireRatio <= SyncBenchmark.targetWireRatio
        if output.json {
            var object = figures(result)
            let postgresFields: JSONObject = [
                "backend": .string("postgres"),
                "postgresVersion": .string(result.serverVersion),
                "servers": .integer(Int64(servers)),
                "spread": .string(spread.rawValue),
                "poolSize": .integer(Int64(postgres.poolSize)),
                "logRows": .integer(Int64(result.logRows)),
                "copySeconds": .double(result.copySeconds),
                "copyMessagesPerSecond": .double(result.copyMessagesPerSecond.rounded()),
                "copiedRows": .integer(Int64(result.copiedRows)),
                "ratio": .double((result.ratio * 1000).rounded() / 1000),
                "messageRowsCopySeconds": .double(result.messageRowsCopySeconds),
                "messageRowsCopyMessagesPerSecond": .double(result.messageRowsCopyMessagesPerSecond.rounded()),
                "messageRowsRatio": .double((result.messageRowsRatio * 1000).rounded() / 1000),
                "targetMessagesPerSecond": .double(PostgresSyncBenchmark.targetMessagesPerSecond),
                "targetRatio": .double(PostgresSyncBenchmark.targetRatio),
                "meetsRateTarget": .bool(meetsRate),
                "meetsRatioTarget": .bool(meetsRatio),
                "meetsWireTarget": .bool(meetsWire),
            ]
            for member in postgresFields.members { object[member.key] = member.value }
            Output.json(.object(object))
        } else {
            Output.line("bench sync  seed=\(fleet.seed)  devices=\(fleet.devices)  calls=\(result.calls)  PostgreSQL \(result.serverVersion)  "
                        + "servers=\(servers)  spread=\(spread.rawValue)  pool-size=\(postgres.poolSize)")
            Output.line(String(format: "setup (untimed): %.1f s; %d messages in %d frames (%d retries, %d sent again alone), %d log rows, %d public items",
                               result.setupSeconds, result.messages, result.frames, result.retries, result.dictionaryResets, result.logRows,
                               result.publicItems))
            Output.table([
                ["", "messages/s", "ratio", "target", ""],
                ["end to end (HTTP)", String(format: "%.0f", result.messagesPerSecond), "", "≥ 100000", meetsRate ? "met" : "MISSED"],
                ["COPY of the same \(result.copiedRows) rows into the same tables", String(format: "%.0f", result.copyMessagesPerSecond),
                 "", "", ""],
                ["end to end ÷ COPY of the same rows", "", String(format: "%.2f", result.ratio), "≥ 0.5", meetsRatio ? "met" : "MISSED"],
                ["COPY of the messages as rows (reference)", String(format: "%.0f", result.messageRowsCopyMessagesPerSecond), "", "", ""],
                ["end to end ÷ COPY of the messages", "", String(format: "%.2f", result.messageRowsRatio), "", ""],
            ])
            SyncBenchCommand.printWire(result)
        }
        if fleet.check && !(meetsRate && meetsRatio && meetsWire) {
            Output.error("sync missed a target")
            throw ExitStatus.checkFailed
        }
    }
}

/// What both sync benchmarks, on SQLite and on PostgreSQL, measure alike.
protocol SyncFigures {
    var calls: Int { get }
    var messages: Int { get }
    var frames: Int { get }
    var retries: Int { get }
    /// Frames sent again deflated alone: the cloud could not make their dictionary.
    var dictionaryResets: Int { get }
    var publicItems: Int { get }
    var seconds: Double { get }
    var messagesPerSecond: Double { get }
    var wireBytes: Int { get }
    var jsonDeflateBytes: Int { get }
    var wireRatio: Double { get }
    var setupSeconds: Double { get }
}

extension SyncBenchmark.Result: SyncFigures {}
extension PostgresSyncBenchmark.Result: SyncFigures {}

extension SyncBenchCommand {
    /// The `--json` members both backends report.
    func figures(_ result: some SyncFigures) -> JSONObject {
        [
            "benchmark": .string("sync"),
            "seed": .integer(Int64(bitPattern: fleet.seed)),
            "devices": .integer(Int64(fleet.devices)),
            "calls": .integer(Int64(result.calls)),
            "messages": .integer(Int64(result.messages)),
            "frames": .integer(Int64(result.frames)),
            "retries": .integer(Int64(result.retries)),
            "dictionaryResets": .integer(Int64(result.dictionaryResets)),
            "publicItems": .integer(Int64(result.publicItems)),
            "seconds": .double(result.seconds),
            "messagesPerSecond": .double(result.messagesPerSecond.rounded()),
            "wireBytes": .integer(Int64(result.wireBytes)),
            "jsonDeflateBytes": .integer(Int64(result.jsonDeflateBytes)),
            "wireBytesPerMessage": .double(Double(result.wireBytes) / Double(result.messages)),
            "wireRatio": .double(result.wireRatio),
            "setupSeconds": .double(result.setupSeconds),
        ]
    }

    /// The wire bytes beside JSON Lines deflated at level 6, and their target.
    static func printWire(_ result: some SyncFigures) {
        Output.table([
            ["", "bytes", "bytes/message", "ratio", "target", ""],
            ["wire (frames)", String(result.wireBytes), String(format: "%.2f", Double(result.wireBytes) / Double(result.messages)),
             String(format: "%.2f", result.wireRatio), "≤ \(SyncBenchmark.targetWireRatio)",
             result.wireRatio <= SyncBenchmark.targetWireRatio ? "met" : "MISSED"],
            ["JSON + deflate -6", String(result.jsonDeflateBytes),
             String(format: "%.2f", Double(result.jsonDeflateBytes) / Double(result.messages)), "", "", ""],
        ])
    }
}
