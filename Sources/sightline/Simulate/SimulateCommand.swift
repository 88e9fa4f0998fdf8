import ArgumentParser
import CloudCore
import Foundation
import IndexModel
import Simulation

extension FaultProfile: ExpressibleByArgument {}
extension WorkloadShape: ExpressibleByArgument {}

/// `sightline simulate`: many devices, a faulty network and one cloud in one
/// deterministic process, checked against the oracle at the end.
struct SimulateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Run a deterministic multi-device simulation with faults and check it against a ground-truth oracle.",
        discussion: """
            Every device is a real device store, the cloud a real cloud store, the network an \
            in-memory transport that loses, duplicates, delays, replays and corrupts frames as the \
            fault profile says. After the faults, the run syncs until quiet and checks its \
            invariants (docs/SIMULATION.md). The same seed and options give the same digest. \
            Exit 1 when any invariant fails.

            Examples:
              sightline simulate --devices 20 --events-per-device 100 --faults swarm --seed 1 --out run
              sightline trace pub-3 --run run
              sightline simulate --seeds 1-50 --faults heavy
              sightline simulate --seed 1 --devices 12 --events-per-device 80 --sabotage threshold   (a failure, on purpose)
            """
    )

    @Option(name: .long, help: "Simulated devices.")
    var devices = 8

    @Option(name: .long, help: "App calls each device makes.")
    var eventsPerDevice = 60

    @Option(name: .long, help: "The seed (a run is replayed by giving the same seed and options).")
    var seed: UInt64?

    @Option(name: .long, help: "none, light, heavy or swarm (each seed draws its own mix).")
    var faults: FaultProfile = .light

    @Option(name: .long, help: "K: distinct devices with a live vote before a public activity is shown.")
    var threshold = 5

    @Option(name: .long, help: ArgumentHelp(
        "Run a campaign over a range of seeds (FIRST-LAST) instead of one run: every seed must pass, and together they must reach every fault and recovery path.",
        valueName: "first-last"))
    var seeds: String?

    @Option(name: .long, help: ArgumentHelp(
        "How the app counts popularity: exact (signals) or ldp (devices learn it in acks and send randomised reports).",
        valueName: "exact|ldp"))
    var popularity = "exact"

    @OptionGroup var privately: PopularityOptions

    @Option(name: .long, help: "Keep every store, the snapshots, report.json, report.html and run.json here (a new or empty directory).")
    var out: String?

    @OptionGroup var storesOption: StoresOption

    @Option(name: .long, help: ArgumentHelp(
        "Make the embedded cloud break one rule on purpose, to see a failure end to end: threshold (shows hashes at K − 1 votes), withdrawals (folds each withdrawal as a vote), or purge (never purges withdrawn content). The run then fails.",
        valueName: "rule"))
    var sabotage: Sabotage?

    @Option(name: .long, help: ArgumentHelp(
        "Past this many devices, each backs up proportionally less often (one backup in devices / N).", valueName: "n"))
    var backupFleet = SimulationOptions().backupFleet

    @Option(name: .long, help: ArgumentHelp("One device in this many searches before it engages.", valueName: "n"))
    var searchStride = SimulationOptions().searchStride

    @Option(name: .long, help: ArgumentHelp(
        "Past this many searching devices, devices search proportionally less often.", valueName: "n"))
    var searchingDevices = SimulationOptions().searchingDevices

    @Option(name: .long, help: ArgumentHelp(
        "Sync with this served cloud (`sightline cloud serve`) over HTTP instead of an embedded one; not deterministic.",
        valueName: "url"))
    var cloud: String?

    @Option(name: .long, help: ArgumentHelp(
        "With --cloud: the served cloud's store file, read (never written) for the checks at the end.",
        valueName: "path"))
    var cloudStore: String?

    @Option(name: .long, help: ArgumentHelp("With --cloud: the app the server enrols devices for.", valueName: "name"))
    var app: AppID?

    @OptionGroup(title: "PostgreSQL") var cloudDatabase: CloudDatabaseOption

    @Option(name: .long, help: ArgumentHelp(
        "busy: every user acts all run, 2 to 22 virtual seconds apart, until their calls are made. day: one simulated day, each user visiting the app a few times in a daily rhythm in their time zone (one in twenty many times) and idle between; --events-per-device then caps a user's calls.",
        valueName: "shape"))
    var workload = WorkloadShape.busy

    @Option(name: .long, help: ArgumentHelp(
        "The memory the device stores may hold, awake and asleep, like 2G or 512M (powers of 1,024). Past it, the least recently used stores sleep: deflated in memory, or for --out, their files closed. The run and its digest are the same whatever the budget. Default: half this machine's memory.",
        valueName: "size"))
    var memoryBudget: ByteSize?

    @Flag(name: .long, help: ArgumentHelp(
        "Run every app call on the event loop's thread. By default, on a machine with two cores or more, the calls run on a second thread; the run and its digest are the same either way."))
    var serial = false

    @OptionGroup var secretOption: EnrolmentSecretOption

    @OptionGroup var output: JSONOption

    @OptionGroup var progressOption: ProgressOption

    func validate() throws {
        if let seeds {
            guard seedRange(seeds) != nil else {
                throw ValidationError("--seeds must be FIRST-LAST with FIRST ≤ LAST, like 1-1000, not \(seeds)")
            }
            guard seed == nil && out == nil else { throw ValidationError("--seeds runs many seeds: it takes neither --seed nor --out") }
            guard !serial else { throw ValidationError("--seeds runs one seed per core, each on one thread: it does not take --serial") }
        }
        if cloudDatabase.cloudDB != nil, seeds != nil || cloud != nil {
            throw ValidationError("--cloud-db keeps one embedded cloud's store: it takes neither --seeds nor --cloud")
        }
        if cloud != nil {
            guard seeds == nil else { throw ValidationError("--cloud runs one simulation against a served cloud: it does not take --seeds") }
            guard cloudStore != nil else {
                throw ValidationError("--cloud needs --cloud-store: the checks read the served cloud's store at the end")
            }
        } else if cloudStore != nil || app != nil || secretOption.enrolmentSecretFile != nil {
            throw ValidationError("--cloud-store, --app and --enrolment-secret-file go with --cloud")
        }
        if try privatePopularity() != nil, cloud != nil {
            throw ValidationError("--popularity is the embedded cloud's: a served cloud counts as its own `cloud serve --popularity` says")
        }
        try storesOption.validate(out: out)
        if let sabotage {
            guard cloud == nil else { throw ValidationError("--sabotage breaks a rule of the embedded cloud: it does not take --cloud") }
            guard sabotage != .threshold || threshold >= 2 else {
                throw ValidationError("--sabotage threshold shows hashes at K − 1 live votes: it needs --threshold 2 or more")
            }
        }
        if let out, FileManager.default.fileExists(atPath: out),
           !((try? FileManager.default.contentsOfDirectory(atPath: out))?.isEmpty ?? false) {
            throw ValidationError("--out \(out) is not empty: give a new or empty directory")
        }
    }

    /// The settings `--popularity ldp` and its options give (the cloud's
    /// default sketch), or nil for exact.
    private func privatePopularity() throws -> PrivatePopularity? {
        switch popularity {
        case "exact":
            guard !privately.isGiven else { throw ValidationError("--epsilon and --daily-budget need --popularity ldp") }
            return nil
        case "ldp":
            return try privately.settings(hashes: 64, buckets: 1024)
        default:
            throw ValidationError("--popularity must be exact or ldp (got \"\(popularity)\")")
        }
    }

    private func seedRange(_ text: String) -> ClosedRange<UInt64>? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let first = UInt64(parts[0]), let last = UInt64(parts[1]), first <= last else { return nil }
        return first...last
    }

    func run() throws {
        if let seeds, let range = seedRange(seeds) { return try campaign(range) }
        let seed = self.seed ?? UInt64.random(in: 1...999_999)
        var options = SimulationOptions(devices: devices, eventsPerDevice: eventsPerDevice, seed: seed, faults: faults,
                                        threshold: threshold, directory: out)
        options.callLane = !serial && ProcessInfo.processInfo.activeProcessorCount > 1
        options.storesInFiles = storesOption.inFiles
        options.sabotage = sabotage
        options.backupFleet = backupFleet
        options.searchStride = searchStride
        options.searchingDevices = searchingDevices
        options.memoryBudget = memoryBudget?.bytes
        options.workload = workload
        options.popularity = try privatePopularity()
        if let cloud, let cloudStore {
            guard let secret = try secretOption.secret() else {
                Output.error("error: --cloud needs the app's enrolment secret: --enrolment-secret-file or SIGHTLINE_ENROLMENT_SECRET")
                throw ExitStatus.invalidInput
            }
            options.remote = HTTPRemoteCloud(url: cloud, storePath: cloudStore, enrolmentSecret: secret)
            options.remoteSecretFile = secretOption.enrolmentSecretFile
            if let app { options.app = app }
        }
        options.cloudDatabase = try cloudDatabase.database()
        Output.error("seed=\(seed) devices=\(devices) events-per-device=\(eventsPerDevice) faults=\(faults.rawValue) threshold=\(threshold)"
                     + (cloudDatabase.cloudDB.map { " cloud-db=\($0)" } ?? "") + (cloud.map { " cloud=\($0) (not deterministic)" } ?? ""))
        let report: SimulationReport
        let simulator: Simulator
        let line = ProgressLine(mode: progressOption.mode, phase: "setting devices up", total: devices, unit: "devices")
        defer { line.finish() }
        do {
            simulator = try Simulator(options: options, progress: line.hear)
            report = try simulator.run()
            line.finish()
        } catch {
            Output.error("error: \(error)")
            throw ExitStatus.checkFailed
        }
        if let out {
            try RunFolder.write(into: out, report: report.jsonValue, html: report.html, manifest: simulator.manifest(report))
        }
        if output.json {
            Output.json(report.jsonValue)
        } else {
            Output.table(report.summaryRows)
        }
        if !report.passed {
            for failure in report.failures {
                Output.error("invariant \(failure.name) failed (seed=\(seed)): \(failure.detail)")
            }
        }
        guard out == nil else {
            // Kept stores are closed (their WAL checkpointed) as the simulator goes.
            if !report.passed { throw ExitStatus.checkFailed }
            return
        }
        // Everything is written and the stores are in memory: the process
        // ends without freeing them one by one, and the system takes their
        // memory back at once.
        simulator.removeScratchDirectory()
        Foundation.exit(report.passed ? 0 : ExitStatus.checkFailed.rawValue)
    }

    private func campaign(_ range: ClosedRange<UInt64>) throws {
        var options = SimulationOptions(devices: devices, eventsPerDevice: eventsPerDevice, faults: faults, threshold: threshold)
        options.storesInFiles = storesOption.inFiles
        options.sabotage = sabotage
        options.backupFleet = backupFleet
        options.searchStride = searchStride
        options.searchingDevices = searchingDevices
        options.memoryBudget = memoryBudget?.bytes
        options.workload = workload
        options.popularity = try privatePopularity()
        Output.error("seeds=\(range.lowerBound)-\(range.upperBound) devices=\(devices) events-per-device=\(eventsPerDevice) faults=\(faults.rawValue) threshold=\(threshold)")
        let cannot = FaultKind.allCases.filter { !faults.injectableKinds.contains($0) }.map(\.rawValue)
        if !cannot.isEmpty {
            Output.error("the \(faults.rawValue) profile cannot inject \(cannot.joined(separator: ", ")): the campaign judges the faults "
                         + "it can inject, and reports the recovery paths without judging them")
        }
        let total = range.count
        let line = ProgressLine(mode: progressOption.mode, phase: "seeds", total: total, unit: "seeds")
        defer { line.finish() }
        let report = CampaignReport.run(seeds: range, options: options, progress: { line.update(done: $0) })
        line.finish()
        let faultCounts = FaultKind.allCases.map { "\($0.rawValue) \(report.faults[$0] ?? 0)" }
        let pathCounts = RecoveryPath.allCases.map { "\($0.rawValue) \(report.coverage[$0] ?? 0)" }
        if output.json {
            Output.json(campaignJSON(report, range: range))
        } else {
            let rate = String(format: "%.1f s, %.1f seeds/s, %.0f calls/s", report.wallSeconds,
                              Double(total) / report.wallSeconds, Double(report.appCalls) / report.wallSeconds)
            var reasons: [String] = []
            if !report.failures.isEmpty { reasons.append("\(report.failures.count) seed(s) failed") }
            if !report.missingFaults.isEmpty { reasons.append("\(report.missingFaults.count) fault kind(s) never injected") }
            if report.judgesPaths && !report.missingPaths.isEmpty { reasons.append("\(report.missingPaths.count) recovery path(s) never reached") }
            Output.table([
                ["verdict", reasons.isEmpty ? "pass" : "fail: " + reasons.joined(separator: ", ")],
                ["seeds", "\(range.lowerBound)-\(range.upperBound): \(total - report.failures.count) passed, \(report.failures.count) failed"],
                ["faults", faultCounts.joined(separator: ", ")],
                ["recovery", pathCounts.joined(separator: ", ")],
                ["wall time", rate],
            ])
        }
        for failure in report.failures {
            Output.error("seed \(failure.seed) failed: \(failure.problem)\n  replay: \(failure.replay)")
        }
        let missingFaults: [String] = report.missingFaults.map { $0.rawValue }
        let missingPaths: [String] = report.missingPaths.map { $0.rawValue }
        if !missingFaults.isEmpty { Output.error("never injected: " + missingFaults.joined(separator: ", ")) }
        if !missingPaths.isEmpty {
            Output.error("never reached: " + missingPaths.joined(separator: ", ") + (report.judgesPaths ? "" : " (not judged)"))
        }
        if !report.passed { throw ExitStatus.checkFailed }
    }

    private func campaignJSON(_ report: CampaignReport, range: ClosedRange<UInt64>) -> JSONValue {
        var faultObject = JSONObject()
        for kind in FaultKind.allCases { faultObject[kind.rawValue] = .integer(Int64(report.faults[kind] ?? 0)) }
        var coverageObject = JSONObject()
        for path in RecoveryPath.allCases { coverageObject[path.rawValue] = .integer(Int64(report.coverage[path] ?? 0)) }
        let failures: [JSONValue] = report.failures.map { failure in
            var object: JSONObject = ["seed": .string(String(failure.seed)), "replay": .string(failure.replay),
                                      "problem": .string(failure.problem)]
            if let digest = failure.digest { object["digest"] = .string(digest) }
            return .object(object)
        }
        return .object([
            "passed": .bool(report.passed),
            "seeds": .string("\(range.lowerBound)-\(range.upperBound)"),
            "failures": .array(failures),
            "neverInjected": .array(report.missingFaults.map { .string($0.rawValue) }),
            "cannotInject": .array(report.uninjectable.map { .string($0.rawValue) }),
            "neverReached": .array(report.missingPaths.map { .string($0.rawValue) }),
            "pathsJudged": .bool(report.judgesPaths),
            "faults": .object(faultObject),
            "coverage": .object(coverageObject),
            "appCalls": .integer(Int64(report.appCalls)),
            "wallSeconds": .double((report.wallSeconds * 1_000).rounded() / 1_000),
        ])
    }
}

extension Sabotage: ExpressibleByArgument {}
