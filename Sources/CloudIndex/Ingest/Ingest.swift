import Crypto
import Foundation
import GRDB
import IndexModel
import SQLiteSupport
import SyncWire

/// What one `ingest` did.
public struct IngestResult: Sendable {
    /// What became of the frame.
    public enum Outcome: Hashable, Sendable {
        /// New messages were appended to the cloud log and folded.
        case accepted(messages: Int)
        /// Every message was already held: the frame was acknowledged again.
        case duplicate
        case rejected(WireError)
    }

    /// The reply to send back, signed when the device is known.
    public let reply: [UInt8]
    public let outcome: Outcome
    /// The sending device, once the frame could be read.
    public let device: DeviceID?
}

/// A frame whose structure was read and whose signature is its enrolled
/// device's: what `CloudStore.authenticate` hands back for `ingest`.
public struct AuthenticatedFrame: Sendable {
    /// The frame, with `device` the id the cloud keeps the device's stream
    /// under (its name unless another app's device had it first).
    public let frame: UploadFrame
    /// The device's name, as the frame gave it: replies are addressed to it.
    public let name: DeviceID
    /// The app the device enrolled for, which the frame names.
    public let app: AppID
    /// The device's key, which signs the reply.
    let key: [UInt8]

    init(frame: UploadFrame, id: DeviceID, app: AppID, key: [UInt8]) {
        name = frame.device
        var stored = frame
        stored.device = id
        self.frame = stored
        self.app = app
        self.key = key
    }

    /// The sending device's name, proven by its signature.
    public var device: DeviceID { name }
}

/// What `CloudStore.authenticate` found: a frame to ingest, or the refusal to send.
public enum FrameAuthentication: Sendable {
    case authenticated(AuthenticatedFrame)
    /// The frame is malformed, its device unknown or its signature wrong;
    /// nothing of it was stored.
    case refused(IngestResult)
}

extension CloudIndex {
    /// Reads a frame's structure and limits, finds its enrolled device and
    /// checks the signature (in constant time, before any inflating). Nothing
    /// is stored. A caller that rate-limits devices charges one only after
    /// this proved who sent the frame (`docs/SECURITY.md`).
    public func authenticate(_ bytes: [UInt8]) -> FrameAuthentication {
        let frame: UploadFrame
        do {
            frame = try UploadFrame.parse(bytes)
        } catch {
            return .refused(reject(error, device: nil, frame: nil, key: nil))
        }
        let device: EnrolledDevice?
        do {
            device = try enrolledDevice(app: frame.app, name: frame.device)
        } catch {
            return .refused(reject(WireError(.unavailable, "the cloud cannot read its device registry"), device: frame.device, frame: frame, key: nil))
        }
        guard let device else {
            return .refused(reject(WireError(.unknownDevice, "device \(frame.device) is not enrolled for app \(frame.app)"),
                                   device: frame.device, frame: frame, key: nil))
        }
        guard frame.isSigned(by: device.key) else {
            // Unsigned: the cloud never signs a reply to a frame whose own
            // signature failed, or anyone could collect signed replies.
            return .refused(reject(WireError(.badSignature, "the frame is not signed with the key of device \(frame.device)"),
                                   device: frame.device, frame: frame, key: nil))
        }
        return .authenticated(AuthenticatedFrame(frame: frame, id: device.id, app: frame.app, key: device.key))
    }

