import Foundation
import IndexModel
import SyncWire

/// What one ingest transaction reads and writes besides the fold's rows, as
/// a backend keeps it. `IngestCore` decides what happens to a frame and says
/// it through these calls, so every backend ingests by the same code.
///
/// A backend that several processes share makes the transaction exact
/// across them: `heldEpochs` locks the device's stream, so one frame of a
/// device is placed at a time, and `foldRows` locks what the fold changes
/// (`docs/CLOUD.md`, "Many servers, one database").
package protocol IngestTransaction {
    associatedtype Rows: FoldRows

    /// The last seq held of each epoch of the device.
    func heldEpochs(app: AppID, device: DeviceID) throws -> [(epoch: Epoch, last: OutboxSeq)]
    /// Whether one log row holds exactly this frame: the same range, all of
    /// it accepted then, with the same payload digest.
    func holdsFrame(app: AppID, _ frame: UploadFrame) throws -> Bool
    /// The device's log rows of `epoch` that hold a new message in `from...through`, in order.
    func loggedRows(app: AppID, device: DeviceID, epoch: Epoch, from: OutboxSeq, through: OutboxSeq) throws -> [StoredLogRow]
    /// The rows the fold of a frame will change. `entries` are the device's
    /// entries for the frame's hashes (their keys and pseudonyms), made only
    /// when `wantsEntries`.
    func foldRows(app: AppID, entries: [FoldMemory.Entry]) throws -> Rows
    /// Whether `foldRows` needs the frame's entries.
    var wantsEntries: Bool { get }
    /// Appends the frame, whose messages from `acceptedFrom` on are new, to
    /// the cloud log; returns its log seq.
    func appendLog(app: AppID, _ frame: UploadFrame, acceptedFrom: OutboxSeq, receivedAt: Timestamp) throws -> Int64
    /// After the fold of a frame: keeps what `rows` changed.
    func finishFold(_ rows: Rows) throws
    /// The position the cloud's last backup snapshot holds of the device.
    func backedUp(app: AppID, device: DeviceID) throws -> OutboxPosition
    /// The app's wanted hashes, oldest first.
    func wantedHashes(app: AppID) throws -> [(hash: PublicHash, key: Data, wantedSeq: Int64)]
    /// What decides whether an ack asks the voter for the hash's content.
    func askState(app: AppID, key: Data, voter: [UInt8]) throws -> AskState?
    /// How the app's devices report popularity (`apps.popularity`).
    func popularity(app: AppID) throws -> PopularityMode
}

/// A wanted hash's state and one voter's part in it, for `ContentRule.asksVoter`.
package struct AskState: Sendable {
    package var wantedSeq: Int64?
    package var liveVotes: Int64
    package var hasContent: Bool
    /// Whether the voter's vote is live (false: no vote, or withdrawn).
    package var isLive: Bool
    package var hasOffer: Bool

    package init(wantedSeq: Int64?, liveVotes: Int64, hasContent: Bool, isLive: Bool, hasOffer: Bool) {
        self.wantedSeq = wantedSeq
        self.liveVotes = liveVotes
        self.hasContent = hasContent
        self.isLive = isLive
        self.hasOffer = hasOffer
    }
}

/// What ingest decided about a frame, inside its transaction.
package enum IngestDecision {
    case accepted(Ack, messages: Int)
    case duplicate(Ack)
    case rejected(Rejection)
}

