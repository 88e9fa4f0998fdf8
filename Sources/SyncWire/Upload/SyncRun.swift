import IndexModel

/// What a sync run asks its driver to do next. The first two are the
/// store's part (a driver hands them to the device store, which performs
/// them and hands the result back); the rest are the driver's own.
public enum SyncAction: Hashable, Sendable {
    /// Read at most `limit` outbox records after `after`, in order, and hand
    /// them to `SyncRun.outboxRead`.
    case readOutbox(after: OutboxPosition, limit: Int)
    /// Persist `effects` (the cursor `acknowledged`, the watermark `durable`,
    /// content requests, rewinds, epoch moves), then hand them to
    /// `SyncRun.persisted` with what persisting added
    /// (`.epochAdvanced`, `.recoveredFromJournal`).
    case persist([UploadEffect], acknowledged: OutboxPosition, durable: OutboxPosition)
    /// Send this frame and hand its reply to `SyncRun.received`, or its
    /// failure to `SyncRun.failed`.
    case send(UploadFrame)
    /// Nothing to do before this time (a backoff); then ask `SyncRun.next`.
    case wait(until: Timestamp)
    /// The run is over.
    case finished(SyncReport)
}

/// One sync run of a device as a pure state machine: it takes outbox
/// records, replies, failures and the time, and returns what to do next
/// (`SyncAction`). It reads no clock and does no I/O: the device store
/// performs its store actions (`DeviceStore.perform`), and a driver sends
/// its frames and waits out its backoffs, over HTTP (`SyncClient`) or on
/// the simulator's virtual network. Every driver goes through it, so a run
/// behaves the same whoever drives it.
///
/// With nothing pending the run first probes: it sends the last acknowledged
/// message again (`probe`), so that a cloud restored from a snapshot that
/// lacks it answers with the position it expects and the device sends the
/// rest. A new epoch needs no probe: its first frame names where the
/// previous one ended, and the cloud checks that it holds that much.
public struct SyncRun: Sendable {
    public private(set) var uploader: Uploader
    public private(set) var report = SyncReport()
    /// Attempts of one frame before the run gives up (the cursor is kept; the
    /// next run resumes from it).
    public let maximumAttempts: Int
    private var probe: OutboxRecord?
    private var probing = false
    private var done = false

    /// A run that starts from `uploader`'s cursor. `probe` is the outbox
    /// record at the cursor when nothing is pending (nil when something is,
    /// or when the outbox no longer holds it).
    public init(uploader: Uploader, probe: OutboxRecord?, maximumAttempts: Int = 8) {
        self.uploader = uploader
        self.probe = probe
        self.maximumAttempts = max(maximumAttempts, 1)
    }

    /// What to do at `now`.
    public mutating func next(now: Timestamp) -> SyncAction {
        if done { return .finished(report) }
        if let wake = uploader.wakeTime(now: now), wake > now { return .wait(until: wake) }
        if let record = probe {
            probe = nil
            probing = true
            report.probes += 1
            return sending(uploader.probeFrame(now: now, record: record))
        }
        probing = false
        guard uploader.state == .ready else { return sending(uploader.nextFrame(now: now, pending: [])) }
        return .readOutbox(after: uploader.acknowledged, limit: uploader.configuration.maximumMessages)
    }

    /// The records a `.readOutbox` asked for.
    public mutating func outboxRead(_ records: [OutboxRecord], now: Timestamp) -> SyncAction {
        sending(uploader.nextFrame(now: now, pending: records))
    }

    /// The reply to the frame in flight: what the store must persist.
    public mutating func received(_ reply: [UInt8], now: Timestamp) -> SyncAction {
        let effects = uploader.receive(reply, now: now)
        return .persist(effects, acknowledged: uploader.acknowledged, durable: uploader.durable)
    }

    /// The store persisted a `.persist`'s effects; `effects` are those with
    /// what persisting added. Returns what to do next at `now`.
    public mutating func persisted(_ effects: [UploadEffect], now: Timestamp) -> SyncAction {
        record(effects)
        return next(now: now)
    }