    /// Ingests an authenticated frame and returns the reply. The checks go on
    /// in the order of `docs/CLOUD.md`: the payload, then the frame's position
    /// against what the cloud holds for the device:
    /// - the next positions: appended to the cloud log and folded in one
    ///   transaction; the ack is built after the commit;
    /// - positions already held, with the same messages: acknowledged again and
    ///   nothing changes (a retry, a duplicate, a replay);
    /// - positions already held with other messages: `equivocation`, flagged;
    /// - a gap: `gap` with the position the cloud expects.
    public func ingest(_ authenticated: AuthenticatedFrame) -> IngestResult {
        let frame = authenticated.frame
        let name = authenticated.name
        let device = (app: authenticated.app, key: authenticated.key)
        let messages: [OutboxMessage]
        do {
            messages = try frame.messages()
        } catch {
            return reject(error, device: name, frame: frame, key: device.key)
        }
        do {
            let decision = try queue.cachedWrite(connection) { db in
                try self.apply(frame, messages: messages, app: device.app, db: db)
            }
            switch decision {
            case .accepted(let ack, let count):
                return IngestResult(reply: CloudReply.ack(ack).encoded(device: name, answering: frame.signature, key: device.key),
                                    outcome: .accepted(messages: count), device: name)
            case .duplicate(let ack):
                return IngestResult(reply: CloudReply.ack(ack).encoded(device: name, answering: frame.signature, key: device.key),
                                    outcome: .duplicate, device: name)
            case .rejected(let rejection):
                if rejection.error.code == .equivocation {
                    try? flagEquivocation(frame)
                }
                return IngestResult(reply: CloudReply.rejection(rejection).encoded(device: name, answering: frame.signature, key: device.key),
                                    outcome: .rejected(rejection.error), device: name)
            }
        } catch let refusal as Refusal {
            // The transaction rolled back: nothing of the frame was kept, and
            // the fold's memory may hold what it had folded of it.
            ingestMemory.forget()
            return reject(WireError(.refused, refusal.message), device: name, frame: frame, key: device.key)
        } catch {
            // The database failed (busy, full, I/O): nothing was kept, and the
            // device will send the same frame again.
            ingestMemory.forget()
            return reject(WireError(.unavailable, "the cloud could not store the frame: \(CloudIndex.describe(error))"),
                          device: name, frame: frame, key: device.key)
        }
    }

