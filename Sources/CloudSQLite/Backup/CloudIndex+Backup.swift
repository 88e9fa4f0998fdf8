import CloudCore
import Crypto
import Foundation
import GRDB
import IndexModel
import Snapshot
import SQLiteSupport
import SyncWire
import Threads

extension CloudIndex {
    /// Copies the store, in one read transaction, for a snapshot at `path`:
    /// the only step of a snapshot that reads the cloud store.
    public func copyForSnapshot(to path: String) throws(CloudError) -> CloudSnapshotCopy {
        let copy = CloudSnapshotCopy.copyPath(for: path)
        StoreFiles.remove(copy)
        do {
            guard StoreFiles.createPrivate(copy) else { throw CloudError(.database, "cannot create \(copy) (errno \(errno))") }
            let destination = try DatabaseQueue.snapshotCopy(at: copy)
            let (manifest, held) = try queue.backupFromSnapshot(to: destination) { db in
                let held = try Row.fetchAll(db, sql: """
                    SELECT app, device, epoch, last_seq FROM device_epochs e
                    WHERE epoch = (SELECT max(epoch) FROM device_epochs WHERE app = e.app AND device = e.device) ORDER BY app, device
                    """).map { row throws(CloudError) in
                    CloudSnapshotCopy.HeldPosition(app: try Stored.column(row, 0, "device_epochs.app"),
                                                   device: try Stored.column(row, 1, "device_epochs.device"),
                                                   epoch: try Stored.column(row, 2, "device_epochs.epoch"),
                                                   seq: try Stored.column(row, 3, "device_epochs.last_seq"))
                }
                let manifest = CloudSnapshotCopy.manifest(heads: try logHeads(db),
                                                          devices: try Int64.fetchOne(db, sql: "SELECT count(*) FROM devices") ?? 0,
                                                          threshold: threshold, createdAt: clock.now())
                return (manifest, held)
            }
            try destination.close()
            return CloudSnapshotCopy(destination: path, copyPath: copy, manifest: manifest, held: held)
        } catch {
            StoreFiles.remove(copy)
            throw CloudError(.snapshot, "cannot copy the cloud store for a snapshot: \(CloudIndex.describe(error))")
        }
    }

    /// Makes the snapshot written from `copy` the cloud's backup: each
    /// device's backed-up position moves up to what the copy holds of it.
    /// Returns the written snapshot's manifest.
    @discardableResult
    public func recordSnapshot(_ copy: CloudSnapshotCopy) throws(CloudError) -> CloudSnapshotManifest {
        // The snapshot is on disk: devices may now drop what it holds.
        // One statement for every device, compiled once per snapshot rather
        // than once per device, which a cloud of thousands of devices would
        // feel at every snapshot.
        try write { db in
            let update = try db.makeStatement(sql: """
                UPDATE devices SET backed_up_epoch = ?, backed_up_seq = ?
                WHERE app = ? AND device = ? AND (backed_up_epoch, backed_up_seq) < (?, ?)
                """)
            for device in copy.held {
                try update.execute(arguments: [device.epoch, device.seq, device.app, device.device, device.epoch, device.seq])
            }
        }
        return try CloudIndex.readManifest(copy.destination)
    }

    /// The manifest of the cloud snapshot at `path`; with `key`, an
    /// encrypted snapshot's is authenticated before it is read.
    public static func readManifest(_ path: String, key: SymmetricKey? = nil) throws(CloudError) -> CloudSnapshotManifest {
        let object: JSONObject
        do {
            object = try SnapshotFile.manifest(at: path, key: key)
        } catch {
            throw CloudError(error)
        }
        return try CloudSnapshotManifest(object)
    }

