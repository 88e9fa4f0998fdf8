import IndexModel

/// How the uploader batches and retries.
public struct UploaderConfiguration: Hashable, Sendable {
    /// Messages per frame.
    public var maximumMessages: Int
    /// Uncompressed payload bytes per frame (a frame always carries at least one
    /// message). Below `WireLimits.maximumFrameBytes` so a frame fits even when
    /// its payload does not compress.
    public var maximumPayloadBytes: Int
    /// The first retry waits about this long; each further one twice as long.
    public var initialBackoffMilliseconds: Int64
    public var maximumBackoffMilliseconds: Int64
    /// Seeds the jitter of retry delays, so a simulation replays exactly.
    public var jitterSeed: UInt64

    public init(maximumMessages: Int = 2_000, maximumPayloadBytes: Int = 512 * 1024,
                initialBackoffMilliseconds: Int64 = 200, maximumBackoffMilliseconds: Int64 = 60_000, jitterSeed: UInt64 = 0) {
        self.maximumMessages = min(max(maximumMessages, 1), WireLimits.maximumMessages)
        self.maximumPayloadBytes = min(max(maximumPayloadBytes, 1), WireLimits.maximumFrameBytes / 2)
        self.initialBackoffMilliseconds = max(initialBackoffMilliseconds, 1)
        self.maximumBackoffMilliseconds = max(maximumBackoffMilliseconds, self.initialBackoffMilliseconds)
        self.jitterSeed = jitterSeed
    }
}

/// The device side of a sync session, as a synchronous state machine: it takes
/// pending outbox records, replies and failures, and returns frames to send and
/// what the device must do (`UploadEffect`). It reads no clock and does no I/O,
/// so the simulator can step it on a virtual clock and replay it from a seed.
///
/// - One frame is in flight at a time. After an unknown outcome (a timeout, a
///   lost reply, an unauthentic reply) the *same* frame is sent again after an
///   exponential backoff with seeded jitter; the cloud's dedupe makes that safe.
/// - An ack moves `acknowledged` and `durable` forward and hands over content
///   requests; a gap rejection rewinds to where the cloud expects; any other
///   rejection except rate limiting, unavailability and an unknown dictionary
///   stops the uploader with the cloud's reason.
/// - Each frame is deflated against the `FrameDictionary` of the frames
///   acknowledged so far (the device store hands the last run's on to the
///   next); a cloud that does not hold it (`unknownBase`) gets the messages
///   again in a frame deflated alone, and the dictionary starts over from
///   there.
public struct Uploader: Sendable {
    /// Where the uploader stands with its frame.
    public enum State: Hashable, Sendable {
        /// Nothing in flight: the next call to `nextFrame` builds a frame.
        case ready
        /// A frame was handed out and its reply has not come.
        case awaitingReply(UploadFrame)
        /// The last attempt's outcome is unknown; the frame goes again at `until`.
        case backingOff(UploadFrame, until: Timestamp)
        /// A permanent rejection or an unrecoverable state; nothing more is sent.
        case stopped(WireError)
    }

    public let app: AppID
    public let device: DeviceID
    private let key: [UInt8]
    public let configuration: UploaderConfiguration
    /// The cloud holds every message up to here.
    public private(set) var acknowledged: OutboxPosition
    /// The cloud's copy is durable and backed up to here: the device may drop
    /// its messages up to this position.
    public private(set) var durable: OutboxPosition
    public private(set) var state: State = .ready
    /// Attempts of the current frame so far.
    public private(set) var attempts = 0
    /// How the app counts popularity, as the device holds it and then as the
    /// last ack said: an ack that says otherwise is an effect.
    public private(set) var popularity: PopularityMode
    /// What the next frame is deflated against: the hashes of the frames
    /// the cloud acknowledged, from the dictionary the uploader began with.
    public private(set) var dictionary: FrameDictionary
    /// `dictionary` once the frame in flight is acknowledged.
    private var dictionaryAfterAck: FrameDictionary?
    private var random: SplitMix64

    public init(app: AppID, device: DeviceID, key: [UInt8], acknowledged: OutboxPosition, durable: OutboxPosition,
                popularity: PopularityMode = .exact, configuration: UploaderConfiguration = UploaderConfiguration(),
                dictionary: FrameDictionary = .empty) {
        self.app = app
        self.device = device
        self.key = key
        self.acknowledged = acknowledged
        self.durable = durable
        self.popularity = popularity
        self.configuration = configuration
        self.dictionary = dictionary
        random = SplitMix64(seed: configuration.jitterSeed)
    }

    /// When the uploader next wants to act on its own, asked at `now`: the
    /// end of its backoff, if it is backing off.
    ///
    /// No backoff is longer than `maximumBackoffMilliseconds`, so an end
    /// further off than that from `now` means the device's clock went back
    /// since the backoff began (clocks jump). The backoff then ends that long
    /// after `now`: waiting for the old end would stall the device's sync for
    /// as long as its clock went back (minutes, in simulated runs).
    public mutating func wakeTime(now: Timestamp) -> Timestamp? {
        guard case .backingOff(let frame, let until) = state else { return nil }
        let latest = now.adding(milliseconds: configuration.maximumBackoffMilliseconds)
        guard until > latest else { return until }
        state = .backingOff(frame, until: latest)
        return latest
    }

