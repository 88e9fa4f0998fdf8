import ByteCoding
import CloudCore
import CloudSQLite
import Crypto
import Foundation
import IndexModel
import Logging
import Synchronization
import SyncWire

/// How a PostgreSQL cloud store is opened: the store's options (clock,
/// randomness, K, agreement, read-only), the connection pool's size, and
/// the timeouts that keep one slow statement or lost server from holding a
/// connection for ever.
public struct PostgresCloudOptions: Sendable {
    public var store: CloudOptions
    /// The most connections open at once (each `cloud serve` process has its own pool).
    public var poolSize: Int
    /// The longest one statement may run; past it PostgreSQL cancels it.
    public var statementTimeout: Duration
    /// How long opening the store keeps trying to reach the database before
    /// it is unreachable. Once the store has connected, a lost database
    /// fails calls at once (`PostgresPool`), and ingest answers `unavailable`.
    public var connectTimeout: Duration
    public var logger: Logger

    public init(store: CloudOptions = CloudOptions(), poolSize: Int = 4, statementTimeout: Duration = .seconds(30),
                connectTimeout: Duration = .seconds(10), logger: Logger = Logger(label: "sightline.postgres")) {
        self.store = store
        self.poolSize = poolSize
        self.statementTimeout = statementTimeout
        self.connectTimeout = connectTimeout
        self.logger = logger
    }
}

/// The cloud aggregator's PostgreSQL backend (`CloudStore`): the tables of
/// the SQLite backend (`PostgresSchema`), the same rules and fold
/// (`IngestCore`, `CloudFold`), and several servers on one database
/// (`docs/CLOUD.md`, "PostgreSQL").
///
/// Every call blocks its thread until PostgreSQL answers (the connection's
/// work runs on the pool's own event loop), as the SQLite backend blocks on
/// its file: call it from a thread that may block, never from an event loop.
public final class PostgresCloud: CloudStore {
    public let location: PostgresLocation
    let pool: PostgresPool
    let clock: any StoreClock
    let random: any RandomSource
    let secrets: CloudSecrets
    /// K and the agreement as last read from the database.
    private let current: Mutex<FoldSettings>
    /// Enrolled devices' keys, as authentication read them (`EnrolledKeys`).
    private let enrolled = EnrolledKeys()
    /// Each app's reading of the log for purges, kept between them.
    let purgeReadings = CloudPurgeReadings()
    /// What each app's last fold left (its rows and its acks' requests), kept between ingest transactions while exact.
    let keptFold = KeptFold()
    public let sketchCache = SketchCache()
    public let frameDictionaries: FrameDictionaries

    public var threshold: Int { current.withLock { $0.threshold } }
    public var agreement: Int { current.withLock { $0.agreement } }
    public var now: Timestamp { clock.now() }
    public var displayName: String { location.description }

    /// Opens the cloud store in the database at `location`, making its
    /// schema on first use (unless read-only). A database whose cloud store
    /// has another format version is refused; a K or agreement other than
    /// the store's is kept and the projections are folded again.
    ///
    /// - Throws: `CloudError` with code `.database` when the database cannot
    ///   be reached or refuses the user (the message names the URL without a
    ///   password), `.notACloudStore` for another format version,
    ///   `.storeNotFound` when a read-only open finds no store.
    public init(at location: PostgresLocation, password: String?, options: PostgresCloudOptions = PostgresCloudOptions())
        throws(CloudError) {
        let store = options.store
        frameDictionaries = FrameDictionaries(capacityBytes: store.frameDictionaryBytes)
        if let threshold = store.threshold, !(1...1_000_000).contains(threshold) {
            throw CloudError(.invalidOption, "the threshold must be between 1 and 1,000,000, not \(threshold)")
        }
        if let agreement = store.agreement, !(1...1_000_000).contains(agreement) {
            throw CloudError(.invalidOption, "the content agreement must be between 1 and 1,000,000, not \(agreement)")
        }
        guard (1...1000).contains(options.poolSize) else {
            throw CloudError(.invalidOption, "the pool size must be between 1 and 1,000, not \(options.poolSize)")
        }
        self.location = location
        clock = store.clock
        random = store.random
        pool = PostgresPool(location: location, password: password, size: options.poolSize,
                            statementTimeout: options.statementTimeout, connectTimeout: options.connectTimeout,
                            searchPath: PostgresSchema.name, logger: options.logger)
        let opened: (settings: FoldSettings, secret: [UInt8], changed: Bool)
        do {
            opened = try PostgresCloud.open(pool, location: location, options: store)
        } catch {
            pool.close()
            throw error
        }
        secrets = CloudSecrets(secret: opened.secret)
        current = Mutex(opened.settings)
        if opened.changed {
            do {
                try rebuildProjections()
            } catch {
                pool.close()
                throw error
            }
        }
    }