    /// Restores the cloud snapshot at `snapshot` into a cloud store at `path`,
    /// checking everything first: the manifest, checksum and key, SQLite's
    /// integrity check, the cloud log's chain and payloads, the log head against
    /// the manifest, and the projections against a replay of the log. Then it
    /// replaces `path` in one rename (an existing store needs `force` and is kept
    /// beside it). Devices then learn from gaps what the restored cloud lacks and
    /// send it again. Any failure leaves `path` as it was.
    @discardableResult
    public static func restore(snapshot: String, to path: String, force: Bool = false, key: SymmetricKey? = nil,
                               options: CloudOptions = CloudOptions()) throws(CloudError) -> CloudSnapshotManifest {
        try restore(snapshot: snapshot, to: path, through: nil, force: force, key: key, options: options).manifest
    }

    /// The first half of `restore`: extracts `snapshot` into a new store at
    /// `staging` (replacing anything there) and checks it as `restore` does.
    /// On failure nothing is left at `staging`. Touches no other file, so it
    /// may run while the store it will replace is still in use. It is
    /// `extractForRestore` and `verifyStaged` in a row.
    public static func stageRestore(snapshot: String, at staging: String, key: SymmetricKey? = nil,
                                    options: CloudOptions = CloudOptions()) throws(CloudError) -> CloudSnapshotManifest {
        let manifest = try extractForRestore(snapshot: snapshot, at: staging, key: key)
        try verifyStaged(staging, manifest: manifest, options: options)
        return manifest
    }

    /// Extracts `snapshot` into a new store at `staging` (replacing anything
    /// there), checking the container, its checksum and key, and returns its
    /// manifest. Nothing else about the store is checked yet: that is
    /// `verifyStaged`. On failure nothing is left at `staging`.
    public static func extractForRestore(snapshot: String, at staging: String,
                                         key: SymmetricKey? = nil) throws(CloudError) -> CloudSnapshotManifest {
        let manifest = try readManifest(snapshot, key: key)
        StoreFiles.remove(staging)
        do {
            _ = try SnapshotFile.extract(snapshot, to: staging, key: key)
        } catch {
            throw CloudError(error)
        }
        return manifest
    }

    /// Checks the store `extractForRestore` made at `staging` against the
    /// snapshot's `manifest`: SQLite's integrity check, the cloud log's chain
    /// and payloads, the log head, and the projections against a replay of
    /// the log. On failure the store at `staging` is removed.
    public static func verifyStaged(_ staging: String, manifest: CloudSnapshotManifest,
                                    options: CloudOptions = CloudOptions()) throws(CloudError) {
        do {
            let version = try checkRestoredSchema(staging)
            try verifyRestored(staging, version: version, manifest: manifest, options: options)
        } catch {
            StoreFiles.remove(staging)
            throw error
        }
    }

    /// The second half of `restore`: puts the store `stageRestore` made at
    /// `staging` in the place of `path` in one rename, keeping an existing
    /// store beside it.
    public static func finishRestore(staged staging: String, to path: String, options: CloudOptions = CloudOptions()) throws(CloudError) {
        do {
            _ = try StoreFiles.replace(path, with: staging, stamp: options.clock.now().millisecondsSince1970)
        } catch {
            throw CloudError(.snapshot, error.message)
        }
    }

    /// The schema of a new cloud store of this build, and of a store of
    /// format version 6, which older snapshots are checked against.
    private static let currentSchema: Result<(current: [SchemaObject], format6: [SchemaObject]), CloudError> = Result { () throws(CloudError) in
        do {
            return (try SchemaCheck.schema { db in
                        try CloudSchema.create(db, threshold: 1, voterSecret: [UInt8](repeating: 0, count: 32), createdAt: 0)
                    },
                    try SchemaCheck.schema(of: CloudSchema.Format6.create))
        } catch {
            throw CloudError(.database, "cannot make the cloud store schema to compare with: \(describe(error))")
        }
    }

