import CloudCore
import Foundation
import IndexModel
import SyncWire

/// The state of a restore drill as it runs.
struct DrillState {
    let side: DrillSide
    var backupAt: Int64?
    var backup: SimDevice.Backup?
    var destroyedAt: Int64?
    var restoredAt: Int64?
    var restoreWall: Duration = .zero
    /// Per device, the outbox head at the restore; caught up once the cloud acknowledged them all.
    var targets: [Int: OutboxPosition] = [:]
    var caughtUpAt: Int64?
    /// Journal events the device wipe destroyed, by kind.
    var lostEventKinds: [String: Int] = [:]
    /// Cloud side: the log rows the backup held, and those the restored
    /// cloud came up with (fewer when the restore was cut back).
    var backupLogRows: Int?
    var restoredLogRows: Int?

    init(side: DrillSide) {
        self.side = side
    }
}

/// What a restore drill measured: RPO (what was lost, and which), RTO (how
/// long until the system converged again), and double counts, which must be 0.
public struct DrillReport: Sendable {
    public let side: DrillSide
    public let simulation: SimulationReport
    /// Virtual seconds from the backup to the destruction: the window at risk.
    public let windowSeconds: Double
    /// Journal events the destroyed store held after its backup, by kind
    /// (device side; the cloud keeps nothing a device cannot resend).
    public let eventsLost: [String: Int]
    /// Messages the cloud holds of no call, or twice: must be 0.
    public let doubleCounts: Int
    /// Messages implied by calls that the cloud does not hold and never will
    /// (the device side's old epoch beyond what reached the cloud before the wipe).
    public let messagesLost: Int
    /// Virtual seconds from the loss until the cloud again acknowledged
    /// everything the devices held when the restore finished (the outage of
    /// 10 s included); nil when that never happened before the run ended.
    public let rtoVirtualSeconds: Double?
    /// The devices the cloud had not caught up with when the run ended, in
    /// words: what each held at the restore and what the cloud acknowledged.
    public let behind: [String]
    /// Wall seconds the restore itself took (verification included).
    public let restoreWallSeconds: Double
    /// Cloud side: virtual milliseconds before the backup the restore was
    /// cut back to (`cloud restore --to-time`), if it was, and the log rows
    /// of the backup the cut removed.
    public let cutBackMilliseconds: Int64?
    public let logRowsCut: Int
    /// Hashes whose vote a device stated again: the cloud's answers to the
    /// restored device's reindex ask, and epochs the cloud ended short.
    public let votesRestated: Int
    /// What the drill's folder holds, when it was given one (`--out`).
    public let manifest: RunManifest?

    /// The cloud acknowledged again everything the devices held at the restore.
    public var caughtUp: Bool { rtoVirtualSeconds != nil }

    public var passed: Bool { simulation.passed && doubleCounts == 0 && caughtUp }

    /// Runs a drill: the workload on a perfect network, a backup halfway,
    /// destruction at three quarters, a restore 10 virtual seconds later
    /// (with reindexing on the device side), then convergence and the checks.
    public static func run(side: DrillSide, devices: Int = 5, eventsPerDevice: Int = 60, seed: UInt64 = 1,
                           threshold: Int = 3, directory: String? = nil, cloudDatabase: (any CloudDatabase)? = nil,
                           cutBackMilliseconds: Int64? = nil, storesInFiles: Bool = false,
                           progress: ((SimulationProgress) -> Void)? = nil) throws(SimulationError) -> DrillReport {
        var options = SimulationOptions(devices: devices, eventsPerDevice: eventsPerDevice, seed: seed, faults: .none,
                                        threshold: threshold, directory: directory)
        options.storesInFiles = storesInFiles
        options.drill = side
        options.drillCutBack = cutBackMilliseconds
        options.cloudDatabase = cloudDatabase
        guard eventsPerDevice >= 4 else { throw SimulationError("a drill needs at least 4 calls per device") }
        let simulator = try Simulator(options: options, progress: progress)
        let report = try simulator.run()
        return try DrillReport(simulator: simulator, report: report)
    }

