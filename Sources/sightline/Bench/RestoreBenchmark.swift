import ArgumentParser
import DeviceStore
import Foundation
import GRDB
import IndexModel
import Snapshot
import Workloads

/// `bench restore`: snapshot and verified restore of a device store, beside
/// `VACUUM INTO` and a plain file copy of the same store in the same run.
struct RestoreBenchmark {
    let events: Int
    let seed: UInt64
    let directory: URL
    /// Keep the built store (`restore-bench.sqlite`) in `directory`, for a
    /// peer such as Litestream to snapshot and restore the same store.
    var keep = false

    struct Result {
        var events = 0
        var storeBytes = 0
        var snapshotBytes = 0
        var buildSeconds = 0.0
        var snapshotSeconds = 0.0
        var restoreSeconds = 0.0
        /// The restore's own steps, as it timed them.
        var restorePhases: [RestorePhase] = []
        var vacuumSeconds = 0.0
        var copySeconds = 0.0
    }

    static let targetSnapshotSeconds = 2.3
    static let targetRestoreSeconds = 3.5

    func run(progress: (String) -> Void) throws -> Result {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let store = directory.appendingPathComponent("restore-bench.sqlite").path
        let snapshot = directory.appendingPathComponent("restore-bench.snap").path
        let restored = directory.appendingPathComponent("restore-bench-restored.sqlite").path
        let vacuumed = directory.appendingPathComponent("restore-bench-vacuum.sqlite").path
        let copied = directory.appendingPathComponent("restore-bench-copy.sqlite").path
        for path in [store, snapshot, restored, vacuumed, copied] {
            StoreFiles.remove(path)
        }
        var result = Result()
        progress("building a store of \(events) events")
        let buildStart = ContinuousClock.now
        let clock = ManualClock(Timestamp(millisecondsSince1970: 1_795_000_000_000))
        do {
            let device = try DeviceStore(at: .file(store), options: StoreOptions(clock: clock, random: SeededRandom(seed: seed),
                                                                                durability: .normal))
            var workload = SyntheticWorkload(seed: seed)
            var batch: [AppOperation] = []
            var made = 0
            while made < events {
                batch.append(workload.nextOperation())
                if batch.count == 1000 {
                    for outcome in try device.performAll(batch) {
                        made += outcome.seqs.map { Int($0.upperBound.rawValue - $0.lowerBound.rawValue) + 1 } ?? 0
                    }
                    batch.removeAll(keepingCapacity: true)
                }
            }
        }
        // Fold the WAL into the file, so the plain copy below copies everything.
        let checkpoint = try DatabaseQueue(path: store)
        try checkpoint.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        try checkpoint.close()
        result.buildSeconds = buildStart.duration(to: .now).seconds
        result.storeBytes = fileSize(store)
        let device = try DeviceStore(at: .file(store), options: StoreOptions(clock: clock))
        result.events = Int(try device.journalHead().seq.rawValue)

        progress("snapshot")
        flushDirtyPages()
        let snapshotStart = ContinuousClock.now
        try device.snapshot(to: snapshot)
        result.snapshotSeconds = snapshotStart.duration(to: .now).seconds
        result.snapshotBytes = fileSize(snapshot)

        progress("VACUUM INTO and a plain copy")
        let queue = try DatabaseQueue(path: store)
        flushDirtyPages()
        let vacuumStart = ContinuousClock.now
        try queue.writeWithoutTransaction { db in try db.execute(sql: "VACUUM INTO ?", arguments: [vacuumed]) }
        result.vacuumSeconds = vacuumStart.duration(to: .now).seconds
        try queue.close()
        flushDirtyPages()
        let copyStart = ContinuousClock.now
        try FileManager.default.copyItem(atPath: store, toPath: copied)
        result.copySeconds = copyStart.duration(to: .now).seconds

        progress("restore with full verification")
        flushDirtyPages()
        let restoreStart = ContinuousClock.now
        result.restorePhases = try DeviceStore.restore(snapshot: snapshot, to: restored, options: StoreOptions(clock: clock)).phases
        result.restoreSeconds = restoreStart.duration(to: .now).seconds
        for path in [snapshot, restored, vacuumed, copied] + (keep ? [] : [store]) {
            StoreFiles.remove(path)
        }
        return result
    }

    /// Writes every dirty page of the system to disk, so that a timed step
    /// does not share the disk with the writeback of the files the steps
    /// before it wrote (hundreds of MiB by the restore, whose own fsync would
    /// otherwise wait behind them).
    private func flushDirtyPages() {
        sync()
    }

