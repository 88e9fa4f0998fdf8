import CloudCore
import Foundation
import GRDB
import IndexModel
import SyncWire

extension CloudIndex {
    /// Takes the content of hashes below K out of the cloud log once a backup
    /// holds their fall below K (`CloudPurgePlanner`), in one transaction,
    /// with `secure_delete` on so that no free page keeps the old payloads,
    /// then checkpoints the WAL into the file and truncates it. With
    /// `dryRun`, reads the same and writes nothing. Each app's log is read
    /// on from where this store's last purge stopped (`purgeReadings`).
    @discardableResult
    public func purgeWithdrawnContent(dryRun: Bool = false) throws(CloudError) -> CloudPurgeReport {
        var planners: [CloudPurgePlanner] = []
        let report: CloudPurgeReport
        do {
            report = try (dryRun ? queue.snapshotRead : queue.cachedWrite)(connection) { db in
                if !dryRun { try db.execute(sql: "PRAGMA secure_delete = ON") }
                var total = CloudPurgeReport()
                for app in try AppID.fetchAll(db, sql: "SELECT DISTINCT app FROM cloud_log ORDER BY app") {
                    var planner = try readOn(purgeReadings.take(app, threshold: threshold), db: db)
                    let plan = planner.plan(backedUp: try CloudIndex.backedUp(app, db: db), secrets: secrets)
                    if !dryRun {
                        let update = try db.cachedStatement(sql: """
                            UPDATE cloud_log SET codec = ?, payload = ?, uncompressed_length = ? WHERE app = ? AND seq = ?
                            """)
                        for rewrite in plan.rewrites {
                            try update.execute(arguments: [CloudLog.purgedCodec, Data(rewrite.payload), rewrite.payload.count,
                                                           app, rewrite.row.seq])
                        }
                        planner.applied(plan.rewrites)
                    }
                    planners.append(planner)
                    total.add(plan.report)
                }
                return total
            }
        } catch let error as CloudError {
            throw error
        } catch {
            throw CloudError(.database, "the purge failed, nothing was committed: \(CloudIndex.describe(error))")
        }
        // Committed: the readings go on from here next time.
        for planner in planners { purgeReadings.keep(planner) }
        if !dryRun, case .file = location, !report.rows.isEmpty {
            do {
                try queue.writeWithoutTransaction { db in _ = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
            } catch {
                throw CloudError(.database, "the purge was committed, but the WAL could not be emptied: \(CloudIndex.describe(error))")
            }
        }
        return report
    }

    /// `planner` read on to the app's last row (`restartUnless`).
    private func readOn(_ kept: CloudPurgePlanner, db: Database) throws -> CloudPurgePlanner {
        var planner = kept
        if planner.readThrough > 0 {
            let hash = try Data.fetchOne(db, sql: "SELECT hash FROM cloud_log WHERE app = ? AND seq = ?",
                                         arguments: [planner.app, planner.readThrough])
            planner.restartUnless(readRowHash: hash.map { [UInt8]($0) })
        }
        let rows = try Row.fetchCursor(db, sql: "SELECT \(StoredLogRow.columns), hash FROM cloud_log WHERE app = ? AND seq > ? ORDER BY seq",
                                       arguments: [planner.app, planner.readThrough])
        while let row = try rows.next() {
            try planner.feed(try StoredLogRow(row), hash: [UInt8](try Stored.column(row, 12, "cloud_log.hash") as Data))
        }
        return planner
    }

    /// What the cloud's last backup holds of each device of `app`.
    private static func backedUp(_ app: AppID, db: Database) throws -> [DeviceID: OutboxPosition] {
        var held: [DeviceID: OutboxPosition] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT device, backed_up_epoch, backed_up_seq FROM devices WHERE app = ?", arguments: [app]) {
            let device: DeviceID = try Stored.column(row, 0, "devices.device")
            held[device] = OutboxPosition(
                epoch: Epoch(try Stored.position(Stored.column(row, 1, "devices.backed_up_epoch"), "devices.backed_up_epoch of \(device)")),
                seq: OutboxSeq(try Stored.position(Stored.column(row, 2, "devices.backed_up_seq"), "devices.backed_up_seq of \(device)")))
        }
        return held
    }
}
