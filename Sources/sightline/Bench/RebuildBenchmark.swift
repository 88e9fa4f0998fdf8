import ArgumentParser
import ByteCoding
import CloudCore
import CloudPostgres
import CloudSQLite
import DeviceStore
import Foundation
import IndexModel
import Snapshot
import SyncWire

/// `bench rebuild`: how fast the cloud replays its log into fresh projections.
///
/// Untimed: the `bench sync` workload's devices (in memory) send their outboxes
/// straight to `CloudIndex.ingest` (no HTTP) to fill a cloud store file. Timed:
/// `rebuildProjections()` (empty the projections, replay every log row, fold
/// every message, one transaction), then a check that the digest is unchanged.
/// Baseline in the same run: the least any rebuild must do, reading every log
/// row through the raw SQLite C API and inflating its payload with zlib.
struct RebuildBenchmark {
    let devices: Int
    let callsPerDevice: Int
    let seed: UInt64
    let directory: URL

    struct Result {
        var messages = 0
        var logRows = 0
        var seconds = 0.0
        var rawSeconds = 0.0
        var digestUnchanged = false

        var messagesPerSecond: Double { Double(messages) / seconds }
        var rawMessagesPerSecond: Double { Double(messages) / rawSeconds }
    }

    static let targetMessagesPerSecond = 500_000.0

    func run(progress: (String) -> Void) throws -> Result {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("rebuild-cloud.sqlite").path
        StoreFiles.remove(path)
        let clock = ManualClock(Timestamp(millisecondsSince1970: 1_795_000_000_000))
        let cloud = try CloudIndex(at: .file(path), options: CloudOptions(clock: clock, random: SeededRandom(seed: seed), threshold: 3))
        var result = try RebuildBenchmark.fillAndRebuild(cloud, devices: devices, callsPerDevice: callsPerDevice, seed: seed,
                                                         clock: clock, progress: progress)

        progress("baseline: raw SQLite scan and zlib inflate of the log")
        let database = try RawSQLite(path: path)
        let scan = try database.prepare("SELECT codec, payload, uncompressed_length FROM cloud_log ORDER BY app, seq")
        let rawStart = ContinuousClock.now
        var inflated = 0
        try scan.forEachRow { row in
            guard case .integer(let codec) = row[0], case .blob(let payload) = row[1], case .integer(let length) = row[2] else { return }
            // A frame deflated against a dictionary is logged stored.
            inflated += codec == Int64(UploadFrame.Codec.deflate.rawValue)
                ? try Deflate.decompress(payload, limit: Int(length)).count : payload.count
        }
        result.rawSeconds = rawStart.duration(to: .now).seconds
        guard inflated > 0 || result.messages == 0 else { throw RawSQLiteError(message: "the baseline inflated nothing") }
        return result
    }

    /// Fills `cloud`'s log: each device's calls made in an in-memory store,
    /// the device enrolled, and its outbox sent frame by frame straight to
    /// `ingest` (no HTTP), each ack handed back to the device.
    /// Registers the app, fills `cloud` with the workload's frames, and
    /// times its rebuild: the result, but for the baseline, which each
    /// backend measures its own way.
    static func fillAndRebuild(_ cloud: any CloudStore, devices: Int, callsPerDevice: Int, seed: UInt64, clock: ManualClock,
                               progress: (String) -> Void) throws -> Result {
        try cloud.registerApp(SyncBenchmark.app, enrolmentSecret: SyncBenchmark.secret)
        progress("filling the cloud log from \(devices) devices with \(callsPerDevice) calls each")
        try fill(cloud, devices: devices, callsPerDevice: callsPerDevice, seed: seed, clock: clock)
        var result = Result()
        let stats = try cloud.stats()
        result.messages = stats.messages
        result.logRows = stats.logRows
        let before = try cloud.projectionDigest()

        progress("rebuilding \(result.messages) messages from \(result.logRows) log rows")
        let start = ContinuousClock.now
        try cloud.rebuildProjections()
        result.seconds = start.duration(to: .now).seconds
        result.digestUnchanged = try cloud.projectionDigest() == before
        return result
    }

    static func fill(_ cloud: any CloudStore, devices: Int, callsPerDevice: Int, seed: UInt64, clock: ManualClock) throws {
        for index in 0..<devices {
            let store = try DeviceStore(at: .memory, options: StoreOptions(clock: clock, random: SeededRandom(seed: seed &+ UInt64(index)),
                                                                           app: SyncBenchmark.app))
            let calls = SyncBenchmark.calls(device: index, count: callsPerDevice, seed: seed)
            for start in stride(from: 0, to: calls.count, by: 1000) {
                _ = try store.performAll(Array(calls[start..<min(start + 1000, calls.count)]))
            }
            try store.setDeviceKey(try cloud.enrol(app: SyncBenchmark.app, device: store.deviceID,
                                                   enrolmentSecret: SyncBenchmark.secret))
            var run = try store.beginSync()
            var action = try store.perform(run.next(now: clock.now()), in: &run, now: clock.now())
            while case .send(let frame) = action {
                action = try store.perform(run.received(cloud.ingest(frame.encoded).reply, now: clock.now()), in: &run, now: clock.now())
            }
            if case .finished(let report) = action, let failure = report.failure {
                throw RawSQLiteError(message: "ingest refused: \(failure)")
            }
        }
    }
}