    /// Refuses a restored file whose schema is not one this build makes
    /// (`SchemaCheck`; a file of version 1 to 6 against version 6's
    /// layout) or whose registry holds what this build never writes,
    /// before anything opens it as a store. Returns its format version.
    static func checkRestoredSchema(_ path: String) throws(CloudError) -> Int {
        let schemas = try currentSchema.get()
        let found: (objects: [SchemaObject], version: Int64?)
        do {
            found = try SchemaCheck.inspect(path, metaTable: "cloud_meta")
        } catch {
            if let failure = RestoredFile.integrityFailure(at: path) { throw CloudError(.snapshot, failure) }
            throw CloudError(.snapshot, "the snapshot's database cannot be read: \(describe(error))")
        }
        guard let version = found.version, (1...Int64(CloudSchema.formatVersion)).contains(version) else {
            throw CloudError(.snapshot, "the snapshot's database is not a cloud store of a version this build reads (1 to \(CloudSchema.formatVersion))")
        }
        let isCurrent = version == Int64(CloudSchema.formatVersion)
        // Versions 7 on are the current layout less what later versions added.
        let isPerApp = version >= Int64(CloudSchema.perAppChainVersion)
        switch SchemaCheck.verdict(found: found.objects, expected: isPerApp ? schemas.current : schemas.format6,
                                   isCurrentVersion: isCurrent) {
        case .accepted: break
        case .acceptedDroppingDerived(let tables): throw CloudError(.snapshot, "the restored file's tables \(tables) are not this build's: refused")
        case .refused(let problem): throw CloudError(.snapshot, "\(problem): refused")
        }
        do {
            try SchemaCheck.read(path) { db in try checkRegistry(db, version: Int(version)) }
        } catch let error as CloudError {
            throw CloudError(.snapshot, "\(error.message): refused")
        } catch {
            throw CloudError(.snapshot, "the snapshot's registry cannot be read: \(describe(error))")
        }
        return Int(version)
    }

    /// The tables a replay does not check, since no projection is made of
    /// them: `cloud_meta`, the apps and the devices (whose keys sign every
    /// reply). Each value must be what this build writes.
    static func checkRegistry(_ db: Database, version: Int) throws {
        func text(_ value: DatabaseValue, _ what: String, upTo limit: Int = 256) throws -> String {
            guard case .string(let text) = value.storage, !text.isEmpty, text.utf8.count <= limit else {
                throw CloudError(.corruptStore, "\(what) is \(value), not a name of 1 to \(limit) bytes")
            }
            return text
        }
        func blob(_ value: DatabaseValue, _ what: String) throws {
            guard case .blob(let bytes) = value.storage, bytes.count == 32 else {
                throw CloudError(.corruptStore, "\(what) is \(value), not 32 bytes")
            }
        }
        func integer(_ value: DatabaseValue, _ range: ClosedRange<Int64>, _ what: String) throws {
            guard case .int64(let number) = value.storage, range.contains(number) else {
                throw CloudError(.corruptStore, "\(what) is \(value), not an integer from \(range.lowerBound) to \(range.upperBound)")
            }
        }
        let position = Int64(0)...Int64(WireLimits.maximumPosition)
        for row in try Row.fetchAll(db, sql: "SELECT key, value FROM cloud_meta") {
            let key = try text(row[0], "a cloud_meta key")
            let value: DatabaseValue = row[1]
            switch key {
            case "application": guard value == CloudSchema.application.databaseValue else { throw CloudError(.corruptStore, "cloud_meta.application is \(value)") }
            case "format_version": try integer(value, 1...Int64(CloudSchema.formatVersion), "cloud_meta.format_version")
            case "threshold": try integer(value, 1...1_000_000, "cloud_meta.threshold")
            case "agreement": try integer(value, 1...1_000_000, "cloud_meta.agreement")
            case "voter_secret": try blob(value, "cloud_meta.voter_secret")
            case "created_at": try integer(value, Int64.min...Int64.max, "cloud_meta.created_at")
            default: throw CloudError(.corruptStore, "cloud_meta holds \(key), which no cloud store of this build has")
            }
        }
        let quota = version >= 4 ? "maximum_devices" : "NULL"
        let popularity = version >= 9 ? "popularity" : "NULL"
        for row in try Row.fetchAll(db, sql: "SELECT app, secret_hash, \(quota), \(popularity) FROM apps") {
            let app = try text(row[0], "an app name")
            try blob(row[1], "apps.secret_hash of \(app)")
            if !(row[2] as DatabaseValue).isNull {
                try integer(row[2], 1...Int64(EnrolmentRule.largestDeviceQuota), "apps.maximum_devices of \(app)")
            }
            let mode: DatabaseValue = row[3]
            switch mode.storage {
            case .null: break
            case .blob(let bytes): _ = try Stored.popularity([UInt8](bytes), app: AppID(app))
            default: throw CloudError(.corruptStore, "apps.popularity of \(app) is \(mode), not a popularity mode")
            }
        }
        guard version >= 7 else { return try checkFormat6Devices(db, version: version) }
        for row in try Row.fetchAll(db, sql: """
            SELECT app, device, key, enrolled_at, backed_up_epoch, backed_up_seq, enrolment_proof FROM devices
            """) {
            let app = try text(row[0], "devices.app")
            let device = try text(row[1], "a device name of \(app)")
            try blob(row[2], "devices.key of \(device)")
            try integer(row[3], Int64.min...Int64.max, "devices.enrolled_at of \(device)")
            try integer(row[4], position, "devices.backed_up_epoch of \(device)")
            try integer(row[5], position, "devices.backed_up_seq of \(device)")
            if !(row[6] as DatabaseValue).isNull { try blob(row[6], "devices.enrolment_proof of \(device)") }
        }
    }