    /// The id and key of the device named `name` in `app`, or nil when it is
    /// not enrolled. Each frame needs them, so they are remembered after the
    /// first read.
    private func enrolledDevice(app: AppID, name: DeviceID) throws -> EnrolledDevice? {
        let memo = EnrolledName(app: app, name: name)
        if let known = enrolled.withLock({ $0[memo] }) { return known }
        let read = try self.read { db in
            guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT device, key FROM devices WHERE app = ? AND name = ?"),
                                             arguments: [app, name]) else { return nil as EnrolledDevice? }
            return EnrolledDevice(id: try Stored.column(row, 0, "devices.device of \(name)"),
                                  key: [UInt8](try Stored.column(row, 1, "devices.key of \(name)") as Data))
        }
        if let read { enrolled.withLock { $0[memo] = read } }
        return read
    }

    private func reject(_ error: WireError, device: DeviceID?, frame: UploadFrame?, key: [UInt8]?) -> IngestResult {
        let reply = CloudReply.rejection(Rejection(error)).encoded(device: device, answering: frame?.signature, key: key)
        return IngestResult(reply: reply, outcome: .rejected(error), device: device)
    }

    private enum Decision {
        case accepted(Ack, messages: Int)
        case duplicate(Ack)
        case rejected(Rejection)
    }

    /// Classifies the frame against the device's epochs and, when it brings new
    /// messages, appends and folds them. Runs inside the write transaction.
    private func apply(_ frame: UploadFrame, messages: [OutboxMessage], app: AppID, db: Database) throws -> Decision {
        let read = try statements.statement(.epochs, db)
        read.bind(1, frame.device)
        var epochs: [(epoch: Epoch, last: OutboxSeq)] = []
        do {
            defer { read.reset() }
            while try read.step() {
                epochs.append((Epoch(try Stored.position(read.int64(0), "device_epochs.epoch of \(frame.device)")),
                               OutboxSeq(try Stored.position(read.int64(1), "device_epochs.last_seq of \(frame.device)"))))
            }
        }
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
            if let conflict = try firstConflict(frame, messages: messages, through: overlap.upperBound, db: db) {
                return .rejected(equivocation(frame, at: conflict, head: cloudHead))
            }
            return .duplicate(try ack(device: frame.device, app: app, through: head, messages: messages,
                                      memory: ingestMemory.memory(db), db: db))
        case .append(let from, let overlap):
            if let overlap, let conflict = try firstConflict(frame, messages: messages, through: overlap.upperBound, db: db) {
                return .rejected(equivocation(frame, at: conflict, head: cloudHead))
            }
            acceptedFrom = from
        }
        let fresh = messages[frame.firstSeq.count(before: acceptedFrom)...]
        let receivedAt = clock.now()
        let logSeq = try CloudLog.append(frame, acceptedFrom: acceptedFrom, receivedAt: receivedAt, db: db, statements: statements)
        // A `Refusal` from the fold rolls the whole transaction back.
        let fold = fold(db, statements: statements)
        let memory = try ingestMemory.memory(db)
        try fold.apply(fresh, device: frame.device, app: app, logSeq: logSeq, receivedAt: receivedAt, memory: memory)
        try fold.flush(memory, forgetting: false)
        let record = try statements.statement(.recordEpoch, db)
        record.bind(1, frame.device)
        record.bind(2, frame.epoch)
        record.bind(3, frame.lastSeq)
        try record.execute()
        let ackValue = try ack(device: frame.device, app: app, through: frame.last, messages: messages, memory: memory, db: db)
        return .accepted(ackValue, messages: fresh.count)
    }

    private func equivocation(_ frame: UploadFrame, at seq: OutboxSeq, head: OutboxPosition) -> Rejection {
        Rejection(WireError(.equivocation, "message \(frame.epoch):\(seq) differs from the one the cloud accepted at that position"),
                  expected: head)
    }

    /// The fold into `db`'s projections; `statements` are the slots kept for `db`.
    func fold(_ db: Database, statements: StatementSlots) -> CloudFold {
        CloudFold(db: db, statements: statements, threshold: threshold, agreement: agreement,
                  voter: { [self] device, hash in voter(device: device, hash: hash) },
                  key: { [self] app, hash in key(app: app, hash: hash) },
                  contentDigest: { [self] app, content in contentDigest(app: app, content: content) })
    }

    /// The ack for a device, with the content requests for it: every wanted
    /// hash of the app this device holds a live vote for and has made no offer
    /// of (`ContentRule.asksVoter`), oldest first, up to `requestsPerAck`.
    /// Worked out afresh for each ack from the projections, so a request
    /// cannot be lost with an ack: the next ack asks again, until the device
    /// answers or the hash is no longer wanted. Only pseudonyms tie a vote to
    /// a device, so each hash checked costs an HMAC and a lookup; `memory`
    /// (`AskMemory`) keeps each device's requests between frames, so an ack
    /// checks only the hashes that changed since the device's last ack and
    /// those `messages` voted for, withdrew or offered.
    private func ack(device: DeviceID, app: AppID, through head: OutboxPosition, messages: [OutboxMessage], memory: FoldMemory,
                     db: Database) throws -> Ack {
        let registry = try statements.statement(.registry, db)
        registry.bind(1, device)
        var backedUp = OutboxPosition.nothing
        do {
            defer { registry.reset() }
            if try registry.step() {
                backedUp = OutboxPosition(epoch: Epoch(try Stored.position(registry.optionalInt64(0) ?? 0, "devices.backed_up_epoch of \(device)")),
                                          seq: OutboxSeq(try Stored.position(registry.optionalInt64(1) ?? 0, "devices.backed_up_seq of \(device)")))
            }
        }
        let asks = memory.asks
        var requests: [PublicHash: AskMemory.Request]
        if let known = asks.device(device), let changed = asks.changes(since: known.mark) {
            requests = known.requests
            var check = Set(changed)
            for message in messages {
                switch message {
                case .vote(let hash, _), .withdraw(let hash, _), .content(let hash, _): check.insert(hash)
                case .signal: break
                }
            }
            for hash in check {
                requests[hash] = try request(hash, key: Data(key(app: app, hash: hash)), device: device, app: app, memory: memory, db: db)
            }
        } else {
            requests = [:]
            let wanted = try statements.statement(.wanted, db)
            wanted.bind(1, app)
            defer { wanted.reset() }
            while try wanted.step() {
                guard let hash = PublicHash(wanted.blob(0)) else {
                    throw CloudError(.corruptStore, "hashes.hash of a wanted hash of app \(app) is not a public hash")
                }
                requests[hash] = try request(hash, key: Data(wanted.blob(1)), device: device, app: app, memory: memory, db: db)
            }
        }
        asks.remember(AskMemory.Device(mark: asks.head, requests: requests), for: device)
        let hashes = requests.sorted { a, b in
            a.value.wantedSeq != b.value.wantedSeq ? a.value.wantedSeq < b.value.wantedSeq : a.key < b.key
        }.prefix(CloudIndex.requestsPerAck).map(\.key)
        return Ack(acceptedThrough: head, durableThrough: head, backedUpThrough: min(backedUp, head), contentRequests: hashes)
    }

    /// `hash` as a request to `device`, or nil when the device is not asked
    /// for it (`ContentRule.asksVoter`; the hash must be wanted). The
    /// device's pseudonym comes from the fold's memory when it has one.
    private func request(_ hash: PublicHash, key: Data, device: DeviceID, app: AppID, memory: FoldMemory,
                         db: Database) throws -> AskMemory.Request? {
        let ask = try statements.statement(.voterAsk, db)
        defer { ask.reset() }
        ask.bind(1, app)
        ask.bind(2, key)
        ask.bind(3, memory.devices[device]?[hash]?.voter ?? voter(device: device, hash: hash))
        guard try ask.step(), let wantedSeq = ask.optionalInt64(0) else { return nil }
        let liveVotes = try Stored.count(ask.int64(1), "hashes.live_votes")
        guard ContentRule.asksVoter(isLive: ask.optionalInt64(3) == 1, hasOffer: ask.int64(4) != 0, liveVotes: liveVotes,
                                    threshold: threshold, hasContent: ask.int64(2) != 0) else { return nil }
        return AskMemory.Request(key: key, wantedSeq: wantedSeq)
    }

    /// The most content requests one ack carries; a device hears the rest
    /// in later acks.
    public static let requestsPerAck = 256

    /// The first seq in `frame.first...through` whose message differs from the
    /// one the cloud log holds, or nil when they all agree.
    private func firstConflict(_ frame: UploadFrame, messages: [OutboxMessage], through: OutboxSeq, db: Database) throws -> OutboxSeq? {
        // The common case, a resent frame: the same range with the same digest.
        let same = try statements.statement(.sameFrame, db)
        same.bind(1, frame.device)
        same.bind(2, frame.epoch)
        same.bind(3, frame.firstSeq)
        same.bind(4, frame.lastSeq)
        same.bind(5, frame.digest)
        let resent: Bool
        do {
            defer { same.reset() }
            resent = try same.step() && same.int64(0) != 0
        }
        if resent { return nil }
        let rows = try Row.fetchAll(db.cachedStatement(sql: """
            SELECT \(StoredLogRow.columns) FROM cloud_log
            WHERE device = ? AND epoch = ? AND last_seq >= ? AND accepted_from <= ? ORDER BY accepted_from
            """), arguments: [frame.device, frame.epoch, frame.firstSeq, through])
        for row in rows {
            let stored = try StoredLogRow(row)
            for (seq, message) in zip(sequence(first: stored.firstSeq) { $0.next }, try stored.messages()) {
                guard seq >= stored.acceptedFrom, seq >= frame.firstSeq, seq <= through, seq <= frame.lastSeq else { continue }
                if messages[frame.firstSeq.count(before: seq)] != message { return seq }
            }
        }
        return nil
    }

    private func flagEquivocation(_ frame: UploadFrame) throws {
        let now = clock.now()
        try write { db in
            try db.execute(sql: """
                INSERT INTO flags (device, epoch, first_seq, last_seq, reason, flagged_at) VALUES (?, ?, ?, ?, 'equivocation', ?)
                """, arguments: [frame.device, frame.epoch, frame.firstSeq, frame.lastSeq, now.millisecondsSince1970])
        }
    }
}

/// The fold's memory of vote rows between ingest transactions (`FoldMemory`):
/// it is used only inside the store's write transactions, which the database
/// queue runs one at a time. It is forgotten when a transaction rolls back,
/// when the projections are rebuilt, and when another connection has written
/// the file since (SQLite's `data_version` changed).
final class IngestMemory: @unchecked Sendable {
    /// A server's memory for it stays near 32 MiB, whatever devices send.
    private var fold = FoldMemory(limit: 1 << 17)
    private var dataVersion: Int64?
    private let lock = NSLock()

    /// The memory for a write transaction on `db`, forgotten first if
    /// another connection has committed to the store since it was last used.
    func memory(_ db: Database) throws -> FoldMemory {
        let version = try Int64.fetchOne(db.cachedStatement(sql: "PRAGMA data_version"))
        return lock.withLock {
            if version != dataVersion {
                fold.forget()
                dataVersion = version
            }
            return fold
        }
    }

    func forget() {
        lock.withLock {
            fold.forget()
            dataVersion = nil
        }
    }
}
