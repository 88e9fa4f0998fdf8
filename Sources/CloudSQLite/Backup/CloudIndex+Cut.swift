import CloudCore
import Crypto
import Foundation
import GRDB
import IndexModel
import Snapshot
import SQLiteSupport
import SyncWire

extension CloudIndex {
    /// Cuts the store back to what it held at `instant`, on a frame
    /// boundary: each app keeps the longest prefix of its log whose rows
    /// the cloud received at or before `instant` (a frame is one row, so it
    /// is kept or removed whole; after a row received later, nothing is
    /// kept, whatever a clock that went back stamped it). Flags raised
    /// after `instant` go, each device's backed-up position comes down to
    /// what the kept log holds of it, and the projections are folded again
    /// from the kept log, in one transaction. The chains stay valid: what is
    /// kept of each is a prefix.
    ///
    /// The cloud then holds less than devices think, as after a restore from
    /// an older snapshot: devices learn it from gaps and send the rest again,
    /// from their outboxes or from their journals (`docs/SYNC.md`, "After a
    /// restore"). `restore(snapshot:to:through:force:key:options:)` and
    /// `cloud restore --to-time` cut a verified snapshot this way.
    @discardableResult
    public func cut(through instant: Timestamp) throws(CloudError) -> CloudLogCut {
        ingestMemory.forget()
        let cutoff = instant.millisecondsSince1970
        return try write { db in
            let before = try Int.fetchOne(db, sql: "SELECT count(*) FROM cloud_log") ?? 0
            // The first row of each app received after the instant; it and every later row go.
            let firstLate = try Row.fetchAll(db, sql: """
                SELECT app, min(seq) FROM cloud_log WHERE received_at > ? GROUP BY app
                """, arguments: [cutoff])
            for row in firstLate {
                let app: AppID = try Stored.column(row, 0, "cloud_log.app")
                let seq: Int64 = try Stored.column(row, 1, "cloud_log.seq")
                try db.execute(sql: "DELETE FROM cloud_log WHERE app = ? AND seq >= ?", arguments: [app, seq])
            }
            try db.execute(sql: "DELETE FROM flags WHERE flagged_at > ?", arguments: [cutoff])
            let removed = before - (try Int.fetchOne(db, sql: "SELECT count(*) FROM cloud_log") ?? 0)
            try CloudIndex.refold(db, threshold: threshold, agreement: agreement, secrets: secrets)
            try CloudIndex.lowerBackedUp(db)
            return CloudLogCut(through: instant, heads: try logHeads(db), rowsBefore: before, rowsRemoved: removed)
        }
    }

    /// Brings each device's backed-up position down to what the log holds
    /// of it (`device_epochs`, folded from it): in the same epoch at most
    /// its last held seq; in an epoch the log no longer holds, the newest
    /// held position before it, or nothing.
    private static func lowerBackedUp(_ db: Database) throws {
        let devices = try Row.fetchAll(db, sql: """
            SELECT app, device, backed_up_epoch, backed_up_seq FROM devices WHERE backed_up_epoch > 0 OR backed_up_seq > 0
            """)
        for row in devices {
            let app: AppID = try Stored.column(row, 0, "devices.app")
            let device: DeviceID = try Stored.column(row, 1, "devices.device")
            let backedUp = OutboxPosition(
                epoch: Epoch(try Stored.position(Stored.column(row, 2, "devices.backed_up_epoch"), "devices.backed_up_epoch of \(device)")),
                seq: OutboxSeq(try Stored.position(Stored.column(row, 3, "devices.backed_up_seq"), "devices.backed_up_seq of \(device)")))
            var held = OutboxPosition.nothing
            for epochRow in try Row.fetchAll(db, sql: "SELECT epoch, last_seq FROM device_epochs WHERE app = ? AND device = ?",
                                             arguments: [app, device]) {
                let epoch = Epoch(try Stored.position(Stored.column(epochRow, 0, "device_epochs.epoch"), "device_epochs.epoch of \(device)"))
                let last = OutboxSeq(try Stored.position(Stored.column(epochRow, 1, "device_epochs.last_seq"),
                                                         "device_epochs.last_seq of \(device)"))
                let position = OutboxPosition(epoch: epoch, seq: last)
                if position <= backedUp { held = max(held, position) } else if epoch == backedUp.epoch { held = max(held, backedUp) }
            }
            guard held < backedUp else { continue }
            try db.execute(sql: "UPDATE devices SET backed_up_epoch = ?, backed_up_seq = ? WHERE app = ? AND device = ?",
                           arguments: [held.epoch, held.seq, app, device])
        }
    }

    /// Restores `snapshot` as `restore(snapshot:to:force:key:options:)`
    /// does, checking all of it first, then, given an `instant`, cuts the
    /// staged store back to it (`cut(through:)`) before it replaces `path`.
    public static func restore(snapshot: String, to path: String, through instant: Timestamp?, force: Bool = false,
                               key: SymmetricKey? = nil,
                               options: CloudOptions = CloudOptions()) throws(CloudError) -> (manifest: CloudSnapshotManifest, cut: CloudLogCut?) {
        if FileManager.default.fileExists(atPath: path) && !force {
            // A file that is not a snapshot is said first; staging reads the manifest otherwise.
            _ = try readManifest(snapshot, key: key)
            throw CloudError(.destinationExists, "\(path) exists: a restore over a cloud store must be forced (the old store is then kept beside it)")
        }
        let temporary = path + ".restoring-\(ProcessInfo.processInfo.processIdentifier)"
        let manifest = try stageRestore(snapshot: snapshot, at: temporary, key: key, options: options)
        var cut: CloudLogCut?
        do {
            if let instant { cut = try cutStaged(temporary, through: instant, options: options) }
        } catch {
            StoreFiles.remove(temporary)
            throw error
        }
        try finishRestore(staged: temporary, to: path, options: options)
        return (manifest, cut)
    }

    /// Cuts the store `stageRestore` checked at `staging` back to `instant`
    /// (`cut(through:)`) and leaves it a file of its own again.
    @discardableResult
    public static func cutStaged(_ staging: String, through instant: Timestamp,
                                 options: CloudOptions = CloudOptions()) throws(CloudError) -> CloudLogCut {
        var storeOptions = options
        storeOptions.readOnly = false
        storeOptions.threshold = nil
        storeOptions.agreement = nil
        let cloud = try CloudIndex(at: .file(staging), options: storeOptions)
        let cut = try cloud.cut(through: instant)
        do {
            try RestoredFile.closeSelfContained(cloud.queue)
        } catch {
            throw CloudError(.snapshot, "cannot close the cut cloud store: \(describe(error))")
        }
        return cut
    }
}