    deinit {
        pool.close()
    }

    /// Closes the pool's connections; the store is unusable afterwards.
    public func close() {
        pool.close()
    }

    /// Finds or makes the store, under an advisory lock so that servers
    /// starting together make it once, and keeps a K or agreement asked for.
    private static func open(_ pool: PostgresPool, location: PostgresLocation,
                             options: CloudOptions) throws(CloudError) -> (settings: FoldSettings, secret: [UInt8], changed: Bool) {
        try run(pool, location) { session in
            try session.transaction(readOnly: options.readOnly) {
                if !options.readOnly {
                    _ = try session.query("SELECT 1 FROM pg_advisory_xact_lock($1)", [.int64(PostgresSchema.creationLock)])
                }
                let exists = try session.query("SELECT to_regclass('sightline.cloud_meta') IS NOT NULL")[0].flag(0, "the schema's presence")
                if !exists {
                    guard !options.readOnly else {
                        throw CloudError(.storeNotFound, """
                            no cloud store in \(location): check the URL (read-only commands never create one)
                            """)
                    }
                    let secret = (0..<4).flatMap { _ in withUnsafeBytes(of: options.random.next().littleEndian) { Array($0) } }
                    let threshold = options.threshold ?? CloudOptions.defaultThreshold
                    try session.executeScript(PostgresSchema.ddl)
                    var meta: [(String, String)] = [
                        ("application", CloudSchema.application), ("format_version", String(PostgresSchema.formatVersion)),
                        ("threshold", String(threshold)), ("voter_secret", Hex.encode(secret)),
                        ("created_at", String(options.clock.now().millisecondsSince1970)),
                    ]
                    if let agreement = options.agreement { meta.append(("agreement", String(agreement))) }
                    for (key, value) in meta {
                        _ = try session.query("INSERT INTO cloud_meta (key, value) VALUES ($1, $2)", [.text(key), .text(value)])
                    }
                    return (FoldSettings(threshold: threshold, agreement: options.agreement ?? threshold), secret, false)
                }
                let meta = try readMeta(session, location: location, readOnly: options.readOnly)
                var changed = false
                if let threshold = options.threshold, threshold != meta.threshold {
                    _ = try session.query("UPDATE cloud_meta SET value = $1 WHERE key = 'threshold'", [.text(String(threshold))])
                    changed = true
                }
                if let agreement = options.agreement, agreement != meta.agreement {
                    _ = try session.query("""
                        INSERT INTO cloud_meta (key, value) VALUES ('agreement', $1)
                        ON CONFLICT (key) DO UPDATE SET value = excluded.value
                        """, [.text(String(agreement))])
                    changed = true
                }
                let threshold = options.threshold ?? meta.threshold
                return (FoldSettings(threshold: threshold, agreement: options.agreement ?? meta.agreement ?? threshold), meta.secret, changed)
            }
        }
    }

    /// Whether the database at `location` holds a cloud store (its schema).
    public static func holdsStore(at location: PostgresLocation, password: String?) throws(CloudError) -> Bool {
        let pool = PostgresPool(location: location, password: password, size: 1, searchPath: PostgresSchema.name)
        defer { pool.close() }
        return try run(pool, location) { session in
            try session.query("SELECT to_regclass('sightline.cloud_meta') IS NOT NULL")[0].flag(0, "the schema's presence")
        }
    }

