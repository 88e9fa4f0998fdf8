import CloudCore
import CloudSQLite
import DeviceStore
import Foundation
import IndexModel
import SyncWire

/// What a finished run left, read once for the invariants (`Invariant`): the
/// cloud's log and counts, each store's own checks, and what the run recorded
/// on the way. Plain values, so a test can change one and see the invariant
/// that guards it fail (`FinishedRun(evidence)`).
struct RunEvidence {
    /// One message the cloud log holds for a (device, epoch), new ones only.
    struct Held {
        let seq: OutboxSeq
        let message: OutboxMessage
        /// The day of cloud time it was accepted on.
        let day: Int64
    }

    var converged: Bool
    var convergenceMilliseconds: Int64
    var threshold: Int
    var plan: FaultPlan
    var catalogue: Catalogue
    /// The app's private popularity (nil: exact).
    var privately: PrivatePopularity?
    var devices: [SimDevice]
    /// Each device's outbox head, by device number (nil: unreadable).
    var heads: [OutboxPosition?]
    var counters: RunCounters
    var findings: [String]
    var restores: Int
    /// The cloud log's new messages per device name and epoch, in log order.
    var log: [DeviceID: [Epoch: [Held]]] = [:]
    /// The hostile device's new messages, in log order, with their day.
    var hostileMessages: [Held] = []
    /// The pages the operator crawled (none for a served cloud, which keeps
    /// its own store).
    var crawled: [CrawledPage] = []
    /// The crawler's messages (`CrawlerRule`), in log order: not a device's.
    var crawlerMessages: [OutboxMessage] = []
    /// The pages the cloud holds at the end (nil: unreadable).
    var pages: Result<[CrawledPage], CloudError> = .success([])
    var logReadProblem: String?
    /// What the cloud counts for each catalogue entry, by number (the Sybil
    /// entry last): nil where it has no row.
    var counts: [Result<HashEntry?, CloudError>] = []
    /// Hashes the cloud counts in all, or nil when it cannot say.
    var hashesCounted: Int?
    /// Under private popularity: the reports the cloud counted, and its
    /// sketch's estimate for each entry (nil when they could not be read).
    var cloudReports: Int?
    var estimates: [Int: Double]?
    /// Each device's store checks, in device order.
    var deviceChecks: [DeviceCheck] = []
    var cloudJournalProblems: [String] = []
    /// Content messages of the embedded cloud's log that a purge would take
    /// now (`purgeWithdrawnContent(dryRun:)`), nil against a served cloud or
    /// when unreadable; and what its purges took during the run.
    var unpurgedContent: Result<Int, CloudError>?
    var contentPurged = 0
    var cloudRebuildProblems: [String] = []

    var hostileTarget: Catalogue.Entry { Simulator.hostileTarget(catalogue) }
}

/// A finished run as the invariants see it: the evidence, and the oracle's
/// reading of it (`Matching`), made once.
struct FinishedRun {
    let evidence: RunEvidence
    let matching: Matching

    init(_ evidence: RunEvidence) {
        self.evidence = evidence
        matching = Matching(evidence)
    }

    init(_ evidence: RunEvidence, matching: Matching) {
        self.evidence = evidence
        self.matching = matching
    }
}

extension Simulator {
    /// Reads what the run left. Each device's checks read only that device,
    /// and the cloud's only the cloud: with the call lane (idle now) the lane
    /// checks devices from the last one down at once, and runs the cloud's
    /// checks as soon as this thread is done reading the cloud and matching
    /// its log; this thread then checks devices from the first one up, until
    /// the two meet. Fails when the cloud store cannot be opened.
    func gatherEvidence(converged: Bool) -> Result<FinishedRun, CloudError> {
        let cloud: any CloudStore
        if let running = self.cloud {
            cloud = running
        } else {
            do throws(CloudError) {
                cloud = try cloudHost.openForReading()
            } catch {
                return .failure(error)
            }
        }
        var evidence = RunEvidence(
            converged: converged, convergenceMilliseconds: convergenceMilliseconds, threshold: options.threshold,
            plan: plan, catalogue: catalogue, privately: options.popularity, devices: devices, heads: [], counters: counters,
            findings: findings,
            restores: restores.count)
        let cloudChecks = LaneCargo(value: CloudChecks(cloud: cloud))
        let deviceChecks = DeviceChecks(devices: devices, cloudChecks: lane == nil ? nil : { cloudChecks.value.run() })
        let checksJob = lane?.hand { deviceChecks.run(fromEnd: true) }

        evidence.heads = devices.map { try? $0.syncStatus().head }
        readLog(cloud, into: &evidence)
        for number in 0...catalogue.sybil.number {
            evidence.counts.append(Result { () throws(CloudError) in try cloud.entry(app: options.app, hash: catalogue.entry(number).hash) })
        }
        evidence.hashesCounted = try? cloud.entries(app: options.app).count
        if options.popularity != nil {
            evidence.cloudReports = try? cloud.stats().reports
            if var sketch = try? cloud.privateSketch(app: options.app) {
                var estimates: [Int: Double] = [:]
                for number in 0...catalogue.sybil.number { estimates[number] = sketch.estimate(catalogue.entry(number).hash.bytes) }
                evidence.estimates = estimates
            }
        }
        if options.remote == nil {
            evidence.unpurgedContent = Result { () throws(CloudError) in try cloud.purgeWithdrawnContent(dryRun: true).contentMessages }
            evidence.contentPurged = cloudHost.contentPurged
        }
        evidence.crawled = crawledPages
        evidence.pages = Result { () throws(CloudError) in try cloud.crawledPages(app: options.app) }
        let matching = Matching(evidence)

        // This thread is done with the cloud.
        deviceChecks.releaseCloud()
        deviceChecks.run(fromEnd: false)
        if let checksJob { lane?.settle(checksJob) } else { cloudChecks.value.run() }
        evidence.deviceChecks = deviceChecks.checked
        evidence.cloudJournalProblems = cloudChecks.value.journalProblems
        evidence.cloudRebuildProblems = cloudChecks.value.rebuildProblems
        return .success(FinishedRun(evidence, matching: matching))
    }

    private func readLog(_ cloud: any CloudStore, into evidence: inout RunEvidence) {
        do {
            try cloud.scanLog { record in
                let day = PopularityRule.day(milliseconds: record.receivedAt.millisecondsSince1970)
                let messages = record.messages.dropFirst(record.firstSeq.count(before: record.acceptedFrom))
                let new = zip(sequence(first: record.acceptedFrom) { $0.next }, messages).map { seq, message in
                    RunEvidence.Held(seq: seq, message: message, day: day)
                }
                if CrawlerRule.isReserved(record.device) {
                    evidence.crawlerMessages += new.map(\.message)
                    return true
                }
                if record.device == Simulator.hostileName { evidence.hostileMessages += new }
                evidence.log[record.device, default: [:]][record.epoch, default: []] += new
                return true
            }
        } catch {
            evidence.logReadProblem = "the cloud log cannot be read: \(error)"
        }
    }
}
