import CloudCore
import CloudSQLite
import Foundation
import IndexModel
import SyncWire

extension PostgresCloud {
    /// Takes the content of hashes below K out of the cloud log once a backup
    /// holds their fall below K (`CloudPurgePlanner`), one transaction per
    /// app holding the app's lock, as a rebuild does; then `VACUUM cloud_log`
    /// so that the old row versions' space is free for reuse. With `dryRun`,
    /// reads the same and writes nothing. Each app's log is read on from
    /// where this store's last purge stopped (`purgeReadings`).
    @discardableResult
    public func purgeWithdrawnContent(dryRun: Bool = false) throws(CloudError) -> CloudPurgeReport {
        let apps = try read { session in try PostgresCloud.apps(session) }
        var total = CloudPurgeReport()
        for app in apps {
            let (planner, report) = try run { session in
                try session.transaction {
                    _ = try session.query("SELECT 1 FROM apps WHERE app = $1 FOR UPDATE", [.text(app.rawValue)])
                    return try purge(app, session: session, dryRun: dryRun)
                }
            }
            // Committed: the reading goes on from here next time.
            purgeReadings.keep(planner)
            total.add(report)
        }
        if !dryRun && !total.rows.isEmpty {
            try run { session in _ = try session.execute("VACUUM cloud_log") }
        }
        return total
    }

    private func purge(_ app: AppID, session: PostgresSession, dryRun: Bool) throws -> (CloudPurgePlanner, CloudPurgeReport) {
        let settings = try FoldSettings.read(session)
        var planner = purgeReadings.take(app, threshold: settings.threshold)
        if planner.readThrough > 0 {
            let hash = try session.query("SELECT hash FROM cloud_log WHERE app = $1 AND seq = $2",
                                         [.text(app.rawValue), .int64(planner.readThrough)]).first
            planner.restartUnless(readRowHash: try hash?.bytes(0, "cloud_log.hash"))
        }
        try PostgresCloud.pages(session, table: "cloud_log", columns: PostgresCloud.logColumnList + ["hash"], key: 2,
                                condition: "app = $1 AND seq > $2", binds: [.text(app.rawValue), .int64(planner.readThrough)]) { page in
            for row in page { try planner.feed(try PostgresCloud.logRow(row), hash: try row.bytes(12, "cloud_log.hash")) }
            return true
        }
        var backedUp: [DeviceID: OutboxPosition] = [:]
        for row in try session.query("SELECT device, backed_up_epoch, backed_up_seq FROM devices WHERE app = $1", [.text(app.rawValue)]) {
            let device = DeviceID(try row.text(0, "devices.device"))
            backedUp[device] = OutboxPosition(epoch: Epoch(try row.position(1, "devices.backed_up_epoch of \(device)")),
                                              seq: OutboxSeq(try row.position(2, "devices.backed_up_seq of \(device)")))
        }
        let plan = planner.plan(backedUp: backedUp, secrets: secrets)
        if !dryRun {
            for rewrite in plan.rewrites {
                _ = try session.execute("""
                    UPDATE cloud_log SET codec = $1, payload = $2, uncompressed_length = $3 WHERE app = $4 AND seq = $5
                    """, [.int64(CloudLog.purgedCodec), .bytea(rewrite.payload), .int64(Int64(rewrite.payload.count)),
                          .text(app.rawValue), .int64(rewrite.row.seq)])
            }
            planner.applied(plan.rewrites)
        }
        return (planner, plan.report)
    }
}
