import ByteCoding
import CloudCore
import CloudSQLite
import Crypto
import Foundation
import IndexModel
import Snapshot
import SyncWire

extension PostgresCloud {
    /// Copies the store for a snapshot at `path`, in one repeatable-read
    /// transaction (a consistent view while servers keep ingesting), into a
    /// cloud store file of this build's schema: the file a snapshot of the
    /// SQLite backend holds, so either backend restores it.
    public func copyForSnapshot(to path: String) throws(CloudError) -> CloudSnapshotCopy {
        let copyPath = CloudSnapshotCopy.copyPath(for: path)
        StoreFiles.remove(copyPath)
        do {
            return try read { session in
                var meta: [String: String] = [:]
                for row in try session.query("SELECT key, value FROM cloud_meta") {
                    meta[try row.text(0, "cloud_meta.key")] = try row.text(1, "cloud_meta.value")
                }
                guard let threshold = meta["threshold"].flatMap({ Int($0) }), let secret = meta["voter_secret"].flatMap({ Hex.decode($0) }),
                      let created = meta["created_at"].flatMap({ Int64($0) }) else {
                    throw CloudError(.corruptStore, "cloud_meta of \(location) lacks the threshold, the voter secret or the creation time")
                }
                let file = try CloudStoreFile(creating: copyPath, meta: CloudStoreFile.Meta(
                    threshold: threshold, agreement: meta["agreement"].flatMap { Int($0) }, secret: secret, createdAt: created))
                for table in StoreTables.all {
                    try PostgresCloud.pages(session, table: table.name, columns: table.columns, key: table.key.count) { rows in
                        try file.insert(table, rows: rows.map { row throws(CloudError) in
                            try table.columns.indices.map { index throws(CloudError) in try row.storeValue(index, table: table.name) }
                        })
                        return true
                    }
                }
                try file.close()
                let held = try session.query("""
                    SELECT app, device, epoch, last_seq FROM device_epochs e
                    WHERE epoch = (SELECT max(epoch) FROM device_epochs WHERE app = e.app AND device = e.device) ORDER BY app, device
                    """).map { row throws(CloudError) in
                    CloudSnapshotCopy.HeldPosition(app: AppID(try row.text(0, "device_epochs.app")),
                                                   device: DeviceID(try row.text(1, "device_epochs.device")),
                                                   epoch: try row.integer(2, "device_epochs.epoch"),
                                                   seq: try row.integer(3, "device_epochs.last_seq"))
                }
                let devices = try session.query("SELECT count(*) FROM devices")[0].integer(0, "the device count")
                let manifest = CloudSnapshotCopy.manifest(heads: try PostgresCloud.logHeads(session), devices: devices,
                                                          threshold: threshold, createdAt: clock.now())
                return CloudSnapshotCopy(destination: path, copyPath: copyPath, manifest: manifest, held: held)
            }
        } catch {
            StoreFiles.remove(copyPath)
            throw CloudError(error.code == .database ? .database : .snapshot, "cannot copy the cloud store for a snapshot: \(error.message)")
        }
    }

    /// Makes the snapshot written from `copy` the cloud's backup: each
    /// device's backed-up position moves up to what the copy holds of it,
    /// one transaction per app.
    @discardableResult
    public func recordSnapshot(_ copy: CloudSnapshotCopy) throws(CloudError) -> CloudSnapshotManifest {
        for (app, held) in Dictionary(grouping: copy.held, by: \.app).sorted(by: { $0.key < $1.key }) {
            try run { session in
                _ = try session.query("""
                    UPDATE devices d SET backed_up_epoch = t.epoch, backed_up_seq = t.seq
                    FROM unnest($2::text[], $3::int8[], $4::int8[]) AS t(device, epoch, seq)
                    WHERE d.app = $1 AND d.device = t.device AND (d.backed_up_epoch, d.backed_up_seq) < (t.epoch, t.seq)
                    """, [.text(app.rawValue), .textArray(held.map(\.device.rawValue)), .int64Array(held.map(\.epoch)),
                          .int64Array(held.map(\.seq))])
            }
        }
        return try CloudIndex.readManifest(copy.destination)
    }

