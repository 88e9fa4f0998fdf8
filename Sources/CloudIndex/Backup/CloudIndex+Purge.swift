import Foundation
import GRDB
import IndexModel
import SyncWire

extension CloudIndex {
    /// Takes the content of hashes below K out of the cloud log once a backup
    /// holds their fall below K (`CloudPurgePlanner`), in one transaction,
    /// with `secure_delete` on so that no free page keeps the old payloads,
    /// then checkpoints the WAL into the file and truncates it. With
    /// `dryRun`, reads the same and writes nothing.
    @discardableResult
    public func purgeWithdrawnContent(dryRun: Bool = false) throws(CloudError) -> CloudPurgeReport {
        if dryRun { return try read { db in try CloudIndex.planPurge(db, threshold: threshold, secrets: secrets).report } }
        let report = try write { db in
            try db.execute(sql: "PRAGMA secure_delete = ON")
            let plan = try CloudIndex.planPurge(db, threshold: threshold, secrets: secrets)
            let update = try db.cachedStatement(sql: """
                UPDATE cloud_log SET codec = ?, payload = ?, uncompressed_length = ? WHERE app = ? AND seq = ?
                """)
            for rewrite in plan.rewrites {
                try update.execute(arguments: [CloudLog.purgedCodec, Data(rewrite.payload), rewrite.payload.count,
                                               rewrite.row.app, rewrite.row.seq])
            }
            return plan.report
        }
        if case .file = location, !report.rows.isEmpty {
            do {
                try queue.writeWithoutTransaction { db in _ = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
            } catch {
                throw CloudError(.database, "the purge was committed, but the WAL could not be emptied: \(CloudIndex.describe(error))")
            }
        }
        return report
    }

    private static func planPurge(_ db: Database, threshold: Int, secrets: CloudSecrets) throws
        -> (rewrites: [CloudPurgePlanner.Rewrite], report: CloudPurgeReport) {
        var backedUp: [DeviceStream: OutboxPosition] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT app, device, backed_up_epoch, backed_up_seq FROM devices") {
            let app: AppID = try Stored.column(row, 0, "devices.app")
            let device: DeviceID = try Stored.column(row, 1, "devices.device")
            backedUp[DeviceStream(app: app, device: device)] = OutboxPosition(
                epoch: Epoch(try Stored.position(Stored.column(row, 2, "devices.backed_up_epoch"), "devices.backed_up_epoch of \(device)")),
                seq: OutboxSeq(try Stored.position(Stored.column(row, 3, "devices.backed_up_seq"), "devices.backed_up_seq of \(device)")))
        }
        var planner = CloudPurgePlanner(threshold: threshold, secrets: secrets, backedUp: backedUp)
        let rows = try Row.fetchCursor(db, sql: "SELECT \(StoredLogRow.columns) FROM cloud_log ORDER BY app, seq")
        while let row = try rows.next() {
            try planner.feed(try StoredLogRow(row))
        }
        return planner.finish()
    }
}
