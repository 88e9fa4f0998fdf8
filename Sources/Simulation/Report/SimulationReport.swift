import CloudCore
import CloudSQLite
import Crypto
import DeviceStore
import Foundation
import IndexModel
import SyncWire

/// The recovery paths a run can take; the gate wants each reached.
public enum RecoveryPath: String, CaseIterable, Hashable, Sendable, Comparable {
    /// A frame went again after an unknown outcome.
    case retry
    /// The cloud answered a gap and the device rewound to where it expected.
    case rewind
    /// A restored device resent messages of its old epoch.
    case resendAfterRestore
    /// The cloud asked devices for public content.
    case contentRequest
    /// A device withdrew a vote.
    case withdrawal
    /// The cloud held less than it had acknowledged (it was restored) and a device noticed.
    case cloudRegression
    /// A device whose clock ran back past an earlier restore moved its epoch
    /// above the one the cloud had begun for it.
    case epochAdvance
    /// A cloud restored from a backup older than its latest asked for messages
    /// a device had dropped, and the device made them again from its journal.
    case recoveryFromJournal
    /// A device stated its vote again for the hashes a reindex request named:
    /// the cloud's answer to its ask after a restore, or an epoch the cloud
    /// ended before messages of it.
    case votesReindexed

    /// Whether a campaign fails when no run reached the path. An epoch
    /// advance needs a restore, a clock jump back past it and a second
    /// restore; a recovery from the journal, a cloud restored from its
    /// older backup after a device dropped what only the later one held.
    /// Small runs seldom combine those; the regression seeds reach both.
    public var isGated: Bool { self != .epochAdvance && self != .recoveryFromJournal }

    public static func < (lhs: RecoveryPath, rhs: RecoveryPath) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// What happened during a run, counted as it went.
struct RunCounters {
    var appCalls = 0
    var framesSent = 0
    var probes = 0
    var retries = 0
    var rewinds = 0
    var dictionaryResets = 0
    var messagesAcknowledged = 0
    var contentRequests = 0
    var sessionsGivenUp = 0
    var accepted = 0
    var duplicates = 0
    var rejected = 0
    var bytesUp = 0
    var bytesDown = 0
    var framesScanned = 0
    var leaks = 0
    var epochReuses = 0
    /// Items a device restore deleted again because the wiped store had purged them.
    var itemsDeletedAgain = 0
    /// Activities a device restore deleted again because the wiped store had purged them.
    var activitiesDeletedAgain = 0
    /// Hashes whose vote a device stated again for a reindex request.
    var votesRestated = 0
    /// Searches the simulated users made (each checked against the oracle).
    var searches = 0
    /// The hostile device's public searches (`Simulator.hostileSearch`): those
    /// its budget let finish, and those refused as too expensive.
    var hostileSearches = (answered: 0, refused: 0)
    /// What the hostile device got that it must not have: an enrolment
    /// under a name no store keeps, a search that failed otherwise.
    var hostileFindings: [String] = []
    var faults: [FaultKind: Int] = [:]
    var coverage: [RecoveryPath: Int] = [:]
    /// Virtual milliseconds since the run began, as of the event the loop
    /// is handling: when what is recorded now happened.
    var now: Int64 = 0
    /// Faults, backups and snapshots in the order they happened, the first
    /// `RunEvent.limit` of them (the counts above are exact).
    var events: [RunEvent] = []
    var eventsLeftOut = 0

    mutating func fault(_ kind: FaultKind, device: Int? = nil) {
        faults[kind, default: 0] += 1
        record(kind.rawValue, device: device)
    }

    mutating func record(_ kind: String, device: Int? = nil) {
        guard events.count < RunEvent.limit else {
            eventsLeftOut += 1
            return
        }
        events.append(RunEvent(at: now, kind: kind, device: device))
    }
    mutating func mark(_ path: RecoveryPath) { coverage[path, default: 0] += 1 }

    mutating func absorb(_ report: SyncReport) {
        framesSent += report.framesSent
        probes += report.probes
        retries += report.retries
        rewinds += report.rewinds
        dictionaryResets += report.dictionaryResets
        messagesAcknowledged += report.messagesAcknowledged
        contentRequests += report.contentRequests
        if report.failure != nil { sessionsGivenUp += 1 }
        if report.retries > 0 { coverage[.retry, default: 0] += report.retries }
        if report.rewinds > 0 { coverage[.rewind, default: 0] += report.rewinds }
        if report.contentRequests > 0 { coverage[.contentRequest, default: 0] += report.contentRequests }
    }