    /// Restores the cloud snapshot at `snapshot` (of either backend) into
    /// the empty database at `location`: the snapshot is checked as a SQLite
    /// restore checks it (`CloudIndex.stageRestore`: the container, its key,
    /// the schema, the log's chain against the manifest, the projections
    /// against a replay), its rows are copied in one transaction, and that
    /// transaction commits only when the database's own log verifies to the
    /// manifest's head and its projections' digest is the snapshot's. With
    /// `instant`, the checked snapshot is cut back to it first
    /// (`CloudIndex.cut(through:)`), and the database is checked against
    /// the cut. A database that holds a cloud store already is refused; on
    /// any failure the database is left as it was.
    @discardableResult
    public static func restore(snapshot: String, to location: PostgresLocation, password: String?, key: SymmetricKey? = nil,
                               through instant: Timestamp? = nil, staging directory: String = NSTemporaryDirectory(),
                               options: PostgresCloudOptions = PostgresCloudOptions()) throws(CloudError) -> CloudSnapshotManifest {
        let staged = (directory as NSString).appendingPathComponent("sightline-restore-\(UUID().uuidString).sqlite")
        defer { StoreFiles.remove(staged) }
        let manifest = try CloudIndex.stageRestore(snapshot: snapshot, at: staged, key: key, options: options.store)
        if let instant { try CloudIndex.cutStaged(staged, through: instant, options: options.store) }
        let stagedStore = try CloudIndex(at: .file(staged), options: CloudOptions(readOnly: true))
        let heads = try stagedStore.logHeads()
        let expected = (rows: heads.reduce(0) { $0 + $1.rows }, heads: CloudLog.headsDigest(heads),
                        projections: try stagedStore.projectionDigest())
        let meta = try CloudStoreFile.meta(at: staged)
        let pool = PostgresPool(location: location, password: password, size: 1, statementTimeout: nil,
                                connectTimeout: options.connectTimeout, searchPath: PostgresSchema.name, logger: options.logger)
        defer { pool.close() }
        try run(pool, location) { session in
            try session.transaction {
                _ = try session.query("SELECT 1 FROM pg_advisory_xact_lock($1)", [.int64(PostgresSchema.creationLock)])
                guard try !session.query("SELECT to_regclass('sightline.cloud_meta') IS NOT NULL")[0].flag(0, "the schema's presence") else {
                    throw CloudError(.snapshot, """
                        \(location) already holds a cloud store: restore into an empty database (or one without the sightline schema)
                        """)
                }
                try session.executeScript(PostgresSchema.ddl)
                var values: [(String, String)] = [
                    ("application", CloudSchema.application), ("format_version", String(PostgresSchema.formatVersion)),
                    ("threshold", String(meta.threshold)), ("voter_secret", Hex.encode(meta.secret)),
                    ("created_at", String(meta.createdAt)),
                ]
                if let agreement = meta.agreement { values.append(("agreement", String(agreement))) }
                for (key, value) in values {
                    _ = try session.query("INSERT INTO cloud_meta (key, value) VALUES ($1, $2)", [.text(key), .text(value)])
                }
                try CloudStoreFile.read(at: staged, batch: 5_000) { table, rows in
                    try session.copyFrom(table: table.name, columns: table.columns, rows: rows.map { $0.map(\.postgresValue) })
                }
                try verifyRestored(session, location: location, manifest: manifest, expected: expected)
            }
        }
        return manifest
    }

    /// The checks of a restored database, inside the transaction that loaded
    /// it: its log verifies, to the checked (and perhaps cut) snapshot's
    /// rows and chain heads, and its projections are the snapshot's.
    private static func verifyRestored(_ session: PostgresSession, location: PostgresLocation, manifest: CloudSnapshotManifest,
                                       expected: (rows: Int64, heads: String, projections: String)) throws {
        var check = LogChainCheck()
        try pages(session, table: "cloud_log", columns: logColumnList + ["prev_hash", "hash"], key: 2) { rows in
            for row in rows {
                let stored = try logRow(row)
                guard check.check(stored, prevHash: try row.bytes(12, "cloud_log.prev_hash"), hash: try row.bytes(13, "cloud_log.hash")) != nil else {
                    return false
                }
            }
            return true
        }
        let verification = check.finish()
        if let problem = verification.firstProblem {
            throw CloudError(.snapshot, "the restored cloud log does not verify in \(location): \(problem)")
        }
        guard Int64(verification.verifiedRows) == expected.rows, verification.headsDigest == expected.heads else {
            throw CloudError(.snapshot, "the restored cloud log (\(verification.verifiedRows) rows) does not match the snapshot's (\(expected.rows) rows)")
        }
        var projections = ProjectionDigest()
        for (index, table) in StoreTables.projections.enumerated() {
            projections.table(index)
            try pages(session, table: table.name, columns: table.columns, key: table.key.count) { rows in
                for row in rows {
                    for column in table.columns.indices { projections.value(try row.storeValue(column, table: table.name)) }
                }
                return true
            }
        }
        guard projections.finish() == expected.projections else {
            throw CloudError(.snapshot, "the restored projections in \(location) differ from the snapshot's")
        }
    }
}
