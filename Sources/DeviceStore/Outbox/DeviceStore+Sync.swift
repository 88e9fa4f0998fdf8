import Crypto
import Foundation
import GRDB
import IndexModel
import SQLiteSupport
import SyncWire

extension DeviceStore {
    /// The key the cloud gave this device at enrolment, if it has one. It signs
    /// every frame and is kept in `sync_state`, so a backup carries it.
    public func deviceKey() throws(DeviceStoreError) -> [UInt8]? {
        // A device has one key for life (`setDeviceKey` refuses another), so
        // once read it is remembered: every sync session starts with it.
        if let key = knownDeviceKey.withLock({ $0 }) { return key }
        let key = try read { db in
            try Data.fetchOne(db, sql: "SELECT value FROM sync_state WHERE key = 'device_key'").map { [UInt8]($0) }
        }
        if let key { knownDeviceKey.withLock { $0 = key } }
        return key
    }

    /// What this device offers the cloud at enrolment so that asking again
    /// (after a lost answer, a crash, a restore of a backup taken before the
    /// key arrived) gets the same key back: HMAC-SHA256 under the store's
    /// vote secret, which never leaves the device, of the app and device id.
    /// Nobody else can make it; the cloud keeps only its SHA-256.
    public var enrolmentProof: [UInt8] {
        var label = Array("sightline enrolment proof\n".utf8)
        label += Array(app.rawValue.utf8) + [0x0A] + Array(deviceID.rawValue.utf8)
        return Array(HMAC<SHA256>.authenticationCode(for: label, using: SymmetricKey(data: privacyKeys.voteSecret)))
    }

    /// Keeps the key from enrolment. A device has one key for life.
    public func setDeviceKey(_ key: [UInt8]) throws(DeviceStoreError) {
        guard key.count == 32 else {
            throw DeviceStoreError(.sync, "a device key is 32 bytes, not \(key.count)")
        }
        // A pooled connection, which gives every new in-memory store its
        // key, keeps the statements; a store's own connection does not.
        let pooled = access.isPooled
        try write { db in
            func statement(_ sql: String) throws -> Statement { try pooled ? db.cachedStatement(sql: sql) : db.makeStatement(sql: sql) }
            if let existing = try Data.fetchOne(statement("SELECT value FROM sync_state WHERE key = 'device_key'")),
               [UInt8](existing) != key {
                throw DeviceStoreError(.sync, "this device already has a different key")
            }
            try statement("INSERT OR REPLACE INTO sync_state (key, value) VALUES ('device_key', ?)").execute(arguments: [Data(key)])
        }
        // Committed: the first sync need not read it back.
        knownDeviceKey.withLock { $0 = key }
    }

    /// A sync run from this store's cursor. With nothing pending it starts
    /// with a probe of the last acknowledged message (`SyncRun`).
    public func beginSync(configuration: UploaderConfiguration = UploaderConfiguration(),
                          maximumAttempts: Int = 8) throws(DeviceStoreError) -> SyncRun {
        // The status counts the messages after the cursor: none pending
        // means a probe, without reading the outbox to find out.
        let status = try syncStatus()
        guard let key = try deviceKey() else {
            throw DeviceStoreError(.sync, "the device is not enrolled: it has no device key")
        }
        let uploader = Uploader(app: app, device: deviceID, key: key, acknowledged: status.acknowledged,
                                durable: status.durable, popularity: try popularityMode(), configuration: configuration,
                                dictionary: frameDictionary.withLock { $0 })
        let probe = status.pending == 0 ? try retainedRecord(at: status.acknowledged) : nil
        return SyncRun(uploader: uploader, probe: probe, maximumAttempts: maximumAttempts)
    }

    /// Performs `action` while it is the store's part of `run` (reading the
    /// outbox, persisting effects) and returns the first action that is the
    /// driver's: send, wait, or finished, with the store's status filled in.
    ///
    /// Persisting journals content requests first (so the answer is in the
    /// outbox before the cursor moves), then stores the cursor and durable
    /// watermark. When the store moved its epoch (`advanceEpoch`), the
    /// effects end with `.epochAdvanced`; when it made dropped messages again
    /// from its journal (`recoverDroppedMessages`), with `.recoveredFromJournal`.
    public func perform(_ action: SyncAction, in run: inout SyncRun, now: Timestamp) throws(DeviceStoreError) -> SyncAction {
        var action = action
        while true {
            switch action {
            case .readOutbox(let after, let limit):
                action = run.outboxRead(try pendingOutbox(after: after, limit: limit), now: now)
            case .persist(var effects, let acknowledged, let durable):
                let outcome = try apply(effects, acknowledged: acknowledged, durable: durable)
                if let advance = outcome.advance {
                    effects.append(.epochAdvanced(from: advance.from, to: advance.to))
                }
                if outcome.recovered > 0 {
                    effects.append(.recoveredFromJournal(count: outcome.recovered))
                }
                effects += outcome.restated.map(UploadEffect.reindexRequested)
                frameDictionary.withLock { $0 = run.uploader.dictionary }
                action = run.persisted(effects, now: now)
            case .finished(var report):
                if report.status == nil { report.status = try syncStatus() }
                return .finished(report)
            case .send, .wait:
                return action
            }
        }
    }

