import Crypto
import Foundation
import GRDB
import IndexModel
import SQLiteSupport
import SyncWire

/// What one `ingest` did.
public struct IngestResult: Sendable {
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
    public let device: String?
}

/// A frame whose structure was read and whose signature is its enrolled
/// device's: what `CloudStore.authenticate` hands back for `ingest`.
public struct AuthenticatedFrame: Sendable {
    public let frame: UploadFrame
    /// The app the device enrolled for (the frame names the same one).
    public let app: String
    /// The device's key, which signs the reply.
    let key: [UInt8]

    public init(frame: UploadFrame, app: String, key: [UInt8]) {
        self.frame = frame
        self.app = app
        self.key = key
    }

    /// The sending device, proven by its signature.
    public var device: String { frame.device }
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
            device = try enrolledDevice(frame.device)
        } catch {
            return .refused(reject(WireError(.unavailable, "the cloud cannot read its device registry"), device: frame.device, frame: frame, key: nil))
        }
        guard let device else {
            return .refused(reject(WireError(.unknownDevice, "device \(frame.device) is not enrolled"), device: frame.device, frame: frame, key: nil))
        }
        guard frame.isSigned(by: device.key) else {
            // Unsigned: the cloud never signs a reply to a frame whose own
            // signature failed, or anyone could collect signed replies.
            return .refused(reject(WireError(.badSignature, "the frame is not signed with the key of device \(frame.device)"),
                                   device: frame.device, frame: frame, key: nil))
        }
        guard frame.app == device.app else {
            return .refused(reject(WireError(.badSignature, "the frame names app \(frame.app) but device \(frame.device) is enrolled for another app"),
                                   device: frame.device, frame: frame, key: device.key))
        }
        return .authenticated(AuthenticatedFrame(frame: frame, app: device.app, key: device.key))
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
        let device = EnrolledDevice(app: authenticated.app, key: authenticated.key)
        let messages: [OutboxMessage]
        do {
            messages = try frame.messages()
        } catch {
            return reject(error, device: frame.device, frame: frame, key: device.key)
        }
        do {
            let decision = try queue.cachedWrite(transactions) { db in
                try self.apply(frame, messages: messages, app: device.app, db: db)
            }
            switch decision {
            case .accepted(let ack, let count):
                return IngestResult(reply: CloudReply.ack(ack).encoded(device: frame.device, answering: frame.signature, key: device.key),
                                    outcome: .accepted(messages: count), device: frame.device)
            case .duplicate(let ack):
                return IngestResult(reply: CloudReply.ack(ack).encoded(device: frame.device, answering: frame.signature, key: device.key),
                                    outcome: .duplicate, device: frame.device)
            case .rejected(let rejection):
                if rejection.error.code == .equivocation {
                    try? flagEquivocation(frame)
                }
                return IngestResult(reply: CloudReply.rejection(rejection).encoded(device: frame.device, answering: frame.signature, key: device.key),
                                    outcome: .rejected(rejection.error), device: frame.device)
            }
        } catch let refusal as Refusal {
            // The transaction rolled back: nothing of the frame was kept, and
            // the fold's memory may hold what it had folded of it.
            ingestMemory.forget()
            return reject(WireError(.refused, refusal.message), device: frame.device, frame: frame, key: device.key)
        } catch {
            // The database failed (busy, full, I/O): nothing was kept, and the
            // device will send the same frame again.
            ingestMemory.forget()
            return reject(WireError(.unavailable, "the cloud could not store the frame: \(CloudIndex.describe(error))"),
                          device: frame.device, frame: frame, key: device.key)
        }
    }

    /// The device's app and key, or nil when it is not enrolled. Each frame
    /// needs them, so they are remembered after the first read.
    private func enrolledDevice(_ device: String) throws -> EnrolledDevice? {
        if let known = enrolled.withLock({ $0[device] }) { return known }
        let read = try self.read { db in
            guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT app, key FROM devices WHERE device = ?"),
                                             arguments: [device]) else { return nil as EnrolledDevice? }
            return EnrolledDevice(app: try Stored.column(row, 0, "devices.app of \(device)"),
                                  key: [UInt8](try Stored.column(row, 1, "devices.key of \(device)") as Data))
        }
        if let read { enrolled.withLock { $0[device] = read } }
        return read
    }

    private func reject(_ error: WireError, device: String?, frame: UploadFrame?, key: [UInt8]?) -> IngestResult {
        let reply = CloudReply.rejection(Rejection(error)).encoded(device: device ?? "", answering: frame?.signature, key: key)
        return IngestResult(reply: reply, outcome: .rejected(error), device: device)
    }

    private enum Decision {
        case accepted(Ack, messages: Int)
        case duplicate(Ack)
        case rejected(Rejection)
    }

    /// Classifies the frame against the device's epochs and, when it brings new
    /// messages, appends and folds them. Runs inside the write transaction.
    private func apply(_ frame: UploadFrame, messages: [OutboxMessage], app: String, db: Database) throws -> Decision {
        let read = try statements.statement(.epochs, db)
        read.bind(1, frame.device)
        var epochs: [(epoch: UInt64, last: UInt64)] = []
        do {
            defer { read.reset() }
            while try read.step() {
                epochs.append((try Stored.position(read.int64(0), "device_epochs.epoch of \(frame.device)"),
                               try Stored.position(read.int64(1), "device_epochs.last_seq of \(frame.device)")))
            }
        }
        // Where the cloud holds the device through: an equivocation names it,
        // so that a device whose epoch another incarnation of it already used
        // can move above it.
        let newest = epochs.max { $0.epoch < $1.epoch }
        let cloudHead = OutboxPosition(epoch: newest?.epoch ?? 0, seq: (newest?.last ?? 0) + 1)
        // What the device's cursor says it has seen: a probe's `follows` is
        // only the seq before the probed message.
        let cursor = frame.isProbe ? nil : frame.follows
        let acceptedFrom: UInt64
        switch FramePlacement.of(epoch: frame.epoch, firstSeq: frame.firstSeq, lastSeq: frame.lastSeq,
                                 follows: frame.follows, isProbe: frame.isProbe, held: epochs) {
        case .refuse(let rejection):
            return .rejected(rejection)
        case .duplicate(let head, let overlap):
            if let conflict = try firstConflict(frame, messages: messages, through: overlap.upperBound, db: db) {
                return .rejected(equivocation(frame, at: conflict, head: cloudHead))
            }
            return .duplicate(try ack(device: frame.device, app: app, through: head, cursor: cursor, db: db))
        case .append(let from, let overlap):
            if let overlap, let conflict = try firstConflict(frame, messages: messages, through: overlap.upperBound, db: db) {
                return .rejected(equivocation(frame, at: conflict, head: cloudHead))
            }
            acceptedFrom = from
        }
        let fresh = messages[Int(acceptedFrom - frame.firstSeq)...]
        let receivedAt = clock.now()
        let logSeq = try CloudLog.append(frame, acceptedFrom: acceptedFrom, receivedAt: receivedAt, db: db, statements: statements)
        // A `Refusal` from the fold rolls the whole transaction back.
        let fold = fold(db, statements: statements)
        let memory = try ingestMemory.memory(db)
        try fold.apply(fresh, device: frame.device, app: app, logSeq: logSeq, receivedAt: receivedAt, memory: memory)
        try fold.flush(memory, forgetting: false)
        let record = try statements.statement(.recordEpoch, db)
        record.bind(1, frame.device)
        record.bind(2, Int64(frame.epoch))
        record.bind(3, Int64(frame.lastSeq))
        try record.execute()
        if !epochs.contains(where: { $0.epoch == frame.epoch }) {
            // A new epoch is a restored device, which may have lost the
            // content requests it was given with the store it was restored
            // over: every hash still wanted is offered to it again.
            let restart = try statements.statement(.restartRequests, db)
            restart.bind(1, frame.device)
            try restart.execute()
        }
        let ackValue = try ack(device: frame.device, app: app, through: frame.last, cursor: cursor, db: db)
        return .accepted(ackValue, messages: fresh.count)
    }

    private func equivocation(_ frame: UploadFrame, at seq: UInt64, head: OutboxPosition) -> Rejection {
        Rejection(WireError(.equivocation, "message \(frame.epoch):\(seq) differs from the one the cloud accepted at that position"),
                  expected: head)
    }

    /// The fold into `db`'s projections; `statements` are the slots kept for `db`.
    func fold(_ db: Database, statements: StatementSlots) -> CloudFold {
        CloudFold(db: db, statements: statements, threshold: threshold, voter: { [self] device, hash in voter(device: device, hash: hash) },
                  key: { [self] app, hash in key(app: app, hash: hash) })
    }

    /// The ack for a device, with the content requests it has not yet been
    /// given. Requests count as delivered once the device's `cursor` (the
    /// position its frame follows) has reached the ack that offered them: it
    /// processed that ack, whose requests it journaled before moving its
    /// cursor. Until then every ack offers them again. (Taking any new frame
    /// as proof lost requests whose ack was lost and whose frame the device
    /// then rebuilt longer: `simulate --seed 331 --devices 8
    /// --events-per-device 80 --faults heavy --threshold 3`.)
    private func ack(device: String, app: String, through head: OutboxPosition, cursor: OutboxPosition?, db: Database) throws -> Ack {
        if let cursor {
            let deliver = try statements.statement(.deliverRequests, db)
            deliver.bind(1, device)
            deliver.bind(2, Int64(cursor.epoch))
            deliver.bind(3, Int64(cursor.seq))
            try deliver.execute()
        }
        let registry = try statements.statement(.registry, db)
        registry.bind(1, device)
        var since: Int64 = 0
        var backedUp = OutboxPosition(epoch: 0, seq: 0)
        do {
            defer { registry.reset() }
            if try registry.step() {
                since = registry.optionalInt64(0) ?? 0
                backedUp = OutboxPosition(epoch: try Stored.position(registry.optionalInt64(1) ?? 0, "devices.backed_up_epoch of \(device)"),
                                          seq: try Stored.position(registry.optionalInt64(2) ?? 0, "devices.backed_up_seq of \(device)"))
            }
        }
        let read = try statements.statement(.wanted, db)
        read.bind(1, app)
        read.bind(2, since)
        read.bind(3, Int64(CloudIndex.requestsPerAck))
        var hashes: [PublicHash] = []
        var offered: Int64?
        do {
            defer { read.reset() }
            while try read.step() {
                if let hash = PublicHash(read.blob(0)) { hashes.append(hash) }
                offered = read.int64(1)
            }
        }
        if let offered {
            let offer = try statements.statement(.offerRequests, db)
            offer.bind(1, offered)
            offer.bind(2, Int64(head.epoch))
            offer.bind(3, Int64(head.seq))
            offer.bind(4, device)
            try offer.execute()
        }
        return Ack(acceptedThrough: head, durableThrough: head, backedUpThrough: min(backedUp, head), contentRequests: hashes)
    }

    /// The most content requests one ack carries; a device hears the rest
    /// in later acks.
    public static let requestsPerAck = 256

    /// The first seq in `frame.first...through` whose message differs from the
    /// one the cloud log holds, or nil when they all agree.
    private func firstConflict(_ frame: UploadFrame, messages: [OutboxMessage], through: UInt64, db: Database) throws -> UInt64? {
        // The common case, a resent frame: the same range with the same digest.
        let same = try statements.statement(.sameFrame, db)
        same.bind(1, frame.device)
        same.bind(2, Int64(frame.epoch))
        same.bind(3, Int64(frame.firstSeq))
        same.bind(4, Int64(frame.lastSeq))
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
            """), arguments: [frame.device, Int64(frame.epoch), Int64(frame.firstSeq), Int64(through)])
        for row in rows {
            let stored = try StoredLogRow(row)
            for (offset, message) in try stored.messages().enumerated() {
                let seq = stored.firstSeq + UInt64(offset)
                guard seq >= stored.acceptedFrom, seq >= frame.firstSeq, seq <= through, seq <= frame.lastSeq else { continue }
                if messages[Int(seq - frame.firstSeq)] != message { return seq }
            }
        }
        return nil
    }

    private func flagEquivocation(_ frame: UploadFrame) throws {
        let now = clock.now()
        try write { db in
            try db.execute(sql: """
                INSERT INTO flags (device, epoch, first_seq, last_seq, reason, flagged_at) VALUES (?, ?, ?, ?, 'equivocation', ?)
                """, arguments: [frame.device, Int64(frame.epoch), Int64(frame.firstSeq), Int64(frame.lastSeq),
                                 now.millisecondsSince1970])
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
