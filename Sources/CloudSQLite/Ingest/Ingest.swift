import CloudCore
import Crypto
import Foundation
import GRDB
import IndexModel
import SQLiteSupport
import SyncWire

extension CloudIndex {
    /// Reads a frame's structure and limits, finds its enrolled device and
    /// checks the signature (in constant time, before any inflating). Nothing
    /// is stored. A caller that rate-limits devices charges one only after
    /// this proved who sent the frame (`docs/SECURITY.md`).
    public func authenticate(_ bytes: [UInt8]) -> FrameAuthentication {
        FrameAuthentication.of(bytes) { app, name in try enrolledKey(app: app, name: name) }
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

    /// The key of the device named `name` in `app`, or nil when it is not
    /// enrolled. Each frame needs it, so it is remembered after the first
    /// read (`EnrolledKeys`).
    private func enrolledKey(app: AppID, name: DeviceID) throws -> [UInt8]? {
        let stream = DeviceStream(app: app, device: name)
        if let known = enrolled.key(of: stream) { return known }
        let read = try self.read { db in
            guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT key FROM devices WHERE app = ? AND device = ?"),
                                             arguments: [app, name]) else { return nil as [UInt8]? }
            return [UInt8](try Stored.column(row, 0, "devices.key of \(name)") as Data)
        }
        if let read { enrolled.remember(read, of: stream) }
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
        // Stepped through the C API: it is read before every frame, and
        // GRDB's fetch costs more than the pragma itself.
        let read = try DirectStatement(db, "PRAGMA data_version")
        defer { read.reset() }
        let version = try read.step() ? read.int64(0) : nil
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