    mutating func record(_ outcome: IngestResult.Outcome) {
        switch outcome {
        case .accepted: accepted += 1
        case .duplicate: duplicates += 1
        case .rejected: rejected += 1
        }
    }
}

/// Something that happened to the run at one virtual instant: a fault (its
/// kind's name), a device backup (`deviceBackup`) or a cloud snapshot
/// (`cloudSnapshot`), and the device it happened to, if one.
public struct RunEvent: Hashable, Sendable {
    /// Virtual milliseconds since the run began.
    public let at: Int64
    public let kind: String
    public let device: Int?

    /// The most events a run keeps for its report and timeline.
    public static let limit = 50_000
    /// The kinds that are not faults.
    public static let deviceBackup = "deviceBackup"
    public static let cloudSnapshot = "cloudSnapshot"
}

/// One device at the end of a run.
public struct DeviceFigures: Hashable, Sendable {
    public let number: Int
    public let id: String
    /// App calls the device made, scripted and drawn.
    public let calls: Int
    /// The epoch it ended in (each restore begins a new one).
    public let epoch: UInt64
    public let restores: Int
    public let backups: Int
    /// The most outbox messages it had waiting at once.
    public let largestBacklog: Int
}

/// One device restore: when, from how old a backup, and what it lost.
public struct RestoreRecord: Hashable, Sendable {
    public let device: Int
    /// Virtual milliseconds since the run began.
    public let at: Int64
    public let backupAge: Int64
    /// Journal events after the backup that the wipe destroyed.
    public let journalEventsLost: UInt64
    /// App calls after the backup (their effects on the device are gone;
    /// index operations come back through reindexing).
    public let callsLost: Int
}

/// The state of the run at one virtual instant, for the charts.
public struct TimelineSample: Hashable, Sendable {
    /// Virtual milliseconds since the run began.
    public let at: Int64
    /// Outbox messages waiting on all devices (as of their last look).
    public let backlog: Int
    public let publicItems: Int
    public let cloudUp: Bool
}

/// Everything a finished run reports: the summary table, `--json` and `report.json`.
public struct SimulationReport: Sendable {
    public let options: SimulationOptions
    public let plan: FaultPlan
    public let invariants: [InvariantResult]
    public let converged: Bool
    public let appCalls: Int
    public let journalEvents: UInt64
    public let framesSent: Int
    public let probes: Int
    public let retries: Int
    public let rewinds: Int
    /// Frames sent again deflated alone because the cloud did not hold
    /// their dictionary (it crashed or was restored since).
    public let dictionaryResets: Int
    public let messagesAcknowledged: Int
    public let contentRequests: Int
    public let sessionsGivenUp: Int
    public let cloudAccepted: Int
    public let cloudDuplicates: Int
    public let cloudRejected: Int
    public let bytesUp: Int
    public let bytesDown: Int
    public let faults: [FaultKind: Int]
    public let coverage: [RecoveryPath: Int]
    public let restores: [RestoreRecord]
    public let publicItems: Int
    public let cloudLogRows: Int
    /// Virtual milliseconds: the whole run, and from the end of the faults to quiet.
    public let virtualMilliseconds: Int64
    public let convergenceMilliseconds: Int64
    public let wallSeconds: Double
    /// Where the wall time went, by part of the run (`RunTimes`).
    public let times: RunTimes
    /// What the device stores' sleeps and wakes did and cost (`StoreKeeper`).
    public let hibernation: HibernationFigures
    public let timeline: [TimelineSample]
    /// Faults, backups and snapshots as they happened (`RunEvent`), at most
    /// `RunEvent.limit`; `eventsLeftOut` more were counted but not kept.
    public let events: [RunEvent]
    public let eventsLeftOut: Int
    /// Each device's figures at the end of the run, by device number.
    public let devices: [DeviceFigures]
    /// Per device: the most outbox messages it had waiting at any look.
    public let deviceLag: [Int]
    /// What the run noticed beyond the invariants (also in their details).
    public let findings: [String]
    /// Under private popularity: the cloud's estimates against the reports
    /// it counted (nil when popularity is exact).
    public let popularity: PopularityAccuracy?
    /// SHA-256 over every device's journal head and the cloud's log head and
    /// projections: the same seed and options give the same digest.
    public let digest: String
    /// Where the stores were kept (nil: a scratch directory, removed).
    public let directory: String?