    /// The frame to send now, if any. `pending` are outbox records after
    /// `acknowledged`, in order (the driver reads at most
    /// `configuration.maximumMessages` of them). A frame retried after a backoff
    /// is the same frame, byte for byte.
    public mutating func nextFrame(now: Timestamp, pending: [OutboxRecord]) -> UploadFrame? {
        switch state {
        case .stopped, .awaitingReply:
            return nil
        case .backingOff(let frame, _):
            guard let until = wakeTime(now: now), now >= until else { return nil }
            attempts += 1
            state = .awaitingReply(frame)
            return frame
        case .ready:
            guard let first = pending.first else { return nil }
            guard first.position.follows(acknowledged) else {
                state = .stopped(WireError(.gap, """
                    the cloud needs messages after \(acknowledged) but the outbox continues at \(first.position): \
                    the messages between were already dropped
                    """))
                return nil
            }
            var records: [OutboxRecord] = []
            var bytes = 0
            for record in pending {
                guard records.count < configuration.maximumMessages,
                      records.last.map({ record.position == $0.position.nextInEpoch }) ?? true else { break }
                if !records.isEmpty && bytes + record.encoded.count > configuration.maximumPayloadBytes { break }
                records.append(record)
                bytes += record.encoded.count
            }
            // The frame names the cursor it follows: on an epoch's first
            // frame, the cloud checks that it holds that much before it lets
            // the new epoch end the previous one.
            let plain = FramePayload.encode(records.map(\.encoded))
            let frame = UploadFrame(app: app, device: device, records: records, plain: plain, key: key, follows: acknowledged,
                                    isProbe: false, codec: .deflate, level: 6, dictionary: dictionary)
            // The cloud makes the same dictionary from the same payload. (A
            // payload made here lists its hashes, so this does not throw.)
            dictionaryAfterAck = try? dictionary.following(plain)
            attempts = 1
            state = .awaitingReply(frame)
            return frame
        }
    }

    /// A frame that sends again the last acknowledged message, to ask the cloud
    /// whether it still holds it. A cloud restored from an older snapshot
    /// answers with a gap and the uploader rewinds; any other cloud
    /// acknowledges a duplicate and nothing changes. A probe never adds
    /// messages (not even as an epoch's first), so it claims nothing about
    /// what precedes it. `record` must be at or before `acknowledged`.
    public mutating func probeFrame(now: Timestamp, record: OutboxRecord) -> UploadFrame? {
        guard state == .ready, record.position <= acknowledged, record.position.seq >= .first else { return nil }
        let frame = UploadFrame(app: app, device: device, records: [record], key: key, isProbe: true)
        // A probe adds nothing, so it leaves the dictionary as it is.
        dictionaryAfterAck = nil
        attempts = 1
        state = .awaitingReply(frame)
        return frame
    }

    /// Takes the cloud's reply to the frame in flight.
    public mutating func receive(_ bytes: [UInt8], now: Timestamp) -> [UploadEffect] {
        guard case .awaitingReply(let frame) = state else { return [] }
        let decoded: ReceivedReply
        do {
            decoded = try CloudReply.decode(bytes, device: device, key: key)
        } catch {
            return failed(now: now, reason: "unreadable reply: \(error)")
        }
        guard decoded.isAnswer(to: frame) else {
            // An old reply, replayed or delayed: acting on it could move the
            // cursor past messages the cloud never saw.
            return failed(now: now, reason: "a reply to another frame was ignored")
        }
        if case .rejection(let rejection) = decoded.reply, [.unknownDevice, .badSignature].contains(rejection.error.code) {
            // The cloud does not know the key, or the frame's signature did
            // not verify: either way it does not sign its answer, since a
            // signed reply to an unproven frame would be a signing oracle.
            state = .stopped(rejection.error)
            return [.stopped(rejection.error)]
        }
        guard decoded.isAuthentic else {
            return failed(now: now, reason: "a reply not signed with this device's key was ignored")
        }
        switch decoded.reply {
        case .ack(let ack):
            acknowledged = ack.acceptedThrough
            var effects: [UploadEffect] = [.accepted(through: ack.acceptedThrough, frame: frame.first...frame.last)]
            if ack.droppableThrough > durable {
                durable = ack.droppableThrough
                effects.append(.durable(through: durable))
            }
            if !ack.contentRequests.isEmpty {
                effects.append(.contentRequested(ack.contentRequests))
            }
            if ack.popularity != popularity {
                popularity = ack.popularity
                effects.append(.popularityChanged(ack.popularity))
            }
            if let reindex = ack.reindex {
                effects.append(.reindexRequested(reindex))
            }
            if let next = dictionaryAfterAck { dictionary = next }
            dictionaryAfterAck = nil
            state = .ready
            attempts = 0
            return effects
        case .rejection(let rejection):
            switch rejection.error.code {
            case .gap:
                if let ended = rejection.ended {
                    return resume(before: rejection) { .epochEnded(held: ended, cloudHead: $0, reason: rejection.error.message) }
                }
                return resume(before: rejection) { .rewound(to: $0, reason: rejection.error.message) }
            case .equivocation where frame.epoch > acknowledged.epoch:
                // The cloud holds other messages under an epoch of which it
                // never acknowledged anything to this uploader: an earlier
                // incarnation of the device (wiped and restored since) used
                // the same epoch. The device moves its epoch above the
                // cloud's head for it and goes on from there.
                return resume(before: rejection) { .epochTaken(cloudHead: $0, reason: rejection.error.message) }
            case .rateLimited, .unavailable:
                return failed(now: now, reason: rejection.error.message)
            case .unknownBase where frame.base != nil:
                // Nothing was kept: the same messages go again at once, in a
                // frame deflated alone, and later frames build on that one.
                // (Said of a frame deflated alone, it is a broken cloud's
                // answer, and stops the uploader below.)
                dictionary = .empty
                dictionaryAfterAck = nil
                state = .ready
                attempts = 0
                return [.dictionaryUnknown(reason: rejection.error.message)]
            default:
                state = .stopped(rejection.error)
                return [.stopped(rejection.error)]
            }
        }
    }