    /// The frame in flight got no usable reply: it goes again after a
    /// backoff, unless it has had all its attempts. Returns what to do next
    /// at `now`.
    public mutating func failed(reason: String, now: Timestamp) -> SyncAction {
        record(uploader.failed(now: now, reason: reason))
        return next(now: now)
    }

    private mutating func sending(_ frame: UploadFrame?) -> SyncAction {
        guard let frame else {
            if case .stopped(let error) = uploader.state { report.failure = error.description }
            done = true
            return .finished(report)
        }
        if !probing { report.framesSent += 1 }
        if uploader.attempts > 1 { report.retries += 1 }
        return .send(frame)
    }

    private mutating func record(_ effects: [UploadEffect]) {
        for effect in effects {
            switch effect {
            case .accepted(_, let range) where !probing:
                report.messagesAcknowledged += range.lowerBound.seq.count(through: range.upperBound.seq)
            case .accepted:
                break
            case .contentRequested(let hashes):
                report.contentRequests += hashes.count
            case .rewound, .epochTaken, .epochEnded:
                report.rewinds += 1
            case .epochAdvanced:
                report.epochAdvances += 1
            case .recoveredFromJournal(let count):
                report.messagesRecovered += count
            case .popularityChanged(let mode):
                report.popularityLearned = mode
            case .reindexRequested(let request):
                report.reindexRequests.append(request)
            case .stopped(let error):
                report.failure = error.description
            case .dictionaryUnknown:
                report.dictionaryResets += 1
            case .durable, .retryScheduled:
                break
            }
        }
        if report.failure != nil {
            done = true
        } else if case .backingOff(let frame, _) = uploader.state, uploader.attempts >= maximumAttempts {
            report.failure = "gave up after \(uploader.attempts) attempts of frame \(frame.first)...\(frame.last); the next sync resumes there"
            done = true
        }
    }
}

/// What one sync run did, for `sightline sync` and tests.
public struct SyncReport: Hashable, Sendable {
    public var framesSent = 0
    /// Frames that only asked whether the cloud still holds the last
    /// acknowledged message (sent when nothing was pending).
    public var probes = 0
    public var messagesAcknowledged = 0
    public var retries = 0
    /// Frames the cloud could not inflate because it did not hold their
    /// dictionary (`UploadEffect.dictionaryUnknown`), sent again deflated alone.
    public var dictionaryResets = 0
    public var rewinds = 0
    public var contentRequests = 0
    /// The cloud's answers to this device's reindex asks, in order.
    public var reindexRequests: [CloudReindex] = []
    /// Times the store moved its epoch above one the cloud holds.
    public var epochAdvances = 0
    /// The popularity mode an ack announced that the device did not hold
    /// (the last, when several did); nil when none did.
    public var popularityLearned: PopularityMode?
    /// Dropped messages made again from the journal for a cloud restored
    /// from an older backup.
    public var messagesRecovered = 0
    /// Why the run stopped early, when it did.
    public var failure: String?
    /// The device's cursor and outbox when the run ended: the store fills it
    /// in as it hands back `.finished` (`DeviceStore.perform`).
    public var status: SyncStatus?

    public init() {}
}

/// Where a device stands with the cloud.
public struct SyncStatus: Hashable, Sendable {
    /// The last message the privacy projection appended.
    public let head: OutboxPosition
    /// The cloud holds every message up to here (its last ack).
    public let acknowledged: OutboxPosition
    /// The cloud's copy is durable up to here; older messages are dropped.
    public let durable: OutboxPosition
    /// Messages after `acknowledged`, waiting to be sent.
    public let pending: Int

    public init(head: OutboxPosition, acknowledged: OutboxPosition, durable: OutboxPosition, pending: Int) {
        self.head = head
        self.acknowledged = acknowledged
        self.durable = durable
        self.pending = pending
    }
}