    /// Drops the cloud store in the database at `location`, every table of
    /// it (the `sightline` schema), for good: what a drill does to a cloud
    /// whose store is lost.
    public static func dropStore(at location: PostgresLocation, password: String?) throws(CloudError) {
        let pool = PostgresPool(location: location, password: password, size: 1, searchPath: PostgresSchema.name)
        defer { pool.close() }
        try run(pool, location) { session in try session.executeScript("DROP SCHEMA IF EXISTS sightline CASCADE") }
    }

    /// `cloud_meta`, checked: this application, this format version (a
    /// store of version 7 is brought to it, unless `readOnly`), and values in
    /// range.
    private static func readMeta(_ session: PostgresSession, location: PostgresLocation, readOnly: Bool) throws
        -> (threshold: Int, agreement: Int?, secret: [UInt8]) {
        var meta: [String: String] = [:]
        for row in try session.query("SELECT key, value FROM cloud_meta") {
            meta[try row.text(0, "cloud_meta.key")] = try row.text(1, "cloud_meta.value")
        }
        guard meta["application"] == CloudSchema.application else {
            throw CloudError(.notACloudStore, "\(location) holds a sightline schema that is not a Sightline cloud store")
        }
        guard let version = meta["format_version"].flatMap({ Int($0) }) else {
            throw CloudError(.corruptStore, "cloud_meta.format_version of \(location) is not a number")
        }
        guard (CloudSchema.perAppChainVersion...PostgresSchema.formatVersion).contains(version) else {
            throw CloudError(.notACloudStore, version > PostgresSchema.formatVersion
                ? "the cloud store in \(location) has format version \(version), newer than this build's \(PostgresSchema.formatVersion): use a newer sightline"
                : "the cloud store in \(location) has format version \(version), which this build does not read (it reads \(PostgresSchema.formatVersion))")
        }
        if version < PostgresSchema.formatVersion {
            // Version 8 added the crawled pages, and version 9 each app's
            // popularity mode and its sketch, which an older store has none
            // of: making them is the whole migration.
            guard !readOnly else {
                throw CloudError(.notACloudStore, """
                    the cloud store in \(location) has format version \(version); this build reads version \(PostgresSchema.formatVersion): \
                    open it once for writing (`sightline cloud rebuild --db`) to migrate it
                    """)
            }
            if version < 8 { try session.executeScript(PostgresSchema.pagesDDL) }
            if version < 9 {
                try session.executeScript(PostgresSchema.sketchDDL)
                try session.executeScript(PostgresSchema.popularityColumnDDL)
            }
            // Version 10 added purged log rows, a codec value, and no table.
            _ = try session.query("UPDATE cloud_meta SET value = $1 WHERE key = 'format_version'",
                                  [.text(String(PostgresSchema.formatVersion))])
        }
        guard let threshold = meta["threshold"].flatMap({ Int($0) }), (1...1_000_000).contains(threshold) else {
            throw CloudError(.corruptStore, "cloud_meta.threshold of \(location) is not a number from 1 to 1,000,000")
        }
        var agreement: Int?
        if let stored = meta["agreement"] {
            guard let value = Int(stored), (1...1_000_000).contains(value) else {
                throw CloudError(.corruptStore, "cloud_meta.agreement of \(location) is not a number from 1 to 1,000,000")
            }
            agreement = value
        }
        guard let secret = meta["voter_secret"].flatMap({ Hex.decode($0) }), secret.count == 32 else {
            throw CloudError(.corruptStore, "cloud_meta.voter_secret of \(location) is not 32 bytes in hexadecimal")
        }
        return (threshold, agreement, secret)
    }

    /// Runs `body` with a session of `pool`, turning the database's failures
    /// into `CloudError`s that name the URL (never its password), once.
    static func run<T>(_ pool: PostgresPool, _ location: PostgresLocation, _ body: (PostgresSession) throws -> T) throws(CloudError) -> T {
        do {
            return try pool.withSession(body)
        } catch let error as CloudError {
            throw error
        } catch let failure as PostgresFailure {
            throw CloudError(.database, failure.message.contains(location.description)
                ? failure.message : "PostgreSQL at \(location): \(failure.message)")
        } catch {
            throw CloudError(.database, "PostgreSQL at \(location): \(error)")
        }
    }