    private func fileSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
    }
}

struct RestoreBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Snapshot and verified restore of a device store, beside VACUUM INTO and a plain copy.",
        discussion: """
            Builds a store of --events journal events (untimed), then times `device snapshot` \
            (backup API copy, deflate, manifest, fsync), VACUUM INTO and a plain file copy of \
            the same store, and `device restore` with full verification (checksum, integrity \
            check, hash chain, projections against a rebuild). Targets: snapshot at most \
            2.3 s and restore at most 3.5 s for 1,000,000 events.
            """
    )

    @Option(name: .long, help: "Journal events in the store (1000…10000000).")
    var events = 1_000_000

    @Option(name: .long, help: "The workload seed.")
    var seed: UInt64 = 1

    @Option(name: .long, help: ArgumentHelp("Where the stores are written (default: a new temporary directory, removed afterwards).",
                                            valueName: "path"))
    var dir: String?

    @Flag(name: .long, help: ArgumentHelp("Keep the built store in --dir as restore-bench.sqlite.",
                                          discussion: "For a peer to snapshot and restore the same store (tools/bench/litestream-compare)."))
    var keep = false

    @Flag(name: .long, help: "Exit with status 1 when a target is missed.")
    var check = false

    @OptionGroup var output: JSONOption

    @OptionGroup var progressOption: ProgressOption

    func validate() throws {
        guard (1000...10_000_000).contains(events) else {
            throw ValidationError("--events must be between 1000 and 10000000 (got \(events))")
        }
        guard !keep || dir != nil else {
            throw ValidationError("--keep needs --dir: the store is kept there")
        }
    }

    func run() async throws {
        let result: RestoreBenchmark.Result = try await BenchRun.run(dir: dir, name: "restore", progress: progressOption.mode) { directory, progress in
            try RestoreBenchmark(events: events, seed: seed, directory: directory, keep: keep).run(progress: progress)
        }
        let scale = Double(result.events) / 1_000_000
        let snapshotTarget = RestoreBenchmark.targetSnapshotSeconds * max(scale, 0.001)
        let restoreTarget = RestoreBenchmark.targetRestoreSeconds * max(scale, 0.001)
        let meetsSnapshot = result.snapshotSeconds <= snapshotTarget
        let meetsRestore = result.restoreSeconds <= restoreTarget
        if output.json {
            Output.json(.object([
                "benchmark": .string("restore"),
                "events": .integer(Int64(result.events)),
                "storeBytes": .integer(Int64(result.storeBytes)),
                "snapshotBytes": .integer(Int64(result.snapshotBytes)),
                "buildSeconds": .double(result.buildSeconds),
                "snapshotSeconds": .double(result.snapshotSeconds),
                "restoreSeconds": .double(result.restoreSeconds),
                "vacuumIntoSeconds": .double(result.vacuumSeconds),
                "copySeconds": .double(result.copySeconds),
                "restorePhases": .array(result.restorePhases.map { phase in
                    .object(["phase": .string(phase.name), "seconds": .double(phase.duration.seconds)])
                }),
                "meetsSnapshotTarget": .bool(meetsSnapshot),
                "meetsRestoreTarget": .bool(meetsRestore),
            ]))
        } else {
            Output.line(String(format: "bench restore  %d events, store %.1f MiB, snapshot %.1f MiB (built in %.1f s)",
                               result.events, Double(result.storeBytes) / 1_048_576, Double(result.snapshotBytes) / 1_048_576,
                               result.buildSeconds))
            Output.table([
                ["", "seconds", "target", ""],
                ["snapshot", String(format: "%.2f", result.snapshotSeconds), String(format: "≤ %.2f", snapshotTarget),
                 meetsSnapshot ? "met" : "MISSED"],
                ["restore (verified)", String(format: "%.2f", result.restoreSeconds), String(format: "≤ %.2f", restoreTarget),
                 meetsRestore ? "met" : "MISSED"],
                ["VACUUM INTO", String(format: "%.2f", result.vacuumSeconds), "", ""],
                ["plain copy", String(format: "%.2f", result.copySeconds), "", ""],
            ])
            Output.line("restore phases:")
            Output.table(result.restorePhases.map { ["  " + $0.name, String(format: "%.3f", $0.duration.seconds)] })
        }
        if check && !(meetsSnapshot && meetsRestore) {
            Output.error("restore missed a target")
            throw ExitStatus.checkFailed
        }
    }
}