    /// Goes on after the position before the rejection's expected one, with
    /// the effect `made` of that position; stops when the rejection names none.
    private mutating func resume(before rejection: Rejection, _ made: (OutboxPosition) -> UploadEffect) -> [UploadEffect] {
        guard let before = rejection.expected?.previousInEpoch else {
            state = .stopped(rejection.error)
            return [.stopped(rejection.error)]
        }
        acknowledged = before
        // A cloud that holds less than before (restored from a backup) has
        // backed up no more than it holds: what comes after must not be
        // dropped before it is sent again.
        durable = min(durable, acknowledged)
        state = .ready
        attempts = 0
        return [made(acknowledged)]
    }

    /// The frame in flight got no usable reply (timeout, connection lost): its
    /// outcome is unknown, so it goes again, unchanged, after a backoff.
    public mutating func failed(now: Timestamp, reason: String) -> [UploadEffect] {
        guard case .awaitingReply(let frame) = state else { return [] }
        let exponent = min(attempts - 1, 30)
        let ceiling = min(configuration.initialBackoffMilliseconds << Int64(exponent), configuration.maximumBackoffMilliseconds)
        // Full jitter over the upper half: between half the delay and all of it.
        let delay = ceiling / 2 + Int64(random.next() % UInt64(ceiling / 2 + 1))
        let until = now.adding(milliseconds: delay)
        state = .backingOff(frame, until: until)
        return [.retryScheduled(at: until, attempt: attempts + 1, reason: reason)]
    }
}

/// What the device must do after the uploader took an input.
public enum UploadEffect: Hashable, Sendable {
    /// The cloud holds everything through this position; persist it as the cursor.
    case accepted(through: OutboxPosition, frame: ClosedRange<OutboxPosition>)
    /// The cloud's copy is durable and in its last backup through this
    /// position; records up to it may go.
    case durable(through: OutboxPosition)
    /// The cloud asks for the public content of these hashes.
    case contentRequested([PublicHash])
    /// The cloud answers a reindex ask: the device states its vote for each
    /// hash again (`JournalEvent.votesReindexRequested`).
    case reindexRequested(CloudReindex)
    /// The app counts popularity another way than the device held: the
    /// device journals it (`JournalEvent.popularityModeLearned`).
    case popularityChanged(PopularityMode)
    /// The cloud expects an earlier (or later) position; sending resumes after `to`.
    case rewound(to: OutboxPosition, reason: String)
    /// The outbox had dropped messages after a rewind's position (the cloud
    /// was restored from a backup older than the one that let them go); the
    /// device made `count` of them again from its journal (added by the
    /// store as it persists, `SyncAction.persist`).
    case recoveredFromJournal(count: Int)
    /// The cloud holds another history under the frame's epoch, which an
    /// earlier incarnation of the device used: the device moves its epoch
    /// above `cloudHead`, the newest position the cloud holds of it.
    case epochTaken(cloudHead: OutboxPosition, reason: String)
    /// The cloud holds a later epoch of the device than the frame's, which
    /// it has ended at `held`: the device moves its messages after `held` to
    /// an epoch above `cloudHead`, the newest position the cloud holds of it.
    case epochEnded(held: OutboxPosition, cloudHead: OutboxPosition, reason: String)
    /// The device store moved its current epoch from `from` to `to`, with
    /// the messages the cloud did not hold (added by the store as it
    /// persists, `SyncAction.persist`).
    case epochAdvanced(from: Epoch, to: Epoch)
    /// The cloud does not hold the dictionary the frame was deflated
    /// against (it restarted, or let it go): the messages go again at once,
    /// deflated alone.
    case dictionaryUnknown(reason: String)
    /// The frame goes again at `at`; `attempt` is the number it will be.
    case retryScheduled(at: Timestamp, attempt: Int, reason: String)
    /// The uploader stopped: the cloud refused for good.
    case stopped(WireError)
}