    func run<T>(_ body: (PostgresSession) throws -> T) throws(CloudError) -> T {
        try PostgresCloud.run(pool, location, body)
    }

    /// Runs `body` in one transaction that reads a consistent snapshot.
    func read<T>(_ body: (PostgresSession) throws -> T) throws(CloudError) -> T {
        try run { session in try session.transaction(isolation: .repeatableRead, readOnly: true) { try body(session) } }
    }

    /// The columns of `cloud_meta` rows for K (name 1) and the agreement (name 2), for `FoldSettings.init`.
    static let settingColumns = """
        CASE key WHEN 'threshold' THEN 1 ELSE 2 END, CASE WHEN value ~ '^[0-9]{1,7}$' THEN value::int8 END
        """

    // MARK: - Apps and devices

    /// Registers `app` with the secret its devices enrol with, or changes
    /// its secret and device quota (`EnrolmentRule`).
    public func registerApp(_ app: AppID, enrolmentSecret: String, maximumDevices: Int?) throws(CloudError) {
        let hash = try EnrolmentRule.secretHash(app: app, enrolmentSecret: enrolmentSecret, maximumDevices: maximumDevices)
        try run { session in
            _ = try session.query("""
                INSERT INTO apps (app, secret_hash, maximum_devices) VALUES ($1, $2, $3)
                ON CONFLICT (app) DO UPDATE SET secret_hash = excluded.secret_hash, maximum_devices = excluded.maximum_devices
                """, [.text(app.rawValue), .bytea(hash), PostgresValue(maximumDevices.map(Int64.init))])
        }
    }

    /// Enrols `device` for `app` (`EnrolmentRule`, as `CloudIndex.enrol`):
    /// the app's row is locked, so that two servers enrolling at once keep
    /// the quota and one name gets one key.
    public func enrol(app: AppID, device: DeviceID, enrolmentSecret: String, proof: [UInt8]?) throws(CloudError) -> [UInt8] {
        let request = try EnrolmentRule.request(app: app, device: device, enrolmentSecret: enrolmentSecret, proof: proof)
        let key = EnrolmentRule.newKey(random)
        let now = clock.now()
        return try run { session in
            try session.transaction {
                let registered = try session.query("SELECT secret_hash, maximum_devices FROM apps WHERE app = $1 FOR UPDATE",
                                                   [.text(app.rawValue)]).first
                let existing = try session.query("SELECT key, enrolment_proof FROM devices WHERE app = $1 AND device = $2",
                                                 [.text(app.rawValue), .text(device.rawValue)]).first
                let decided = try EnrolmentRule.decide(
                    request, registered: try registered?.bytes(0, "apps.secret_hash of \(app)"),
                    existing: try existing.map { row throws(CloudError) in
                        (try row.bytes(0, "devices.key of \(device)"), try row.optionalBytes(1, "devices.enrolment_proof of \(device)"))
                    },
                    quota: try registered?.optionalInteger(1, "apps.maximum_devices of \(app)")) { () throws(CloudError) in
                        do {
                            return try session.query("SELECT count(*) FROM devices WHERE app = $1", [.text(app.rawValue)])[0]
                                .integer(0, "the device count of \(app)")
                        } catch let error as CloudError {
                            throw error
                        } catch {
                            throw CloudError(.database, "cannot count the devices of \(app): \(error)")
                        }
                    }
                if let decided { return decided }
                _ = try session.query("""
                    INSERT INTO devices (app, device, key, enrolled_at, enrolment_proof) VALUES ($1, $2, $3, $4, $5)
                    """, [.text(app.rawValue), .text(device.rawValue), .bytea(key), .int64(now.millisecondsSince1970),
                          PostgresValue(request.proofHash)])
                return key
            }
        }
    }

    // MARK: - Ingest

    public func authenticate(_ bytes: [UInt8]) -> FrameAuthentication {
        FrameAuthentication.of(bytes) { app, name in try enrolledKey(app: app, device: name) }
    }