/// Ingest's decisions, the same for every backend (`docs/CLOUD.md`,
/// "Ingest, in order"): the frame's position against what the cloud holds
/// (`FramePlacement`), the check of an overlap message by message, the
/// append and the fold, and the ack with its content requests.
package struct IngestCore {
    package let threshold: Int
    package let agreement: Int
    package let secrets: CloudSecrets
    package let clock: any StoreClock

    package init(threshold: Int, agreement: Int, secrets: CloudSecrets, clock: any StoreClock) {
        self.threshold = threshold
        self.agreement = agreement
        self.secrets = secrets
        self.clock = clock
    }

    /// The most content requests one ack carries; a device hears the rest
    /// in later acks.
    package static let requestsPerAck = 256

    /// Classifies the frame against the device's epochs and, when it brings
    /// new messages, appends and folds them, in the caller's transaction.
    /// `memory` is the fold's (`FoldMemory`); its `asks` keep each device's
    /// requests between frames where the backend keeps the memory.
    package func decide<Transaction: IngestTransaction>(_ frame: UploadFrame, messages: [OutboxMessage], app: AppID,
                                                        in transaction: Transaction, memory: FoldMemory) throws -> IngestDecision {
        let epochs = try transaction.heldEpochs(app: app, device: frame.device)
        // Where the cloud holds the device through: an equivocation names it,
        // so that a device whose epoch another incarnation of it already used
        // can move above it.
        let newest = epochs.max { $0.epoch < $1.epoch }
        let cloudHead = OutboxPosition(epoch: newest?.epoch ?? .beforeFirst, seq: (newest?.last ?? .beforeFirst).next)
        let acceptedFrom: OutboxSeq
        switch FramePlacement.of(epoch: frame.epoch, firstSeq: frame.firstSeq, lastSeq: frame.lastSeq,
                                 follows: frame.follows, isProbe: frame.isProbe, held: epochs) {
        case .refuse(let rejection):
            return .rejected(rejection)
        case .duplicate(let head, let overlap):
            if let conflict = try firstConflict(frame, messages: messages, app: app, through: overlap.upperBound, in: transaction) {
                return .rejected(equivocation(frame, at: conflict, head: cloudHead))
            }
            var ackValue = try ack(device: frame.device, app: app, through: head, messages: messages,
                                   popularity: try transaction.popularity(app: app), memory: memory, in: transaction)
            ackValue.reindex = try reindex(frame, messages: messages, app: app, held: epochs, in: transaction)
            return .duplicate(ackValue)
        case .append(let from, let overlap):
            if let overlap, let conflict = try firstConflict(frame, messages: messages, app: app, through: overlap.upperBound,
                                                             in: transaction) {
                return .rejected(equivocation(frame, at: conflict, head: cloudHead))
            }
            acceptedFrom = from
        }
        let fresh = messages[frame.firstSeq.count(before: acceptedFrom)...]
        var entries: [FoldMemory.Entry] = []
        if transaction.wantsEntries {
            let stream = DeviceStream(app: app, device: frame.device)
            var known = memory.devices[stream] ?? [:]
            for message in fresh {
                if case .page = message { continue }
                guard let hash = message.hash, known[hash] == nil else { continue }
                known[hash] = FoldMemory.Entry(app: app, key: Data(secrets.key(app: app, hash: hash)),
                                               voter: secrets.voter(device: frame.device, hash: hash))
                memory.count += 1
            }
            memory.devices[stream] = known
            entries = Array(known.values)
        }
        let rows = try transaction.foldRows(app: app, entries: entries)
        // After `foldRows`, which in a shared database reads it under the app's lock.
        let popularity = try transaction.popularity(app: app)
        let receivedAt = clock.now()
        let logSeq = try transaction.appendLog(app: app, frame, acceptedFrom: acceptedFrom, receivedAt: receivedAt)
        // A `Refusal` from the fold rolls the whole transaction back.
        let fold = CloudFold(rows: rows, threshold: threshold, agreement: agreement, secrets: secrets,
                             popularity: popularity.privateSettings.map { [app: $0] } ?? [:])
        try fold.apply(fresh, device: frame.device, app: app, logSeq: logSeq, receivedAt: receivedAt, memory: memory)
        try fold.flush(memory, forgetting: false)
        try rows.recordEpoch(app: app, device: frame.device, epoch: frame.epoch, lastSeq: frame.lastSeq)
        try transaction.finishFold(rows)
        var ackValue = try ack(device: frame.device, app: app, through: frame.last, messages: messages, popularity: popularity,
                               memory: memory, in: transaction)
        ackValue.reindex = try reindex(frame, messages: messages, app: app, held: epochs, in: transaction)
        return .accepted(ackValue, messages: fresh.count)
    }

    /// The most messages of the log one ack reads for a reindex request; a
    /// device told there is more asks again after where it stopped.
    package static let reindexMessagesPerAck: UInt64 = 65_536

    /// The answer to the frame's last reindex ask (`OutboxMessage.reindexAsk`),
    /// nil when it has none or is a probe: the public hashes that the
    /// device's messages the cloud holds after the ask's position, in the
    /// device's epochs before the frame's, voted for or withdrew. Those
    /// epochs have ended (the frame's began after them), so the answer is
    /// the same every time the frame is acknowledged, and the cloud keeps
    /// nothing for it. At most `requestsPerAck` hashes and
    /// `reindexMessagesPerAck` messages a request: `through` says where it stopped.
    private func reindex<Transaction: IngestTransaction>(_ frame: UploadFrame, messages: [OutboxMessage], app: AppID,
                                                         held: [(epoch: Epoch, last: OutboxSeq)],
                                                         in transaction: Transaction) throws -> CloudReindex? {
        guard !frame.isProbe,
              let after = messages.lazy.compactMap({ message -> OutboxPosition? in
                  if case .reindexAsk(let after) = message { after } else { nil }
              }).last else { return nil }
        var hashes = Set<PublicHash>()
        var through = after
        var budget = IngestCore.reindexMessagesPerAck
        let epochs = held.filter { $0.epoch >= after.epoch && $0.epoch < frame.epoch }.sorted { $0.epoch < $1.epoch }
        func request(more: Bool) -> CloudReindex {
            CloudReindex(after: after, through: through, hashes: hashes.sorted(), more: more)
        }
        for (epoch, last) in epochs {
            let from = epoch == after.epoch ? after.seq.next : .first
            guard from <= last else { continue }
            guard budget > 0 else { return request(more: true) }
            let until = OutboxSeq(min(last.rawValue, from.rawValue + budget - 1))
            budget -= until.rawValue - from.rawValue + 1
            for row in try transaction.loggedRows(app: app, device: frame.device, epoch: epoch, from: from, through: until) {
                var position = row.firstSeq
                for message in try row.messages() {
                    defer { position = position.next }
                    guard position >= max(from, row.acceptedFrom), position <= until else { continue }
                    switch message {
                    case .vote(let hash, _), .withdraw(let hash, _):
                        if !hashes.contains(hash) {
                            guard hashes.count < IngestCore.requestsPerAck else { return request(more: true) }
                            hashes.insert(hash)
                        }
                    default:
                        break
                    }
                    through = OutboxPosition(epoch: epoch, seq: position)
                }
            }
            through = OutboxPosition(epoch: epoch, seq: until)
            if until < last { return request(more: true) }
        }
        return request(more: false)
    }

    /// Whether a frame's message is the one the log holds at its position:
    /// the same message, or the content a purge left the keyed digest of.
    /// A withheld answer (`contentWithheld`) is the same as any content
    /// answer of its hash, either way round: a device that purged the
    /// activity makes it again in place of the content it sent, and a
    /// device restored from a backup older than that purge makes the content.
    static func same(_ message: OutboxMessage, asHeld held: OutboxMessage, app: AppID, secrets: CloudSecrets) -> Bool {
        switch (message, held) {
        case (.contentWithheld(let sent), .content(let hash, _)), (.contentWithheld(let sent), .contentPurged(let hash, _)),
             (.content(let sent, _), .contentWithheld(let hash)):
            return sent == hash
        case (_, .contentPurged(let hash, let digest)):
            guard case .content(let sent, let content) = message, sent == hash else { return false }
            return secrets.contentDigest(app: app, content: content) == digest
        default:
            return message == held
        }
    }

    private func equivocation(_ frame: UploadFrame, at seq: OutboxSeq, head: OutboxPosition) -> Rejection {
        Rejection(WireError(.equivocation, "message \(frame.epoch):\(seq) differs from the one the cloud accepted at that position"),
                  expected: head)
    }

    /// The ack for a device, with the content requests for it: every wanted
    /// hash of the app this device holds a live vote for and has made no offer
    /// of (`ContentRule.asksVoter`), oldest first, up to `requestsPerAck`.
    /// Worked out afresh for each ack from the projections, so a request
    /// cannot be lost with an ack: the next ack asks again, until the device
    /// answers or the hash is no longer wanted. Only pseudonyms tie a vote to
    /// a device, so each hash checked costs an HMAC and a lookup; `memory`'s
    /// `asks` (`AskMemory`) keep each device's requests between frames, so an
    /// ack checks only the hashes that changed since the device's last ack
    /// and those `messages` voted for, withdrew or offered. Every ack says
    /// the app's popularity mode, so devices learn it as they sync.
    private func ack<Transaction: IngestTransaction>(device: DeviceID, app: AppID, through head: OutboxPosition,
                                                     messages: [OutboxMessage], popularity: PopularityMode, memory: FoldMemory,
                                                     in transaction: Transaction) throws -> Ack {
        let backedUp = try transaction.backedUp(app: app, device: device)
        let asks = memory.asks
        let stream = DeviceStream(app: app, device: device)
        var requests: [PublicHash: AskMemory.Request]
        let names = memory.names(for: stream, secrets: secrets)
        if let known = asks.device(stream), let changed = asks.changes(since: known.mark) {
            requests = known.requests
            var check = Set(changed)
            for message in messages {
                switch message {
                case .vote(let hash, _), .withdraw(let hash, _), .content(let hash, _): check.insert(hash)
                case .signal, .page, .report, .reindexAsk, .contentPurged, .contentWithheld: break
                }
            }
            for hash in check {
                let named = names.of(hash)
                requests[hash] = try request(hash, key: named.key, voter: named.voter, app: app, in: transaction)
            }
        } else {
            requests = [:]
            for wanted in try transaction.wantedHashes(app: app) {
                requests[wanted.hash] = try request(wanted.hash, key: wanted.key, voter: names.voter(wanted.hash), app: app,
                                                    in: transaction)
            }
        }
        asks.remember(AskMemory.Device(mark: asks.head, requests: requests), for: stream)
        let hashes = requests.sorted { a, b in
            a.value.wantedSeq != b.value.wantedSeq ? a.value.wantedSeq < b.value.wantedSeq : a.key < b.key
        }.prefix(IngestCore.requestsPerAck).map(\.key)
        return Ack(acceptedThrough: head, durableThrough: head, backedUpThrough: min(backedUp, head), contentRequests: hashes,
                   popularity: popularity)
    }

    /// `hash` as a request to the device whose pseudonym for it is `voter`,
    /// or nil when the device is not asked for it (`ContentRule.asksVoter`;
    /// the hash must be wanted).
    private func request<Transaction: IngestTransaction>(_ hash: PublicHash, key: Data, voter: [UInt8], app: AppID,
                                                         in transaction: Transaction) throws -> AskMemory.Request? {
        guard let state = try transaction.askState(app: app, key: key, voter: voter), let wantedSeq = state.wantedSeq,
              ContentRule.asksVoter(isLive: state.isLive, hasOffer: state.hasOffer, liveVotes: state.liveVotes,
                                    threshold: threshold, hasContent: state.hasContent) else { return nil }
        return AskMemory.Request(key: key, wantedSeq: wantedSeq)
    }

    /// The first seq in `frame.first...through` whose message differs from the
    /// one the cloud log holds, or nil when they all agree.
    private func firstConflict<Transaction: IngestTransaction>(_ frame: UploadFrame, messages: [OutboxMessage], app: AppID,
                                                               through: OutboxSeq, in transaction: Transaction) throws -> OutboxSeq? {
        // The common case, a resent frame: the same range with the same digest.
        if try transaction.holdsFrame(app: app, frame) { return nil }
        for stored in try transaction.loggedRows(app: app, device: frame.device, epoch: frame.epoch, from: frame.firstSeq,
                                                 through: through) {
            for (seq, message) in zip(sequence(first: stored.firstSeq) { $0.next }, try stored.messages()) {
                guard seq >= stored.acceptedFrom, seq >= frame.firstSeq, seq <= through, seq <= frame.lastSeq else { continue }
                if !Self.same(messages[frame.firstSeq.count(before: seq)], asHeld: message, app: app, secrets: secrets) { return seq }
            }
        }
        return nil
    }
}