    /// The first frame a sync run would send at `now` with something
    /// pending, built and not sent; nil when nothing is pending. For tests
    /// and tools that carry a frame by hand.
    public func pendingFrame(now: Timestamp) throws(DeviceStoreError) -> UploadFrame? {
        var run = try beginSync()
        guard case .send(let frame) = try perform(run.next(now: now), in: &run, now: now), !frame.isProbe else { return nil }
        return frame
    }

    /// The outbox record at `position`, if the outbox still holds it.
    func retainedRecord(at position: OutboxPosition) throws(DeviceStoreError) -> OutboxRecord? {
        guard let before = position.previousInEpoch else { return nil }
        return try pendingOutbox(after: before, limit: 1).first { $0.position == position }
    }

    private func apply(_ effects: [UploadEffect], acknowledged: OutboxPosition, durable: OutboxPosition) throws(DeviceStoreError)
        -> (advance: (from: Epoch, to: Epoch)?, recovered: Int, restated: [CloudReindex]) {
        for case .popularityChanged(let mode) in effects {
            try recordPopularityMode(mode)
        }
        for case .contentRequested(let hashes) in effects {
            try recordContentRequests(hashes, acknowledged: acknowledged)
        }
        for case .reindexRequested(let request) in effects {
            try recordCloudReindex(request)
        }
        var restated: [CloudReindex] = []
        let moves = effects.contains { effect in
            switch effect {
            case .rewound, .epochEnded, .epochTaken: true
            default: false
            }
        }
        if moves, let request = try restateSkipped(before: acknowledged) { restated.append(request) }
        var advance: (from: Epoch, to: Epoch)?
        var recovered = 0
        for effect in effects {
            switch effect {
            case .accepted:
                advance = try take(acknowledged, durable: durable) ?? advance
            case .rewound(let position, _):
                // A gap says the cloud holds everything before it. Stored, that
                // moves the cursor forward only: past what an earlier reply
                // failed to confirm, or past the tail of an epoch the cloud
                // ended (lost with an earlier wipe), which would otherwise be
                // offered again on every sync. A cloud that holds less than the
                // cursor is handled by the uploader's rewind, and by putting
                // back what the outbox dropped since (`recoverDroppedMessages`).
                if let moved = try take(position, durable: min(durable, position)) {
                    advance = moved
                } else {
                    recovered += try recoverDroppedMessages(after: position)
                }
            case .epochTaken(let cloudHead, _):
                advance = try advanceEpoch(past: cloudHead) ?? advance
            case .epochEnded(let held, let cloudHead, _):
                advance = try advanceEpoch(past: cloudHead, held: held) ?? advance
            default:
                break
            }
        }
        return (advance, recovered, restated)
    }

    /// Before the cursor moves on to `position` in a later epoch than its
    /// own (a gap, or an epoch the cloud ended, sends the device on to where
    /// the cloud holds it): the cloud has ended the device's earlier epochs,
    /// perhaps short of messages it once acknowledged (it was restored from
    /// an older backup since) or never got, and their votes and withdrawals
    /// may never count. Which ones the cloud lacks it does not say, so the
    /// store journals a request to state its vote again for every hash any
    /// message of those epochs voted for or withdrew (made again from the
    /// journal, so what the outbox dropped counts too), after the expiry
    /// sweep its own writes begin with, and returns it; nil when they name
    /// none. It comes before the cursor moves, so a crash between the two
    /// repeats it, which changes nothing.
    private func restateSkipped(before position: OutboxPosition) throws(DeviceStoreError) -> CloudReindex? {
        let acknowledged = try read { db in try OutboxStore.acknowledged(db) }
        guard position.epoch > acknowledged.epoch else { return nil }
        var hashes = Set<PublicHash>()
        for replayed in try replayedOutbox(after: .nothing, before: OutboxPosition(epoch: position.epoch, seq: .beforeFirst)) {
            let message: OutboxMessage
            do {
                message = try OutboxMessage.decode(replayed.message)
            } catch {
                throw DeviceStoreError(.corruptStore, "the outbox message at \(replayed.position) cannot be made again: \(error)")
            }
            switch message {
            case .vote(let hash, _), .withdraw(let hash, _): hashes.insert(hash)
            default: break
            }
        }
        guard !hashes.isEmpty else { return nil }
        let request = CloudReindex(after: acknowledged, through: position, hashes: hashes.sorted(), more: false)
        _ = try journalOwnWrite { _, appender in
            try appender.append(.votesReindexRequested(VoteReindexRequest(request)))
        }
        return request
    }

