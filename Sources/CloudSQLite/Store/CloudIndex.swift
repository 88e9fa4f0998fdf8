import CloudCore
import Crypto
import Foundation
import GRDB
import IndexModel
import Snapshot
import SQLiteSupport
import Synchronization
import SyncWire

/// Where a cloud store lives.
public enum CloudLocation: Hashable, Sendable {
    /// A private in-memory database (the simulator's default).
    case memory
    /// A SQLite file in WAL mode, by default with `synchronous = FULL`: a
    /// committed batch survives power loss, so every acknowledged message is durable.
    case file(String)

    public var displayName: String {
        switch self {
        case .memory: "in-memory cloud store"
        case .file(let path): path
        }
    }
}

/// The cloud aggregator's SQLite backend (`CloudStore`): it takes signed frames from enrolled devices, keeps
/// every accepted batch in a hash-chained cloud log, and folds the messages into
/// the public index and popularity counts in the same transaction
/// (`docs/CLOUD.md`).
///
/// `ingest` is synchronous and answers every frame with reply bytes, never an
/// error: a bad frame is a rejection, and changes nothing.
public final class CloudIndex: CloudStore {
    public let location: CloudLocation
    public let threshold: Int
    /// How many live voters must offer the same content (`ContentRule`): the
    /// store's `agreement`, else K.
    public let agreement: Int
    let queue: DatabaseQueue
    let clock: any StoreClock
    let random: any RandomSource
    /// The keyed hashes made with the store's secret (`CloudSecrets`).
    let secrets: CloudSecrets
    /// Enrolled devices' keys, as ingest has read them (`EnrolledKeys`).
    let enrolled = EnrolledKeys()
    /// Each app's reading of the log for purges, kept between them.
    let purgeReadings = CloudPurgeReadings()
    /// What the fold knows of vote rows between frames (`IngestMemory`).
    let ingestMemory = IngestMemory()
    public let sketchCache = SketchCache()
    public let frameDictionaries: FrameDictionaries
    /// What the connection keeps across its transactions: BEGIN and COMMIT
    /// for every read and write, and the statements ingest runs for every
    /// frame (`CloudStatement`). From GRDB's cache, not owned: a restore
    /// closes the restored store explicitly.
    let connection = ConnectionStatements(groups: [CloudStatement.allCases.count])
    /// The statements ingest runs for every frame.
    var statements: StatementSlots { connection.group(0) }

    /// SQLite's page cache for the store, allocated only as pages are read.
    /// Ingest reads a few pages at random per frame (the device's row, its
    /// epochs, its votes, the log's index): SQLite's 2 MiB default holds a
    /// small part of the pages of a cloud of thousands of devices, so ingest
    /// keeps reading pages back from the OS; 64 MiB holds many times as many,
    /// and ingest reads far fewer back.
    ///
    /// A large cache has a cost at commits: when a B-tree split gives new
    /// pages out of order, SQLite renumbers them through the lock-byte page
    /// (page 262,145 at 4 KiB pages), and the commit that follows then walks
    /// the whole cache to drop pages past the end of the file (Debian's
    /// SQLite 3.40.1, `pcache1TruncateUnsafe`). With 64 MiB full, that walk
    /// was 12% of the simulator's event loop at 30,000 devices.
    static let pageCacheBytes = 64 << 20
    /// The page cache of a store read through a memory map
    /// (`CloudOptions.mapBytes`): reads of pages the map holds need no
    /// cache, so it keeps what the write-ahead log holds (at most about
    /// 1,000 pages between checkpoints), what transactions write, and pages
    /// past the map's end.
    static let mappedPageCacheBytes = 8 << 20
    /// How much a mapped store's file grows at a time (`MappedGrowth`): a
    /// move of the map a chunk, against up to a chunk of the file unused.
    static let mappedChunkBytes: Int32 = 64 << 20