extension IngestDecision {
    /// The reply to `frame` from the device named `name`, signed with its key.
    package func result(name: DeviceID, frame: UploadFrame, key: [UInt8]) -> IngestResult {
        switch self {
        case .accepted(let ack, let count):
            IngestResult(reply: CloudReply.ack(ack).encoded(device: name, answering: frame.signature, key: key, version: frame.version),
                         outcome: .accepted(messages: count), device: name)
        case .duplicate(let ack):
            IngestResult(reply: CloudReply.ack(ack).encoded(device: name, answering: frame.signature, key: key, version: frame.version),
                         outcome: .duplicate, device: name)
        case .rejected(let rejection):
            IngestResult(reply: CloudReply.rejection(rejection).encoded(device: name, answering: frame.signature, key: key,
                                                                        version: frame.version),
                         outcome: .rejected(rejection.error), device: name)
        }
    }
}

extension IngestResult {
    /// A rejection of `frame`, signed with `key` when the device proved
    /// itself, in the frame's version; without a frame, in `version` (what
    /// the unread bytes announced), or else in the newest.
    package static func rejecting(_ error: WireError, device: DeviceID?, frame: UploadFrame?, key: [UInt8]?,
                                  version: UInt8? = nil) -> IngestResult {
        let reply = CloudReply.rejection(Rejection(error)).encoded(device: device, answering: frame?.signature, key: key,
                                                                    version: frame?.version ?? version ?? UploadFrame.version)
        return IngestResult(reply: reply, outcome: .rejected(error), device: device)
    }
}