    /// The report of a drill `simulator` ran. A recovery that never caught
    /// up is a failed drill with its RTO missing, not an error: it says
    /// which devices the cloud was behind and by how much.
    init(simulator: Simulator, report: SimulationReport) throws(SimulationError) {
        guard let drill = simulator.drill, let backupAt = drill.backupAt, let destroyedAt = drill.destroyedAt,
              drill.restoredAt != nil else {
            throw SimulationError("the drill's backup, destruction or restore did not happen before the run ended")
        }
        do {
            behind = try simulator.drillBehind().map {
                "device \($0.device) held through \($0.held) at the restore; the cloud acknowledged through \($0.acknowledged)"
            }
        } catch {
            throw SimulationError("the devices' sync status could not be read after the drill: \(error)")
        }
        side = drill.side
        simulation = report
        windowSeconds = Double(destroyedAt - backupAt) / 1_000
        eventsLost = drill.lostEventKinds
        doubleCounts = simulator.lastRun?.matching.extraMessages ?? 0
        messagesLost = simulator.lastRun?.matching.missingMessages ?? 0
        rtoVirtualSeconds = drill.caughtUpAt.map { Double($0 - destroyedAt) / 1_000 }
        restoreWallSeconds = Double(drill.restoreWall.components.seconds)
            + Double(drill.restoreWall.components.attoseconds) / 1e18
        cutBackMilliseconds = report.options.drillCutBack
        logRowsCut = max(0, (drill.backupLogRows ?? 0) - (drill.restoredLogRows ?? drill.backupLogRows ?? 0))
        votesRestated = simulator.lastRun?.evidence.counters.votesRestated ?? 0
        manifest = report.directory == nil ? nil : simulator.manifest(report, command: "drill")
    }

    public var jsonValue: JSONValue {
        var lost = JSONObject()
        for (kind, count) in eventsLost.sorted(by: { $0.key < $1.key }) { lost[kind] = .integer(Int64(count)) }
        return .object([
            "passed": .bool(passed),
            "side": .string(side.rawValue),
            "seed": .string(String(simulation.options.seed)),
            "replay": .string(simulation.replayCommand),
            "digest": .string(simulation.digest),
            "windowSeconds": .double(windowSeconds),
            "rpo": .object([
                "journalEventsLost": .integer(Int64(eventsLost.values.reduce(0, +))),
                "byKind": .object(lost),
                "messagesLost": .integer(Int64(messagesLost)),
            ]),
            "rto": .object([
                "virtualSeconds": rtoVirtualSeconds.map { .double($0) } ?? .null,
                "restoreWallSeconds": .double((restoreWallSeconds * 1_000).rounded() / 1_000),
                "runWallSeconds": .double((simulation.wallSeconds * 1_000).rounded() / 1_000),
            ]),
            "cut": cutBackMilliseconds.map { back in
                .object(["virtualSecondsBeforeBackup": .double(Double(back) / 1_000), "logRowsCut": .integer(Int64(logRowsCut))])
            } ?? .null,
            "doubleCounts": .integer(Int64(doubleCounts)),
            "votesRestated": .integer(Int64(votesRestated)),
            "caughtUp": .bool(caughtUp),
            "behind": .array(behind.map { .string($0) }),
            "converged": .bool(simulation.converged),
            "simulation": simulation.jsonValue,
        ])
    }

    public var summaryRows: [[String]] {
        let lost = eventsLost.values.reduce(0, +)
        let kinds = eventsLost.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        var rows: [[String]] = [
            ["drill", "restore the \(side.rawValue) (seed \(simulation.options.seed), \(simulation.options.devices) devices × \(simulation.options.eventsPerDevice) calls)"],
            ["window", String(format: "%.1f virtual s between the backup and the loss", windowSeconds)],
            ["RPO", side == .device
                ? "\(lost) journal events lost\(kinds.isEmpty ? "" : " (\(kinds))"), \(messagesLost) messages the cloud never got"
                : messagesLost == 0
                    ? "0 messages lost (devices resent everything the restored cloud lacked)"
                    : "\(messagesLost) messages lost: implied by the devices' calls, never held by the restored cloud"],
            ["RTO", rtoVirtualSeconds.map {
                String(format: "%.1f virtual s from the loss until the cloud held again all the devices held (10 s outage included); the restore took %.3f s", $0, restoreWallSeconds)
            } ?? "never: " + (behind.first.map { "\($0)\(behind.count > 1 ? " (and \(behind.count - 1) more)" : "") when the run ended" }
                ?? "the run ended before the cloud was seen to catch up")],
            ["double counts", "\(doubleCounts)"],
            ["reindex", votesRestated == 0 ? "no vote needed stating again"
                : "\(votesRestated) vote(s) stated again for the hashes reindex requests named (docs/SYNC.md, \"Reindex requests\")"],
        ]
        if let cutBackMilliseconds {
            rows.insert(["cut", String(format: "restored as at %.1f virtual s before the backup: %d of its cloud log rows cut",
                                       Double(cutBackMilliseconds) / 1_000, logRowsCut)], at: 2)
        }
        rows.append(["converged", simulation.converged ? "yes" : "no"])
        rows.append(["replay", simulation.replayCommand])
        rows.append(["digest", simulation.digest])
        for invariant in simulation.invariants {
            rows.append([invariant.passed ? "pass" : "FAIL", "\(invariant.name): \(invariant.detail)"])
        }
        return rows
    }
}