    public var passed: Bool { invariants.allSatisfy(\.passed) }
    public var failures: [InvariantResult] { invariants.filter { !$0.passed } }
    public var eventsPerSecond: Double { wallSeconds > 0 ? Double(appCalls) / wallSeconds : 0 }

    init(simulator: Simulator, invariants: [InvariantResult], converged: Bool, wall: Duration, times: RunTimes = RunTimes()) {
        options = simulator.options
        plan = simulator.plan
        self.invariants = invariants
        self.converged = converged
        let counters = simulator.counters
        appCalls = counters.appCalls
        framesSent = counters.framesSent
        probes = counters.probes
        retries = counters.retries
        rewinds = counters.rewinds
        dictionaryResets = counters.dictionaryResets
        messagesAcknowledged = counters.messagesAcknowledged
        contentRequests = counters.contentRequests
        sessionsGivenUp = counters.sessionsGivenUp
        cloudAccepted = counters.accepted
        cloudDuplicates = counters.duplicates
        cloudRejected = counters.rejected
        bytesUp = counters.bytesUp
        bytesDown = counters.bytesDown
        faults = counters.faults
        var coverage = counters.coverage
        let withdrawals = simulator.devices.reduce(0) { total, device in
            total + device.expected.values.joined().joined().filter { if case .withdraw = $0 { true } else { false } }.count
        }
        if withdrawals > 0 { coverage[.withdrawal] = withdrawals }
        self.coverage = coverage
        restores = simulator.restores
        timeline = simulator.timeline
        events = simulator.counters.events
        eventsLeftOut = simulator.counters.eventsLeftOut
        devices = simulator.devices.map { device in
            DeviceFigures(number: device.number, id: device.name.rawValue, calls: device.calls, epoch: device.epoch.rawValue,
                          restores: device.restores, backups: device.backupsTaken, largestBacklog: device.maxPending)
        }
        deviceLag = simulator.devices.map(\.maxPending)
        findings = simulator.findings
        popularity = simulator.lastRun.flatMap(PopularityAccuracy.init)
        virtualMilliseconds = simulator.world.milliseconds - Simulator.start.millisecondsSince1970
        convergenceMilliseconds = simulator.convergenceMilliseconds
        wallSeconds = wall.seconds
        self.times = times
        directory = simulator.options.directory
        hibernation = simulator.fleet.keeper.figures

        var hasher = SHA256()
        var events: UInt64 = 0
        for device in simulator.devices {
            let verification = simulator.lastRun?.evidence.deviceChecks[device.number].journal
            events += verification?.head.rawValue ?? 0
            hasher.update(data: Array("\(device.name) \(device.epoch) \(verification?.head.rawValue ?? 0) \(verification?.headHash.hex ?? "-")\n".utf8))
        }
        journalEvents = events
        let cloud = simulator.cloud
        let stats = try? cloud?.stats()
        publicItems = stats?.publicItems ?? 0
        cloudLogRows = stats?.logRows ?? 0
        hasher.update(data: Array("cloud \(cloudLogRows) \((try? cloud?.projectionDigest()) ?? "-")\n".utf8))
        digest = hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }
}

/// How close the cloud's estimates came to the truth in a run with private
/// popularity: for each catalogue entry, the sketch's estimate against the
/// reports of it the cloud counted (the oracle knows each report's entry from
/// the call that made it; the cloud never does).
public struct PopularityAccuracy: Hashable, Sendable {
    public let settings: PrivatePopularity
    /// Reports the cloud counted.
    public let reports: Int
    /// Catalogue entries estimated.
    public let items: Int
    /// The mean of |estimate − counted reports| over the entries.
    public let meanAbsoluteError: Double
    /// The largest |estimate − counted reports| among the 100 entries with
    /// the most counted reports.
    public let topMaxError: Double

    init?(_ run: FinishedRun) {
        guard let settings = run.evidence.privately, let estimates = run.evidence.estimates, !estimates.isEmpty else { return nil }
        self.settings = settings
        reports = run.matching.model.reportsCounted
        let pairs = estimates.sorted { $0.key < $1.key }.map { number, estimate in
            (truth: run.matching.model.entries[number]?.reports ?? 0, error: abs(estimate - Double(run.matching.model.entries[number]?.reports ?? 0)))
        }
        items = pairs.count
        meanAbsoluteError = pairs.reduce(0) { $0 + $1.error } / Double(pairs.count)
        topMaxError = pairs.sorted { $0.truth > $1.truth }.prefix(100).map(\.error).max() ?? 0
    }
}
