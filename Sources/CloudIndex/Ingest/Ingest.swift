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
    public let frame: UploadFrame
    /// The app the device enrolled for, which the frame names.
    public let app: AppID
    /// The device's key, which signs the reply.
    package let key: [UInt8]

    package init(frame: UploadFrame, app: AppID, key: [UInt8]) {
        self.frame = frame
        self.app = app
        self.key = key
    }

    /// The sending device's name in its app, proven by its signature.
    public var device: DeviceID { frame.device }
}

/// An authenticated frame inflated and decoded (`CloudStore.open(_:)`), to
/// be ingested (`CloudStore.ingest(_ opened:)`).
public struct OpenedFrame: Sendable {
    /// The frame as the cloud log keeps it: a payload deflated against a
    /// dictionary is stored instead (`UploadFrame.asLogged`).
    public let authenticated: AuthenticatedFrame
    public let messages: [OutboxMessage]
    /// The payload inflated.
    let plain: [UInt8]
    /// What the frame was deflated against: empty when it was deflated alone.
    let dictionary: FrameDictionary
    /// Whether that dictionary was made again from the device's log rows,
    /// this process not holding it (`FrameDictionaries`).
    public let recoveredDictionary: Bool
}

/// What `CloudStore.authenticate` found: a frame to ingest, or the refusal to send.
public enum FrameAuthentication: Sendable {
    case authenticated(AuthenticatedFrame)
    /// The frame is malformed, its device unknown or its signature wrong;
    /// nothing of it was stored.
    case refused(IngestResult)

    /// Reads a frame's structure and limits, finds its enrolled device's key
    /// with `key` (nil: not enrolled) and checks the signature, in constant
    /// time, before any inflating, as every backend does.
    package static func of(_ bytes: [UInt8], key: (AppID, DeviceID) throws -> [UInt8]?) -> FrameAuthentication {
        let frame: UploadFrame
        do {
            frame = try UploadFrame.parse(bytes)
        } catch {
            return .refused(.rejecting(error, device: nil, frame: nil, key: nil, version: UploadFrame.announcedVersion(in: bytes)))
        }
        guard !CrawlerRule.isReserved(frame.device) else {
            // The cloud's own streams are written by the cloud alone, so no
            // key is looked up, whatever an older store enrolled.
            return .refused(.rejecting(WireError(.unknownDevice, "device \(frame.device) is the cloud's own and sends no frames"),
                                       device: frame.device, frame: frame, key: nil))
        }
        let deviceKey: [UInt8]?
        do {
            deviceKey = try key(frame.app, frame.device)
        } catch {
            return .refused(.rejecting(WireError(.unavailable, "the cloud cannot read its device registry"), device: frame.device,
                                       frame: frame, key: nil))
        }
        guard let deviceKey else {
            return .refused(.rejecting(WireError(.unknownDevice, "device \(frame.device) is not enrolled for app \(frame.app)"),
                                       device: frame.device, frame: frame, key: nil))
        }
        guard frame.isSigned(by: deviceKey) else {
            // Unsigned: the cloud never signs a reply to a frame whose own
            // signature failed, or anyone could collect signed replies.
            return .refused(.rejecting(WireError(.badSignature, "the frame is not signed with the key of device \(frame.device)"),
                                       device: frame.device, frame: frame, key: nil))
        }
        return .authenticated(AuthenticatedFrame(frame: frame, app: frame.app, key: deviceKey))
    }
}

extension CloudIndex {
    /// Reads a frame's structure and limits, finds its enrolled device and
    /// checks the signature (in constant time, before any inflating). Nothing
    /// is stored. A caller that rate-limits devices charges one only after
    /// this proved who sent the frame (`docs/SECURITY.md`).
    public func authenticate(_ bytes: [UInt8]) -> FrameAuthentication {
        FrameAuthentication.of(bytes) { app, name in try enrolledDevice(app: app, name: name)?.key }
    }

    /// Ingests an authenticated frame and returns the reply, deciding as
    /// every backend does (`IngestCore`, `docs/CLOUD.md`):
    /// - the next positions: appended to the cloud log and folded in one
    ///   transaction; the ack is built after the commit;
    /// - positions already held, with the same messages: acknowledged again and
    ///   nothing changes (a retry, a duplicate, a replay);
    /// - positions already held with other messages: `equivocation`, flagged;
    /// - a gap: `gap` with the position the cloud expects.
    public func ingest(_ authenticated: AuthenticatedFrame, messages: [OutboxMessage]) -> IngestResult {
        let frame = authenticated.frame
        let name = authenticated.device
        let device = (app: authenticated.app, key: authenticated.key)
        do {
            let decision = try queue.cachedWrite(connection) { db in
                try core.decide(frame, messages: messages, app: device.app,
                                in: SQLiteIngestTransaction(db: db, statements: statements), memory: ingestMemory.memory(db))
            }
            if case .rejected(let rejection) = decision, rejection.error.code == .equivocation {
                try? flagEquivocation(frame)
            }
            return decision.result(name: name, frame: frame, key: device.key)
        } catch let refusal as Refusal {
            // The transaction rolled back: nothing of the frame was kept, and
            // the fold's memory may hold what it had folded of it.
            ingestMemory.forget()
            return .rejecting(WireError(.refused, refusal.message), device: name, frame: frame, key: device.key)
        } catch {
            // The database failed (busy, full, I/O): nothing was kept, and the
            // device will send the same frame again.
            ingestMemory.forget()
            return .rejecting(WireError(.unavailable, "the cloud could not store the frame: \(CloudIndex.describe(error))"),
                              device: name, frame: frame, key: device.key)
        }
    }

    /// The most content requests one ack carries (`IngestCore.requestsPerAck`).
    public static let requestsPerAck = IngestCore.requestsPerAck

    /// Ingest's decisions with this store's K, agreement, secrets and clock.
    var core: IngestCore {
        IngestCore(threshold: threshold, agreement: agreement, secrets: secrets, clock: clock)
    }

    /// The id and key of the device named `name` in `app`, or nil when it is
    /// not enrolled. Each frame needs them, so they are remembered after the
    /// first read.
    private func enrolledDevice(app: AppID, name: DeviceID) throws -> EnrolledDevice? {
        let memo = EnrolledName(app: app, name: name)
        if let known = enrolled.withLock({ $0[memo] }) { return known }
        let read = try self.read { db in
            guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT key FROM devices WHERE app = ? AND device = ?"),
                                             arguments: [app, name]) else { return nil as EnrolledDevice? }
            return EnrolledDevice(key: [UInt8](try Stored.column(row, 0, "devices.key of \(name)") as Data))
        }
        if let read { enrolled.withLock { $0[memo] = read } }
        return read
    }

    private func flagEquivocation(_ frame: UploadFrame) throws {
        let now = clock.now()
        try write { db in
            try db.execute(sql: """
                INSERT INTO flags (app, device, epoch, first_seq, last_seq, reason, flagged_at) VALUES (?, ?, ?, ?, ?, 'equivocation', ?)
                """, arguments: [frame.app, frame.device, frame.epoch, frame.firstSeq, frame.lastSeq, now.millisecondsSince1970])
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
