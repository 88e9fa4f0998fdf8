import CloudCore
import CloudSQLite
import DeviceStore
import Foundation
import IndexModel
import SyncWire

/// What a finished run left, read once for the invariants (`Invariant`): the
/// cloud's counts, each store's own checks, and what the run recorded on the
/// way; the cloud log is read into the `Matching` a device at a time and not
/// kept. Plain values, so a test can change one and see the invariant that
/// guards it fail (`FinishedRun(evidence, matching:)`, or with a changed log
/// `FinishedRun(evidence, log:)`).
struct RunEvidence {
    /// One message the cloud log holds for a (device, epoch), new ones only.
    struct Held {
        let seq: OutboxSeq
        let message: OutboxMessage
        /// The day of cloud time it was accepted on.
        let day: Int64

        /// The messages of a log row that were new when the cloud took it.
        static func new(in record: CloudLogRecord) -> [Held] {
            let day = PopularityRule.day(milliseconds: record.receivedAt.millisecondsSince1970)
            let messages = record.messages.dropFirst(record.firstSeq.count(before: record.acceptedFrom))
            return zip(sequence(first: record.acceptedFrom) { $0.next }, messages).map { seq, message in
                Held(seq: seq, message: message, day: day)
            }
        }
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
    /// The hostile device's new messages, by epoch and seq, with their day.
    var hostileMessages: [Held] = []
    /// The pages the operator crawled (none for a served cloud, which keeps
    /// its own store).
    var crawled: [CrawledPage] = []
    /// The crawler's messages (`CrawlerRule`): not a device's.
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

    /// Reads `log`, every device's messages at once, afresh: for a test
    /// that changes the log or the hostile device's messages.
    init(_ evidence: RunEvidence, log: [DeviceID: HeldLog]) {
        self.evidence = evidence
        matching = Matching(evidence, log: log)
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
        var matching = readLog(cloud, into: &evidence)
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
        matching.finish(evidence)

        // This thread is done with the cloud.
        deviceChecks.releaseCloud()
        deviceChecks.run(fromEnd: false)
        if let checksJob { lane?.settle(checksJob) } else { cloudChecks.value.run() }
        evidence.deviceChecks = deviceChecks.checked
        evidence.cloudJournalProblems = cloudChecks.value.journalProblems
        evidence.cloudRebuildProblems = cloudChecks.value.rebuildProblems
        return .success(FinishedRun(evidence, matching: matching))
    }

    /// Reads the app's cloud log device by device into a matching, which
    /// takes each device's messages as soon as the next device's begin: only
    /// one device's messages are held at a time. The crawler's messages and
    /// the hostile device's go into `evidence`.
    private func readLog(_ cloud: any CloudStore, into evidence: inout RunEvidence) -> Matching {
        var matching = Matching(evidence)
        var device: DeviceID?
        var held: HeldLog = [:]
        do {
            try cloud.scanLogByDevice(app: options.app) { record in
                let new = RunEvidence.Held.new(in: record)
                if CrawlerRule.isReserved(record.device) {
                    evidence.crawlerMessages += new.map(\.message)
                    return true
                }
                if record.device != device {
                    if let device { matching.read(device, held) }
                    device = record.device
                    held = [:]
                }
                if record.device == Simulator.hostileName { evidence.hostileMessages += new }
                held[record.epoch, default: []] += new
                return true
            }
            if let device { matching.read(device, held) }
        } catch {
            evidence.logReadProblem = "the cloud log cannot be read: \(error)"
        }
        return matching
    }
}