    /// After a rewind to `position` below the durable watermark (the cloud
    /// holds less than its backup once held: it was restored from an older
    /// backup), the watermark comes back to `position`, and the messages the
    /// outbox dropped after it are made again from the journal, under their
    /// original positions, up to the first one it still holds. Returns how
    /// many came back.
    ///
    /// The outbox drops a message once the cloud's latest backup holds it.
    /// The journal still has every event, and the fold numbers the messages
    /// it implies the same way every time (`rebuildProjections` relies on
    /// that too), so the cloud gets the very messages it lost and its counts
    /// converge exactly. Without this, the first message the outbox still
    /// holds may even seem to follow `position` (the first of a later epoch)
    /// and sending on would end `position`'s epoch short. Messages the
    /// journal lacks as well (lost with a wipe of this device) cannot come
    /// back.
    func recoverDroppedMessages(after position: OutboxPosition) throws(DeviceStoreError) -> Int {
        // Only messages at or before the durable watermark are ever dropped.
        let durable = try read { db in try OutboxStore.durable(db) }
        guard position < durable else { return 0 }
        let missing = try pendingOutbox(after: position, limit: 1).first.map { next throws(DeviceStoreError) in
            try replayedOutbox(after: position, before: next.position)
        } ?? []
        try write { db in
            let insert = try db.cachedStatement(sql: """
                INSERT OR IGNORE INTO outbox (epoch, seq, journal_seq, message) VALUES (?, ?, ?, ?)
                """)
            for message in missing {
                try insert.execute(arguments: [message.position.epoch, message.position.seq, message.journalSeq,
                                               Data(message.message)])
            }
            // What comes after `position` must not be dropped again before
            // the cloud's backup holds it once more.
            if try OutboxStore.durable(db) > position {
                try OutboxStore.setPosition(db, writePath.outbox, "durable", position)
            }
        }
        return missing.count
    }

    /// The cloud holds this device through `position`. Normally that is stored
    /// as the cursor. When it is past anything this store wrote in its own
    /// epoch or later (its clock ran back past an earlier restore, or an
    /// earlier incarnation used the same epoch), the store moves its epoch
    /// above it instead (docs/SYNC.md, "Epochs").
    ///
    /// An ack moves only the sync positions and prunes the outbox below
    /// them, so the store's other memos (its journal's and outbox's heads,
    /// its earliest expiry) stay, and an in-memory store reads its new
    /// status in the same transaction rather than in a read of its own
    /// after it. An advance journals an event and moves the outbox: it
    /// forgets them all.
    private func take(_ position: OutboxPosition, durable: OutboxPosition) throws(DeviceStoreError) -> (from: Epoch, to: Epoch)? {
        let now = clock.now()
        let keys = privacyKeys
        return try write(keepsMemos: true) { db in
            forgetStatus()
            let slots = writePath.outbox
            let state = try OutboxState.read(db, slots)
            let epoch = state.epoch
            let beyond = position.epoch > epoch
                || (position.epoch == epoch && state.acknowledged.epoch < epoch && position > state.head)
            if beyond {
                forgetMemos()
                return try DeviceStore.advanceEpoch(db, slots, past: position, now: now, keys: keys, random: random)
            }
            try OutboxStore.recordAcknowledgement(db, slots, state: state, acceptedThrough: position, durableThrough: durable)
            if isInMemory {
                let status = try DeviceStore.readSyncStatus(db, slots)
                cachedStatus.withLock { $0 = status }
            }
            return nil
        }
    }

    /// How far above the cloud's epoch an advance goes at least, plus one
    /// and a random number below it (unless the clock is later still). A
    /// restore from a backup of the cloud's epoch begins at most this far
    /// above it when the clock is behind; an advance lands clear of it.
    static let epochAdvanceStep: UInt64 = 1 << 16

    /// Moves the store's current epoch above `cloudHead`, the newest position
    /// the cloud holds of this device, in one transaction: a journaled
    /// `epochAdvanced` event, whose fold moves the current epoch's outbox
    /// messages that the cloud does not hold, and the cursor at the cloud's
    /// head, so that the moved epoch's first frame follows it. Without this a
    /// device whose clock ran back past an earlier restore writes in an epoch
    /// the cloud counts as ended, and nothing it writes is ever accepted.
    /// Returns the move, or nil when the store is already above `cloudHead`.
    ///
    /// `held`, when the cloud said it, is how far the cloud holds an epoch
    /// it ended (`Rejection.ended`): when that is the store's own epoch, the
    /// messages through it stay there and only those after it move. Without
    /// it the cloud must hold none of the store's epoch.
    @discardableResult
    func advanceEpoch(past cloudHead: OutboxPosition, held: OutboxPosition? = nil) throws(DeviceStoreError) -> (from: Epoch, to: Epoch)? {
        let now = clock.now()
        let keys = privacyKeys
        return try write { db in
            try DeviceStore.advanceEpoch(db, writePath.outbox, past: cloudHead, held: held, now: now, keys: keys, random: random)
        }
    }