    /// The key of the device, or nil when it is not enrolled; remembered
    /// once read.
    private func enrolledKey(app: AppID, device: DeviceID) throws -> [UInt8]? {
        let stream = DeviceStream(app: app, device: device)
        if let known = enrolled.key(of: stream) { return known }
        let key = try run { session in
            try session.query("SELECT key FROM devices WHERE app = $1 AND device = $2", [.text(app.rawValue), .text(device.rawValue)])
                .first.map { row throws(CloudError) in try row.bytes(0, "devices.key of \(device)") }
        }
        if let key { enrolled.remember(key, of: stream) }
        return key
    }

    /// How often a transaction that met a deadlock, a serialization failure
    /// or changed settings is run again before the frame is answered
    /// `unavailable` (the device sends it again).
    static let attempts = 5

    /// Ingests an authenticated frame and returns the reply, deciding as
    /// every backend does (`IngestCore`) in one transaction
    /// (`PostgresIngestTransaction`). Acks are built after the commit; a
    /// database that fails or is lost is `unavailable`, and nothing of the
    /// frame was kept.
    public func ingest(_ authenticated: AuthenticatedFrame, messages: [OutboxMessage]) -> IngestResult {
        let frame = authenticated.frame
        let name = authenticated.device
        let app = authenticated.app
        let key = authenticated.key
        var problem = "the transaction was run \(PostgresCloud.attempts) times"
        for _ in 0..<PostgresCloud.attempts {
            do {
                let decision = try pool.withSession { session in
                    try session.transaction {
                        let memory = FoldMemory(limit: Int.max)
                        let transaction = try PostgresIngestTransaction(session: session, app: app, device: frame.device, secrets: secrets,
                                                                        memory: memory, kept: keptFold, messages: messages)
                        current.withLock { $0 = transaction.settings }
                        let core = IngestCore(threshold: transaction.settings.threshold, agreement: transaction.settings.agreement,
                                              secrets: secrets, clock: clock)
                        let decision = try core.decide(frame, messages: messages, app: app, in: transaction, memory: memory)
                        transaction.keepFold()
                        return decision
                    }
                }
                if case .rejected(let rejection) = decision, rejection.error.code == .equivocation {
                    try? flagEquivocation(frame, app: app)
                }
                return decision.result(name: name, frame: frame, key: key)
            } catch let changed as SettingsChanged {
                current.withLock { $0 = changed.settings }
                problem = "the store's K or agreement changed meanwhile"
            } catch let failure as PostgresFailure where failure.code == .retryable {
                problem = failure.message
            } catch let refusal as Refusal {
                return .rejecting(WireError(.refused, refusal.message), device: name, frame: frame, key: key)
            } catch is DeviceNotEnrolled {
                enrolled.forget(DeviceStream(app: app, device: name))
                return .rejecting(WireError(.unknownDevice, "device \(name) is not enrolled for app \(app)"), device: name,
                                  frame: frame, key: nil)
            } catch let failure as PostgresFailure {
                return .rejecting(WireError(.unavailable, "the cloud could not store the frame: \(failure.message)"), device: name,
                                  frame: frame, key: key)
            } catch {
                return .rejecting(WireError(.unavailable, "the cloud could not store the frame: \(error)"), device: name,
                                  frame: frame, key: key)
            }
        }
        return .rejecting(WireError(.unavailable, "the cloud could not store the frame: \(problem)"), device: name, frame: frame,
                          key: key)
    }

    private func flagEquivocation(_ frame: UploadFrame, app: AppID) throws {
        let now = clock.now()
        try run { session in
            _ = try session.query("""
                INSERT INTO flags (app, device, epoch, first_seq, last_seq, reason, flagged_at)
                VALUES ($1, $2, $3, $4, $5, 'equivocation', $6)
                """, [.text(app.rawValue), .text(frame.device.rawValue), .position(frame.epoch),
                      .position(frame.firstSeq), .position(frame.lastSeq), .int64(now.millisecondsSince1970)])
        }
    }
}