    /// `checkRegistry`'s check of the devices of a store of version 1 to 6.
    private static func checkFormat6Devices(_ db: Database, version: Int) throws {
        func text(_ value: DatabaseValue, _ what: String, upTo limit: Int = 256) throws -> String {
            guard case .string(let text) = value.storage, !text.isEmpty, text.utf8.count <= limit else {
                throw CloudError(.corruptStore, "\(what) is \(value), not a name of 1 to \(limit) bytes")
            }
            return text
        }
        let position = Int64(0)...Int64(WireLimits.maximumPosition)
        let proof = version >= 4 ? "enrolment_proof" : "NULL"
        let offered = version >= 2 ? "offered_at_epoch, offered_at_seq" : "0, 0"
        let name = version >= 5 ? "name" : "device"
        for row in try Row.fetchAll(db, sql: """
            SELECT device, app, key, enrolled_at, requests_delivered, requests_offered, \(offered),
                   backed_up_epoch, backed_up_seq, \(proof), \(name) FROM devices
            """) {
            // The id is the name, or the app and the name on two lines.
            let device = try text(row[0], "a device id", upTo: 2 * 256 + 1)
            let app = try text(row[1], "devices.app of \(device)")
            let deviceName = try text(row[11], "devices.name of \(device)")
            guard device == deviceName || device == app + "\n" + deviceName else {
                throw CloudError(.corruptStore, "device id \(device) is neither its name \(deviceName) nor its app's and its name")
            }
            guard case .blob(let key) = (row[2] as DatabaseValue).storage, key.count == 32 else {
                throw CloudError(.corruptStore, "devices.key of \(device) is not 32 bytes")
            }
            guard case .int64 = (row[3] as DatabaseValue).storage else {
                throw CloudError(.corruptStore, "devices.enrolled_at of \(device) is not an integer")
            }
            for (index, column) in [(4, "requests_delivered"), (5, "requests_offered"), (6, "offered_at_epoch"),
                                    (7, "offered_at_seq"), (8, "backed_up_epoch"), (9, "backed_up_seq")] {
                guard case .int64(let number) = (row[index] as DatabaseValue).storage, position.contains(number) else {
                    throw CloudError(.corruptStore, "devices.\(column) of \(device) is not an integer from 0 to \(WireLimits.maximumPosition)")
                }
            }
            if !(row[10] as DatabaseValue).isNull {
                guard case .blob(let proof) = (row[10] as DatabaseValue).storage, proof.count == 32 else {
                    throw CloudError(.corruptStore, "devices.enrolment_proof of \(device) is not 32 bytes")
                }
            }
        }
    }