    private static func advanceEpoch(_ db: Database, _ slots: StatementSlots, past cloudHead: OutboxPosition, held: OutboxPosition? = nil,
                                     now: Timestamp, keys: PrivacyProjection.Keys, random: any RandomSource) throws -> (from: Epoch, to: Epoch)? {
        let epoch = try OutboxStore.epoch(db)
        let acknowledged = try OutboxStore.acknowledged(db)
        guard cloudHead.epoch >= epoch else {
            // An older epoch collided: its messages cannot be sent, and the
            // device goes on after the cloud's head.
            try OutboxStore.setPosition(db, slots, "acknowledged", max(acknowledged, cloudHead))
            return nil
        }
        let kept = held.map { $0.epoch == epoch ? $0.seq : .beforeFirst } ?? .beforeFirst
        guard held != nil || acknowledged.epoch < epoch || acknowledged.seq == .beforeFirst else {
            throw DeviceStoreError(.sync, """
                the cloud holds this device through \(cloudHead), at or past this store's epoch \(epoch), \
                yet it acknowledged this store's own messages of epoch \(epoch) through \(acknowledged) \
                and did not say how far it holds that epoch
                """)
        }
        // Epochs are numbers chosen here, from the cloud's and the clock's.
        // The random part keeps two incarnations that advance past the same
        // cloud head (the first wiped before the cloud heard its new epoch)
        // from choosing the same epoch, as a restore's does.
        let above = cloudHead.epoch.rawValue + epochAdvanceStep + 1 + random.next() % epochAdvanceStep
        let next = Epoch(max(above, UInt64(max(now.millisecondsSince1970, 0))))
        try db.execute(sql: "UPDATE store_meta SET value = ? WHERE key = 'epoch'", arguments: [next])
        let appender = try JournalAppender(db: db, time: now, keys: keys)
        try appender.append(.epochAdvanced(from: epoch, to: next, kept: kept))
        try OutboxStore.setPosition(db, slots, "acknowledged", max(acknowledged, cloudHead))
        return (epoch, next)
    }
}

/// Drives a device's sync run (`SyncRun`) over a transport until the outbox
/// is sent: the async edge around the pure machine. Waiting for a backoff
/// goes through `sleep`, so tests can skip real time.
public struct SyncClient: Sendable {
    public let store: DeviceStore
    public let transport: any Transport
    public let configuration: UploaderConfiguration
    public let maximumAttempts: Int
    private let sleep: @Sendable (Int64) async -> Void

    public init(store: DeviceStore, transport: any Transport, configuration: UploaderConfiguration = UploaderConfiguration(),
                maximumAttempts: Int = 8,
                sleep: @escaping @Sendable (Int64) async -> Void = { milliseconds in
                    try? await Task.sleep(for: .milliseconds(milliseconds))
                }) {
        self.store = store
        self.transport = transport
        self.configuration = configuration
        self.maximumAttempts = max(maximumAttempts, 1)
        self.sleep = sleep
    }

    /// Sends everything pending; returns what happened. A permanent rejection
    /// or too many failed attempts end the run with `failure` set.
    public func run() async throws(DeviceStoreError) -> SyncReport {
        var run = try store.beginSync(configuration: configuration, maximumAttempts: maximumAttempts)
        // After a wait the run acts as of the wake time, even when the store's
        // clock is one that sleeping does not move.
        var waitedUntil: Timestamp?
        var now: Timestamp { max(store.now, waitedUntil ?? store.now) }
        var action = try store.perform(run.next(now: now), in: &run, now: now)
        while true {
            switch action {
            case .finished(let report):
                return report
            case .wait(let until):
                let from = now
                await sleep(until.millisecondsSince1970 - from.millisecondsSince1970)
                waitedUntil = until
                action = try store.perform(run.next(now: now), in: &run, now: now)
            case .send(let frame):
                let next: SyncAction
                do {
                    next = run.received(try await transport.exchange(frame.encoded), now: now)
                } catch {
                    next = run.failed(reason: error.message, now: now)
                }
                action = try store.perform(next, in: &run, now: now)
            case .readOutbox, .persist:
                action = try store.perform(action, in: &run, now: now)
            }
        }
    }
}