struct RebuildBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rebuild",
        abstract: "Cloud rebuild: messages folded per second when the log is replayed into fresh projections.",
        discussion: """
            Fills a cloud store with the `bench sync` workload (untimed, no HTTP), then times \
            rebuildProjections() and checks the digest is unchanged. Baseline in the same run: \
            reading every log row with the raw SQLite C API and inflating it with zlib. Target: \
            at least 500,000 messages per second.

            With --db postgres://USER@HOST:PORT/DATABASE the cloud store is on PostgreSQL, in a \
            database the run makes on that server (the role must be allowed to create databases) \
            and drops at the end. The baseline is then reading every log row's payload from \
            PostgreSQL in one query and inflating it.
            """
    )

    @OptionGroup var fleet: FleetBenchOptions

    @Option(name: .long, help: ArgumentHelp(
        "Put the cloud store on PostgreSQL: a server as postgres://USER@HOST:PORT/DATABASE, where the run makes (and drops) a database of its own.",
        valueName: "url"))
    var db: String?

    @OptionGroup(title: "PostgreSQL") var postgres: PostgresOptions

    @OptionGroup var output: JSONOption

    @OptionGroup var progressOption: ProgressOption

    func validate() throws {
        if let db {
            try CloudStoreOption.validatePostgresURL(db, option: "--db",
                                                     otherwise: "without --db the cloud is a SQLite file in --dir")
        }
    }

    func run() async throws {
        var serverVersion: String?
        let result: RebuildBenchmark.Result
        if let db {
            let databases = try BenchDatabases.on(db, postgres.settings)
            defer { databases.dropAll() }
            (result, serverVersion) = try await BenchRun.run(dir: fleet.dir, name: "rebuild", progress: progressOption.mode) { _, progress in
                try PostgresRebuildBenchmark(devices: fleet.devices, callsPerDevice: fleet.calls, seed: fleet.seed,
                                             databases: databases).run(progress: progress)
            }
        } else {
            result = try await BenchRun.run(dir: fleet.dir, name: "rebuild", progress: progressOption.mode) { directory, progress in
                try RebuildBenchmark(devices: fleet.devices, callsPerDevice: fleet.calls, seed: fleet.seed, directory: directory)
                    .run(progress: progress)
            }
        }
        let meets = result.messagesPerSecond >= RebuildBenchmark.targetMessagesPerSecond
        if output.json {
            var object: JSONObject = [
                "benchmark": .string("rebuild"),
                "seed": .integer(Int64(bitPattern: fleet.seed)),
                "messages": .integer(Int64(result.messages)),
                "logRows": .integer(Int64(result.logRows)),
                "seconds": .double(result.seconds),
                "messagesPerSecond": .double(result.messagesPerSecond.rounded()),
                "rawMessagesPerSecond": .double(result.rawMessagesPerSecond.rounded()),
                "digestUnchanged": .bool(result.digestUnchanged),
                "meetsTarget": .bool(meets),
            ]
            if let serverVersion {
                object["backend"] = .string("postgres")
                object["postgresVersion"] = .string(serverVersion)
            }
            Output.json(.object(object))
        } else {
            Output.line("bench rebuild  seed=\(fleet.seed)  devices=\(fleet.devices)  \(result.messages) messages in \(result.logRows) log rows"
                        + (serverVersion.map { "  PostgreSQL \($0)" } ?? ""))
            Output.table([
                ["", "messages/s", "ratio", "target", ""],
                ["rebuild", String(format: "%.0f", result.messagesPerSecond),
                 String(format: "%.2f× raw", result.messagesPerSecond / result.rawMessagesPerSecond), "≥ 500000", meets ? "met" : "MISSED"],
                [serverVersion == nil ? "raw scan + inflate" : "SELECT + inflate", String(format: "%.0f", result.rawMessagesPerSecond), "", "", ""],
            ])
            Output.line("digest after rebuild: " + (result.digestUnchanged ? "unchanged" : "CHANGED"))
        }
        if !result.digestUnchanged {
            Output.error("the rebuilt projections differ from the incremental ones")
            throw ExitStatus.checkFailed
        }
        if fleet.check && !meets {
            Output.error("rebuild missed its target")
            throw ExitStatus.checkFailed
        }
    }
}