    /// The checks of a restored store, on three threads: the log's chain
    /// hands each verified row to the replay of the projections
    /// (`RowStream`), and SQLite's integrity check runs beside them: side by
    /// side they end sooner than one after another, and a cloud is down until
    /// its restore is checked.
    private static func verifyRestored(_ path: String, version: Int, manifest: CloudSnapshotManifest,
                                       options: CloudOptions) throws(CloudError) {
        if version < CloudSchema.perAppChainVersion {
            // The manifest names the single chain of versions 1 to 6, which
            // opening the store rechains per app: it is compared first.
            let chain: (rows: Int64, head: [UInt8])
            do {
                chain = try SchemaCheck.read(path) { db in try CloudLog.verifyFormat6Chain(db) }
            } catch let error as CloudError {
                throw CloudError(.snapshot, "the snapshot's cloud log does not verify: \(error.message)")
            } catch {
                throw CloudError(.snapshot, "the snapshot's cloud log cannot be read: \(describe(error))")
            }
            guard chain.rows == manifest.logRows, RowDigest.hex(chain.head) == manifest.logHeadHash else {
                throw CloudError(.snapshot, "the snapshot's cloud log (\(chain.rows) rows) does not match its manifest (\(manifest.logRows) rows)")
            }
        }
        var storeOptions = options
        storeOptions.readOnly = false
        storeOptions.threshold = nil
        storeOptions.agreement = nil
        // The other threads read the file through connections of their own.
        storeOptions.exclusive = false
        var verifierOptions = storeOptions
        verifierOptions.readOnly = true
        let cloud: CloudIndex
        let verifier: CloudIndex
        do {
            cloud = try CloudIndex(at: .file(path), options: storeOptions)
            verifier = try CloudIndex(at: .file(path), options: verifierOptions)
        } catch {
            // A file that SQLite finds damaged is reported as such, whatever opening it said.
            if let failure = RestoredFile.integrityFailure(at: path) { throw CloudError(.snapshot, failure) }
            throw error
        }
        let stream = RowStream<LoggedFrame>()
        let checks = Parallel.beside({ () -> Result<CloudLogVerification, CloudError> in
            Result { () throws(CloudError) in
                defer { stream.finish() }
                return try verifier.verifyLog(handingTo: stream)
            }
        }, { RestoredFile.integrityFailure(at: path) }, while: {
            Result { () throws(CloudError) in
                // Whatever fails here, the chain must not wait for a replay that will never take its rows.
                defer { stream.abandon() }
                return (try cloud.projectionDigest(), try cloud.rebuiltProjectionDigest(replaying: stream))
            }
        })
        try? verifier.queue.close()
        if let failure = checks.second.0 { throw CloudError(.snapshot, failure) }
        let chain = checks.first.0
        let projections = checks.main
        let verification = try chain.get()
        if let problem = verification.firstProblem {
            throw CloudError(.snapshot, "the snapshot's cloud log does not verify: \(problem)")
        }
        if version >= CloudSchema.perAppChainVersion {
            guard Int64(verification.verifiedRows) == manifest.logRows, verification.headsDigest == manifest.logHeadHash else {
                throw CloudError(.snapshot, "the snapshot's cloud log (\(verification.verifiedRows) rows) does not match its manifest (\(manifest.logRows) rows)")
            }
        }
        let digests = try projections.get()
        guard digests.0 == digests.1 else {
            throw CloudError(.snapshot, "the snapshot's projections differ from a replay of its cloud log")
        }
        do {
            try RestoredFile.closeSelfContained(cloud.queue)
        } catch {
            throw CloudError(.snapshot, "cannot close the restored cloud store: \(describe(error))")
        }
    }
}