    public init(at location: CloudLocation, options: CloudOptions = CloudOptions()) throws(CloudError) {
        if let threshold = options.threshold, !(1...1_000_000).contains(threshold) {
            throw CloudError(.invalidOption, "the threshold must be between 1 and 1,000,000, not \(threshold)")
        }
        if let agreement = options.agreement, !(1...1_000_000).contains(agreement) {
            throw CloudError(.invalidOption, "the content agreement must be between 1 and 1,000,000, not \(agreement)")
        }
        self.location = location
        frameDictionaries = FrameDictionaries(capacityBytes: options.frameDictionaryBytes)
        clock = options.clock
        random = options.random
        var configuration = Configuration()
        configuration.readonly = options.readOnly
        configuration.busyMode = .timeout(10)
        configuration.label = "CloudIndex"
        configuration.foreignKeysEnabled = false
        let mapBytes = max(0, options.mapBytes)
        let cacheBytes = mapBytes > 0 ? CloudIndex.mappedPageCacheBytes : CloudIndex.pageCacheBytes
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA cache_size = -\(cacheBytes >> 10)")
            if mapBytes > 0 { _ = try Int.fetchOne(db, sql: "PRAGMA mmap_size = \(mapBytes)") }
        }
        if mapBytes > 0 && !options.readOnly, case .file = location {
            configuration.prepareDatabase { db in try MappedGrowth.install(db, chunkBytes: CloudIndex.mappedChunkBytes) }
        }
        if !options.readOnly {
            let synchronous = options.durability == .full ? "FULL" : "NORMAL"
            let exclusive = options.exclusive
            configuration.prepareDatabase { db in
                try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
                // Before WAL is entered, or SQLite maps a shared-memory index.
                if exclusive { _ = try String.fetchOne(db, sql: "PRAGMA locking_mode = EXCLUSIVE") }
            }
        }
        do {
            switch location {
            case .memory:
                queue = try DatabaseQueue(configuration: configuration)
            case .file(let path):
                if options.readOnly && !FileManager.default.fileExists(atPath: path) {
                    throw CloudError(.storeNotFound, "no cloud store at \(path): check the path (read-only commands never create one)")
                }
                if !options.readOnly { configuration.journalMode = .wal }
                if !FileManager.default.fileExists(atPath: path) && !StoreFiles.createPrivate(path) {
                    throw CloudError(.database, "cannot create \(path) (errno \(errno))")
                }
                queue = try DatabaseQueue(path: path, configuration: configuration)
            }
        } catch let error as CloudError {
            throw error
        } catch {
            throw CloudError(.database, "cannot open \(location.displayName): \(CloudIndex.describe(error))")
        }
        let random = options.random
        let now = options.clock.now()
        let threshold = options.threshold
        let agreement = options.agreement
        let readOnly = options.readOnly
        do {
            let opened: (threshold: Int, agreement: Int?, secret: [UInt8], changed: Bool) = try readOnly
                ? queue.snapshotRead { db in
                    let meta = try CloudIndex.checkMeta(db)
                    guard meta.version == CloudSchema.formatVersion else {
                        throw CloudError(.notACloudStore, """
                            \(location.displayName) is a cloud store of format version \(meta.version); this build reads version \
                            \(CloudSchema.formatVersion): open it once for writing (`sightline cloud rebuild --db`) to migrate it
                            """)
                    }
                    return (meta.threshold, meta.agreement, meta.secret, false)
                }
                : queue.write { db in
                    if try !db.tableExists("cloud_meta") {
                        guard try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") == 0 else {
                            throw CloudError(.notACloudStore, "\(location.displayName) is a SQLite database but not a Sightline cloud store")
                        }
                        let secret = (0..<4).flatMap { _ in withUnsafeBytes(of: random.next().littleEndian) { Array($0) } }
                        let initial = threshold ?? CloudOptions.defaultThreshold
                        try CloudSchema.create(db, threshold: initial, voterSecret: secret,
                                               createdAt: now.millisecondsSince1970)
                        if let agreement {
                            try db.execute(sql: "INSERT INTO cloud_meta (key, value) VALUES ('agreement', ?)", arguments: [agreement])
                        }
                        return (initial, agreement, secret, false)
                    }
                    let meta = try CloudIndex.checkMeta(db)
                    var changed = false
                    if meta.version < CloudSchema.formatVersion {
                        try CloudSchema.migrate(db, from: meta.version)
                        changed = true
                    }
                    if let threshold, meta.threshold != threshold {
                        try db.execute(sql: "UPDATE cloud_meta SET value = ? WHERE key = 'threshold'", arguments: [threshold])
                        changed = true
                    }
                    if let agreement, meta.agreement != agreement {
                        try db.execute(sql: """
                            INSERT INTO cloud_meta (key, value) VALUES ('agreement', ?)
                            ON CONFLICT (key) DO UPDATE SET value = excluded.value
                            """, arguments: [agreement])
                        changed = true
                    }
                    let opened = (threshold ?? meta.threshold, agreement ?? meta.agreement, meta.secret)
                    if changed {
                        // Which hashes are public, and which content is kept,
                        // depend on K, on the agreement and on the fold's
                        // rules, which a migration may change: the log is
                        // folded again in the same transaction, so a store
                        // is never left migrated with stale projections.
                        try CloudIndex.refold(db, threshold: opened.0, agreement: opened.1 ?? opened.0,
                                              secrets: CloudSecrets(secret: opened.2))
                    }
                    return (opened.0, opened.1, opened.2, changed)
                }
            self.threshold = opened.threshold
            self.agreement = opened.agreement ?? opened.threshold
            secrets = CloudSecrets(secret: opened.secret)
        } catch let error as CloudError {
            throw error
        } catch {
            throw CloudError(.notACloudStore, "\(location.displayName) cannot be read as a cloud store: \(CloudIndex.describe(error))")
        }
    }

    private static func checkMeta(_ db: Database) throws -> (threshold: Int, agreement: Int?, secret: [UInt8], version: Int) {
        guard try db.tableExists("cloud_meta") else {
            throw CloudError(.notACloudStore, "the file is not a Sightline cloud store (no cloud_meta table)")
        }
        let application = try String.fetchOne(db, sql: "SELECT value FROM cloud_meta WHERE key = 'application'")
        guard application == CloudSchema.application else {
            throw CloudError(.notACloudStore, "the file is not a Sightline cloud store (application is \(application ?? "missing"))")
        }
        let version = try Int.fetchOne(db, sql: "SELECT value FROM cloud_meta WHERE key = 'format_version'") ?? 0
        guard (1...CloudSchema.formatVersion).contains(version) else {
            throw CloudError(.notACloudStore, "cloud store format version \(version) is not supported (this build reads versions 1 to \(CloudSchema.formatVersion))")
        }
        guard let threshold = try Int.fetchOne(db, sql: "SELECT value FROM cloud_meta WHERE key = 'threshold'"),
              let secret = try Data.fetchOne(db, sql: "SELECT value FROM cloud_meta WHERE key = 'voter_secret'"),
              secret.count == 32 else {
            throw CloudError(.notACloudStore, "the cloud store has no threshold or voter secret")
        }
        var agreement: Int?
        if let row = try Row.fetchOne(db, sql: "SELECT value FROM cloud_meta WHERE key = 'agreement'") {
            let value = try Stored.column(row, 0, "cloud_meta.agreement", as: Int.self)
            guard (1...1_000_000).contains(value) else {
                throw CloudError(.corruptStore, "cloud_meta.agreement is \(value), not from 1 to 1,000,000")
            }
            agreement = value
        }
        return (threshold, agreement, [UInt8](secret), version)
    }

    /// Whether the file at `path` is a cloud store (a SQLite database with
    /// `cloud_meta`), without opening it as one. Anything else, a missing or
    /// unreadable file included, is not: callers that also read device stores
    /// leave it to that path and its errors.
    public static func isCloudStore(at path: String) -> Bool {
        guard FileManager.default.fileExists(atPath: path) else { return false }
        var configuration = Configuration()
        configuration.readonly = true
        guard let queue = try? DatabaseQueue(path: path, configuration: configuration) else { return false }
        return (try? queue.read { db in try db.tableExists("cloud_meta") }) ?? false
    }

    /// The cloud's current time (its injected clock), for `$time` in queries.
    public var now: Timestamp { clock.now() }

    public var displayName: String { location.displayName }

    package static func describe(_ error: any Error) -> String {
        SQLiteErrorText.describe(error)
    }

    func write<T>(_ body: (Database) throws -> T) throws(CloudError) -> T {
        do {
            return try queue.cachedWrite(connection, body)
        } catch let error as CloudError {
            throw error
        } catch {
            throw CloudError(.database, "write failed, nothing was committed: \(CloudIndex.describe(error))")
        }
    }

    func read<T>(_ body: (Database) throws -> T) throws(CloudError) -> T {
        do {
            return try queue.snapshotRead(connection, body)
        } catch let error as CloudError {
            throw error
        } catch {
            throw CloudError(.database, "read failed: \(CloudIndex.describe(error))")
        }
    }

    // MARK: - Apps and devices

    /// Registers `app` with the secret its devices enrol with, or changes the
    /// secret of a registered app. Only a hash of the secret is kept.
    /// `maximumDevices` (nil: no limit) caps the devices that may enrol for
    /// it; devices enrolled already stay.
    public func registerApp(_ app: AppID, enrolmentSecret: String, maximumDevices: Int?) throws(CloudError) {
        let hash = try EnrolmentRule.secretHash(app: app, enrolmentSecret: enrolmentSecret, maximumDevices: maximumDevices)
        try write { db in
            try db.execute(sql: """
                INSERT INTO apps (app, secret_hash, maximum_devices) VALUES (?, ?, ?)
                ON CONFLICT (app) DO UPDATE SET secret_hash = excluded.secret_hash, maximum_devices = excluded.maximum_devices
                """, arguments: [app, Data(hash), maximumDevices])
        }
    }

    /// Enrols `device` for `app` and returns its new device key (32 bytes), which
    /// signs its frames. The secret must be the app's; a device is enrolled once
    /// (its key travels in its backups, so a restored device needs no new one).
    ///
    /// Enrolment is idempotent for the device that asked first: `proof` is a
    /// value only that device can make again (`DeviceStore.enrolmentProof()`,
    /// derived from its own secret); the cloud keeps its SHA-256, and the same
    /// proof later gets the same key back, so a device whose first answer was
    /// lost is not locked out. Any other request for the name is refused as
    /// `alreadyEnrolled`. Without a proof, the name can be enrolled only once
    /// (`EnrolmentRule`).
    public func enrol(app: AppID, device: DeviceID, enrolmentSecret: String, proof: [UInt8]?) throws(CloudError) -> [UInt8] {
        let request = try EnrolmentRule.request(app: app, device: device, enrolmentSecret: enrolmentSecret, proof: proof)
        let key = EnrolmentRule.newKey(random)
        let now = clock.now()
        return try write { db in
            // Cached: a simulation enrols thousands of devices in a row.
            let registered = try Row.fetchOne(db.cachedStatement(sql: "SELECT secret_hash, maximum_devices FROM apps WHERE app = ?"),
                                              arguments: [app])
            let quota = try registered.flatMap { row throws(CloudError) in
                (row[1] as DatabaseValue).isNull
                    ? nil : try Stored.count(Stored.column(row, 1, "apps.maximum_devices of \(app)"), "apps.maximum_devices of \(app)")
            }
            let existing = try Row.fetchOne(db.cachedStatement(sql: "SELECT key, enrolment_proof FROM devices WHERE app = ? AND device = ?"),
                                            arguments: [app, device]).map { row throws(CloudError) in
                (key: [UInt8](try Stored.column(row, 0, "devices.key of \(device)") as Data),
                 proofHash: try (Stored.column(row, 1, "devices.enrolment_proof of \(device)") as Data?).map { [UInt8]($0) })
            }
            let decided = try EnrolmentRule.decide(
                request, registered: try registered.map { row throws(CloudError) in [UInt8](try Stored.column(row, 0, "apps.secret_hash of \(app)") as Data) },
                existing: existing, quota: quota) { () throws(CloudError) in
                    do {
                        return try Int64.fetchOne(db.cachedStatement(sql: "SELECT count(*) FROM devices WHERE app = ?"), arguments: [app]) ?? 0
                    } catch {
                        throw CloudError(.database, "cannot count the devices of \(app): \(CloudIndex.describe(error))")
                    }
                }
            if let decided { return decided }
            try db.cachedStatement(sql: "INSERT INTO devices (app, device, key, enrolled_at, enrolment_proof) VALUES (?, ?, ?, ?, ?)")
                .execute(arguments: [app, device, Data(key), now.millisecondsSince1970, request.proofHash.map { Data($0) }])
            return key
        }
    }
}

