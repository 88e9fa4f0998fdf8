import Foundation
import Synchronization

/// Many seeds with the same options: the gate. Every seed must pass, and
/// together they must inject every kind of fault and reach every recovery path.
public struct CampaignReport: Sendable {
    public let seeds: ClosedRange<UInt64>
    /// The seeds that failed, each with its replay command and first failure.
    /// Each failed seed: its replay command, its first problem, and its
    /// digest (nil when the run stopped before its end).
    public let failures: [(seed: UInt64, replay: String, problem: String, digest: String?)]
    public let faults: [FaultKind: Int]
    public let coverage: [RecoveryPath: Int]
    public let appCalls: Int
    public let wallSeconds: Double
    /// The kinds of fault the seeds' plans could inject, together.
    public let injectable: Set<FaultKind>

    /// The kinds the plans could inject that no run did.
    public var missingFaults: [FaultKind] { FaultKind.allCases.filter { injectable.contains($0) && (faults[$0] ?? 0) == 0 } }
    /// The kinds no plan could inject (the profile has none of them).
    public var uninjectable: [FaultKind] { FaultKind.allCases.filter { !injectable.contains($0) } }
    /// The gated recovery paths no run reached.
    public var missingPaths: [RecoveryPath] { RecoveryPath.allCases.filter { $0.isGated && (coverage[$0] ?? 0) == 0 } }
    /// Whether unreached recovery paths fail the campaign: only when its
    /// plans could inject every kind of fault, since a path's causes are
    /// faults, and a profile without some of them (`light`) may never reach
    /// the paths those would lead to.
    public var judgesPaths: Bool { uninjectable.isEmpty }
    public var passed: Bool { failures.isEmpty && missingFaults.isEmpty && (!judgesPaths || missingPaths.isEmpty) }

    /// Runs every seed in `seeds` with `options` (its seed replaced), on as
    /// many threads as there are cores; each run is single-threaded and
    /// deterministic on its own.
    public static func run(seeds: ClosedRange<UInt64>, options: SimulationOptions,
                           progress: (@Sendable (Int) -> Void)? = nil) -> CampaignReport {
        let start = ContinuousClock.now
        let list = Array(seeds)
        let results = Mutex<[UInt64: Result<SimulationReport, SimulationError>]>([:])
        DispatchQueue.concurrentPerform(iterations: list.count) { index in
            var seeded = options
            seeded.seed = list[index]
            seeded.directory = nil
            let result = Result { () throws(SimulationError) -> SimulationReport in
                try Simulator(options: seeded).run()
            }
            let done = results.withLock { all in
                all[list[index]] = result
                return all.count
            }
            progress?(done)
        }
        var failures: [(UInt64, String, String, String?)] = []
        var faults: [FaultKind: Int] = [:]
        var coverage: [RecoveryPath: Int] = [:]
        var calls = 0
        var injectable = Set<FaultKind>()
        let all = results.withLock { $0 }
        for seed in list {
            switch all[seed]! {
            case .success(let report):
                faults.merge(report.faults, uniquingKeysWith: +)
                coverage.merge(report.coverage, uniquingKeysWith: +)
                injectable.formUnion(report.plan.injectableKinds)
                calls += report.appCalls
                if let failure = report.failures.first {
                    failures.append((seed, report.replayCommand, "\(failure.name): \(failure.detail)", report.digest))
                }
            case .failure(let error):
                var seeded = options
                seeded.seed = seed
                failures.append((seed, seeded.replayCommand, "the run stopped: \(error.message)", nil))
            }
        }
        let wall = ContinuousClock.now - start
        return CampaignReport(seeds: seeds, failures: failures, faults: faults, coverage: coverage, appCalls: calls,
                              wallSeconds: Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18,
                              injectable: injectable)
    }
}
