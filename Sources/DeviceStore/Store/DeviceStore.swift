import Foundation
import GRDB
import SQLiteSupport
import IndexModel
import IndexQuery
import Snapshot
import Synchronization
import SyncWire

/// Where a device store lives.
public enum StoreLocation: Hashable, Sendable {
    /// A private in-memory database (the simulator's default).
    case memory
    /// A SQLite file in WAL mode.
    case file(String)
}

/// How a device store is opened.
public struct StoreOptions: Sendable {
    public var clock: any StoreClock
    public var random: any RandomSource
    /// Open for inspection only: nothing is created, migrated or written.
    public var readOnly: Bool
    /// `full` syncs the WAL on every commit (a committed call survives power
    /// loss); `normal` survives a process crash only. Full is the default.
    public var durability: Durability
    /// The app (the cloud's tenant) a new store belongs to. It salts the public
    /// hashes the store sends; a store keeps the app it was created with.
    public var app: AppID
    /// The pool on whose connections a writable in-memory store runs its
    /// transactions, keeping its database as pages of its own
    /// (`StoreConnectionPool`); nil: a connection of its own.
    public var connections: StoreConnectionPool?

    /// How far a committed call survives: `full` syncs the write-ahead log at
    /// every commit (survives power loss); `normal` at checkpoints only
    /// (survives a process crash, which is what the simulator models).
    public enum Durability: Sendable {
        case full
        case normal
    }

    public init(clock: any StoreClock = SystemClock(), random: any RandomSource = SystemRandom(),
                readOnly: Bool = false, durability: Durability = .full, app: AppID = StoreOptions.defaultApp,
                connections: StoreConnectionPool? = nil) {
        self.clock = clock
        self.connections = connections
        self.app = app
        self.random = random
        self.readOnly = readOnly
        self.durability = durability
    }

    public static let defaultApp = AppID("com.example.app")
}

/// A device's store: the append-only event journal and the projections folded
/// from it, behind a Core Spotlight-style API.
///
/// Every call is one SQLite transaction: its journal rows and projection changes
/// commit together or not at all. The store never reads ambient time or
/// randomness; both come from `StoreOptions`.
public final class DeviceStore: Sendable {
    public let deviceID: DeviceID
    public let location: StoreLocation
    public let isReadOnly: Bool
    /// The app this store belongs to (set when it was created).
    public let app: AppID
    /// The store's connection, or its pages and a pool's connection for
    /// each transaction (`StoreAccess`).
    let access: StoreAccess
    let clock: any StoreClock
    /// The store's randomness after it was opened (epochs an advance chooses).
    let random: any RandomSource
    let privacyKeys: PrivacyProjection.Keys
    /// How the journal's rows are chained: over payload hashes, unless a
    /// read-only open found a store of format 4 or older.
    let journalChain: JournalChain

    /// `syncStatus()`'s last answer, for an in-memory store (no other
    /// connection can change it): writes that may change it clear it, on the
    /// store's queue.
    let cachedStatus = Mutex<SyncStatus?>(nil)
    /// The device key, once `deviceKey()` has read it.
    let knownDeviceKey = Mutex<[UInt8]?>(nil)
    /// The content requests this store answered and whose answers the cloud
    /// has not acknowledged yet: each hash with the outbox head right after
    /// its answer (`recordContentRequests`). Forgetting it costs at most an
    /// answer sent twice.
    let answersInFlight = Mutex<[PublicHash: OutboxPosition]>([:])
    /// The frame dictionary the last sync run ended with, which the next
    /// one starts from (`FrameDictionary`). In memory only, as the cloud
    /// holds it: after a restart both start over, and a dictionary the
    /// cloud no longer holds costs one frame sent again.
    let frameDictionary = Mutex(FrameDictionary.empty)
    /// The image the store woke from, if it slept (`hibernate()`).
    let wokenImage = Mutex<WokenImage?>(nil)
    /// The write path of the connection running the store's transaction:
    /// only inside one (`write`, `read`).
    var writePath: WritePath { access.current.writePath }
    /// The SQL functions of compiled queries on the connection running the
    /// store's transaction; a query runs under its budget through them
    /// (`query(_:budget:)`). Only inside a transaction.
    var queryFunctions: QueryFunctions { access.current.functions }

    /// Refuses a file whose schema table has a row without a type, a name or
    /// a table name, before GRDB reads that table: GRDB decodes its rows
    /// without a check and traps on such a row.
    static func checkSchemaTable(_ db: Database, _ location: StoreLocation) throws {
        let broken = try Int.fetchOne(db, sql: """
            SELECT count(*) FROM sqlite_master WHERE type IS NULL OR name IS NULL OR tbl_name IS NULL
            """) ?? 0
        guard broken == 0 else {
            throw DeviceStoreError(.corruptStore, """
                \(location.displayName): \(broken) rows of the schema table (sqlite_master) have no type, name or table \
                name; the file is damaged
                """)
        }
    }

    /// How much of a store file SQLite maps into memory: as much as it will
    /// (Debian's SQLite stops at 2 GiB less 64 KiB). A page beyond the map is
    /// copied by a pread, and a large store's searches read pages all over
    /// the file: mapping the whole file keeps their p99 down, most of all a
    /// prefix's (`bench query`).
    static let mapBytes = 1 << 31
    /// The page size of in-memory stores.
    static let memoryPageBytes = 1024

    public convenience init(at location: StoreLocation, options: StoreOptions = StoreOptions()) throws(DeviceStoreError) {
        try self.init(at: location, options: options, image: nil)
    }

    /// Who a new in-memory store is: its device ID, vote secret and time of
    /// making, drawn from its options' randomness and clock as
    /// `init(at: .memory, options:)` draws them (`drawIdentity`). A caller
    /// that makes many stores can draw each one's identity at once and make
    /// the store when it is first used (`init(new:options:)`): the store
    /// is the one `init(at: .memory, options:)` would have made then, byte
    /// for byte, and its randomness has been drawn from in the same order.
    public struct NewIdentity: Sendable {
        public let deviceID: DeviceID
        fileprivate let voteSecret: [UInt8]
        fileprivate let createdAt: Int64
    }

    /// Draws a new in-memory store's identity from `options`, as making
    /// the store would.
    public static func drawIdentity(_ options: StoreOptions) -> NewIdentity {
        draw(options.random, at: options.clock.now())
    }

    private static func draw(_ random: any RandomSource, at now: Timestamp) -> NewIdentity {
        let deviceID = makeDeviceID(random)
        return NewIdentity(deviceID: deviceID, voteSecret: makeSecret(random), createdAt: now.millisecondsSince1970)
    }

    /// A new in-memory store with the identity drawn earlier (`drawIdentity`).
    public convenience init(new identity: NewIdentity, options: StoreOptions) throws(DeviceStoreError) {
        try self.init(at: .memory, options: options, image: nil, identity: identity)
    }

    /// Opens the store at `location`; an in-memory store with `image` holds
    /// those bytes (a store woken from `hibernate()`) instead of a new store,
    /// and a new one without is `identity`'s, or one drawn now.
    /// `known` is the identity of the store whose image it is, read and
    /// checked when that store was opened: given, it is not read again.
    init(at location: StoreLocation, options: StoreOptions, image: [UInt8]?, known: StoreMeta? = nil,
         identity: NewIdentity? = nil) throws(DeviceStoreError) {
        self.location = location
        isReadOnly = options.readOnly
        clock = options.clock
        random = options.random
        let app = options.app
        do {
            try TextRule.name.check(app.rawValue)
        } catch {
            throw DeviceStoreError(.invalidOption, "the app name \(error) (a name is 1 to 256 bytes on one line)")
        }
        let opened: StoreAccess
        do {
            switch location {
            case .memory:
                if let pool = options.connections, !options.readOnly {
                    // Pages of another schema than a new store's get a
                    // connection of their own (`StoreConnectionPool`).
                    opened = try StoreAccess(pool: pool, pages: PageBuffer(image ?? DeviceStore.newStorePages))
                } else {
                    let functions = QueryFunctions()
                    let queue = try DatabaseQueue(configuration: DeviceStore.configuration(for: location, options: options, functions: functions))
                    if let image {
                        try queue.load(image: image)
                    } else {
                        try DeviceStore.emptyMemoryStore.get().backupFromSnapshot(to: queue)
                    }
                    opened = StoreAccess(own: StoreConnection(queue: queue, writePath: WritePath(owned: true), functions: functions))
                }
            case .file(let path):
                let functions = QueryFunctions()
                var configuration = DeviceStore.configuration(for: location, options: options, functions: functions)
                if !options.readOnly { configuration.journalMode = .wal }
                if options.readOnly && !FileManager.default.fileExists(atPath: path) {
                    throw DeviceStoreError(.storeNotFound, "no store at \(path): check the path (read-only commands never create a store)")
                }
                if !options.readOnly && !FileManager.default.fileExists(atPath: path) {
                    try DeviceStore.createAtomically(path: path, configuration: configuration,
                                                     deviceID: DeviceStore.makeDeviceID(options.random), app: app,
                                                     voteSecret: DeviceStore.makeSecret(options.random),
                                                     createdAt: options.clock.now())
                }
                let queue = try DeviceStore.openQueue(path: path, configuration: configuration)
                opened = StoreAccess(own: StoreConnection(queue: queue, writePath: WritePath(), functions: functions))
            }
        } catch let error as DeviceStoreError {
            throw error
        } catch {
            throw DeviceStoreError(.database, "cannot open \(location.displayName): \(DeviceStore.describe(error))")
        }
        access = opened
        let random = options.random
        let now = options.clock.now()
        do {
            let meta: StoreMeta
            if let known, image != nil {
                // The schema is parsed here, as every open parses it, and not
                // by the store's first statement; pooled connections have
                // parsed it already (the pool serves only pages of that schema).
                if !opened.isPooled {
                    guard try opened.with({ try $0.queue.writeWithoutTransaction { db in try SchemaLookup.hasTable(db, "store_meta") } }) else {
                        throw DeviceStoreError(.notADeviceStore, "a sleeping store's image has no store_meta table")
                    }
                }
                meta = known
            } else if options.readOnly {
                meta = try opened.with { connection in
                    try connection.queue.snapshotRead { db in
                        try DeviceStore.checkSchemaTable(db, location)
                        return try DeviceStore.checkMeta(db)
                    }
                }
            } else if case .memory = location, image == nil {
                // The schema came from the empty store, which is the
                // process's own; only the identity is this store's own. A
                // pooled connection, which makes every new in-memory store,
                // keeps the statement that writes it.
                let identity = identity ?? DeviceStore.draw(random, at: now)
                let pooled = opened.isPooled
                try opened.with { connection in try connection.queue.cachedWrite(connection.writePath.connection) { db in
                    try StoreSchema.insertMeta(db, deviceID: identity.deviceID, app: app, voteSecret: identity.voteSecret,
                                               createdAt: identity.createdAt, cached: pooled)
                } }
                meta = StoreMeta(deviceID: identity.deviceID, keys: PrivacyProjection.Keys(app: app, voteSecret: identity.voteSecret))
            } else {
                meta = try opened.with { connection in try connection.queue.write { db in
                    try DeviceStore.checkSchemaTable(db, location)
                    if try SchemaLookup.hasTable(db, "store_meta") {
                        return try DeviceStore.checkMeta(db, migrating: true)
                    }
                    if try !SchemaLookup.hasTable(db, "event_journal"), try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") == 0 {
                        let identifier = DeviceStore.makeDeviceID(random)
                        try StoreSchema.create(db, deviceID: identifier, app: app, voteSecret: DeviceStore.makeSecret(random),
                                               createdAt: now.millisecondsSince1970)
                        return try DeviceStore.checkMeta(db)
                    }
                    throw DeviceStoreError(.notADeviceStore, "\(location.displayName) is a SQLite database but not a Sightline device store")
                } }
            }
            deviceID = meta.deviceID
            journalChain = meta.chain
            self.app = meta.keys.app
            privacyKeys = meta.keys
        } catch let error as DeviceStoreError {
            throw error
        } catch {
            throw DeviceStoreError(.notADeviceStore, "\(location.displayName) cannot be read as a device store: \(DeviceStore.describe(error))")
        }
    }

    /// How a store's connection at `location` is set up: its SQL
    /// functions (`functions`), no foreign keys, no authorizer, and the
    /// page size, map and durability of its kind of store.
    static func configuration(for location: StoreLocation, options: StoreOptions, functions: QueryFunctions) -> Configuration {
        var configuration = Configuration()
        configuration.readonly = options.readOnly
        configuration.busyMode = .timeout(10)
        configuration.label = "DeviceStore"
        // The schema declares no foreign keys; enforcing them only adds checks to every write.
        configuration.foreignKeysEnabled = false
        configuration.prepareDatabase { db in functions.register(in: db, target: DeviceStore.itemsQueryTarget) }
        // The store uses none of what GRDB's authorizer tells it (no
        // observation, savepoints or GRDB schema introspection), and
        // compiles its statements faster without it: a woken store compiles
        // its statements again.
        configuration.prepareDatabase { db in db.dropStatementAuthorizer() }
        if case .file = location {
            // Pages are read straight from the OS's page cache instead of
            // copied by a pread each into SQLite's own (2 MiB by default).
            configuration.prepareDatabase { db in _ = try Int.fetchOne(db, sql: "PRAGMA mmap_size = \(DeviceStore.mapBytes)") }
        }
        if case .memory = location {
            // An in-memory store's pages are its memory, and each table and
            // index takes at least one: with forty of them, 4 KiB pages cost a
            // small store 160 KiB before it holds anything. The simulator
            // keeps thousands of such stores.
            configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA page_size = \(DeviceStore.memoryPageBytes)") }
        }
        if !options.readOnly {
            let synchronous = options.durability == .full ? "FULL" : "NORMAL"
            configuration.prepareDatabase { db in
                try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
            }
        }
        return configuration
    }

    /// An in-memory store with the schema and nothing else, which every new
    /// in-memory store copies page by page, in a fraction of the time that
    /// running the schema's statements takes, which would otherwise be most
    /// of a large simulation's setup.
    static let emptyMemoryStore = Result { () throws -> DatabaseQueue in
        var configuration = Configuration()
        configuration.label = "DeviceStore.empty"
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA page_size = \(DeviceStore.memoryPageBytes)") }
        let queue = try DatabaseQueue(configuration: configuration)
        try queue.write { db in
            try StoreSchema.createTables(db)
            // The search index's tables too, as every new store has them:
            // pooled connections serve stores of one schema only
            // (`StoreConnectionPool`), and a first search changes none.
            try db.execute(sql: SearchIndex.ddl)
        }
        return queue
    }

    /// Opens the file. A read-only open of a store whose writer was killed can
    /// fail because SQLite must rebuild the WAL index first, which needs write
    /// access; inspection then works on a private copy of the database and its
    /// WAL, so the store itself is never modified. The copy (it holds the
    /// device key) lives in a directory only the user can enter, is folded
    /// into one file, and is unlinked as soon as it is open: nothing of it is
    /// left once the inspection closes it, however the process ends.
    private static func openQueue(path: String, configuration: Configuration) throws -> DatabaseQueue {
        let hasWAL = FileManager.default.fileExists(atPath: path + "-wal")
        do {
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            if configuration.readonly && hasWAL {
                _ = try queue.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") }
            }
            return queue
        } catch let error as DatabaseError where configuration.readonly && hasWAL
            && (error.resultCode.primaryResultCode == .SQLITE_READONLY || error.resultCode.primaryResultCode == .SQLITE_CANTOPEN) {
            return try inspectionCopy(of: path, configuration: configuration)
        }
    }

    /// A private, writable copy of the store at `path` and its WAL, opened.
    static func inspectionCopy(of path: String, configuration: Configuration) throws -> DatabaseQueue {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("sightline-inspect-\(ProcessInfo.processInfo.processIdentifier)-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: directory) }
        let copy = directory.appendingPathComponent("store.sqlite").path
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(atPath: path + suffix, toPath: copy + suffix)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: copy + suffix)
        }
        var copyConfiguration = configuration
        copyConfiguration.readonly = false
        let queue = try DatabaseQueue(path: copy, configuration: copyConfiguration)
        // One file, no WAL: the open connection needs no name on disk.
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            try db.execute(sql: "PRAGMA journal_mode = DELETE")
        }
        return queue
    }

    /// Creates a new store file whole: the schema is built in a temporary file
    /// beside `path`, closed, and renamed into place, so a crash during creation
    /// leaves either no store or a complete empty one, never a file without schema.
    private static func createAtomically(path: String, configuration: Configuration, deviceID: DeviceID, app: AppID,
                                         voteSecret: [UInt8], createdAt: Timestamp) throws {
        let temporary = path + ".creating"
        StoreFiles.remove(temporary)
        guard StoreFiles.createPrivate(temporary) else {
            throw DeviceStoreError(.database, "cannot create \(temporary) (errno \(errno))")
        }
        let creator = try DatabaseQueue(path: temporary, configuration: configuration)
        try creator.write { db in
            try StoreSchema.create(db, deviceID: deviceID, app: app, voteSecret: voteSecret,
                                   createdAt: createdAt.millisecondsSince1970)
        }
        try creator.close()
        guard rename(temporary, path) == 0 else {
            throw DeviceStoreError(.database, "cannot create \(path): rename failed (errno \(errno))")
        }
    }

    /// A store's identity, from its `store_meta` table.
    struct StoreMeta: Sendable {
        let deviceID: DeviceID
        let keys: PrivacyProjection.Keys
        var chain = JournalChain.overPayloadHashes
    }

    /// Reads the store's identity. `migrating` (a writable open, inside its
    /// write transaction) brings an older format version to this build's.
    private static func checkMeta(_ db: Database, migrating: Bool = false) throws -> StoreMeta {
        guard try SchemaLookup.hasTable(db, "store_meta") else {
            throw DeviceStoreError(.notADeviceStore, "the file is not a Sightline device store (no store_meta table)")
        }
        let application = try String.fetchOne(db, sql: "SELECT value FROM store_meta WHERE key = 'application'")
        guard application == StoreSchema.application else {
            throw DeviceStoreError(.notADeviceStore, "the file is not a Sightline device store (application is \(application.map { TextRule.printable($0, limit: 64) } ?? "missing"))")
        }
        let version = try Int.fetchOne(db, sql: "SELECT value FROM store_meta WHERE key = 'format_version'") ?? 0
        let readable = StoreSchema.readableVersions
        guard readable.contains(version) else {
            throw DeviceStoreError(.notADeviceStore,
                                   "store format version \(version) is not supported (this build reads versions \(readable.lowerBound) to \(readable.upperBound))")
        }
        let migrated = migrating && version < StoreSchema.formatVersion
        if migrated {
            try StoreSchema.migrate(db, from: version)
        }
        guard let identifier = try storedName(db, "device_id").map(DeviceID.init) else {
            throw DeviceStoreError(.notADeviceStore, "the store has no device_id")
        }
        guard let app = try storedName(db, "app").map(AppID.init),
              let secret = try Data.fetchOne(db, sql: "SELECT value FROM store_meta WHERE key = 'vote_secret'"),
              secret.count == 32 else {
            throw DeviceStoreError(.notADeviceStore, "the store has no app or no 32-byte vote_secret in store_meta")
        }
        return StoreMeta(deviceID: identifier, keys: PrivacyProjection.Keys(app: app, voteSecret: [UInt8](secret)),
                         chain: migrated || version >= StoreSchema.chainOverPayloadHashesSince ? .overPayloadHashes : .overPayloads)
    }

    /// The name `store_meta` holds under `key`, read as its bytes: a name
    /// goes into every frame and reply, so one someone edited to hold a NUL
    /// is refused here rather than read back cut (`TextRule.storedName`).
    private static func storedName(_ db: Database, _ key: String) throws -> String? {
        guard let bytes = try Data.fetchOne(db, sql: "SELECT CAST(value AS BLOB) FROM store_meta WHERE key = ?", arguments: [key]) else {
            return nil
        }
        do {
            return try TextRule.storedName.string(utf8: bytes)
        } catch {
            throw DeviceStoreError(.corruptStore, "store_meta.\(key) \(error)")
        }
    }

    /// 32 bytes from the injected random source: the vote secret of a new store.
    private static func makeSecret(_ random: any RandomSource) -> [UInt8] {
        (0..<4).flatMap { _ in withUnsafeBytes(of: random.next().littleEndian) { Array($0) } }
    }

    private static func makeDeviceID(_ random: any RandomSource) -> DeviceID {
        let digits = Array("0123456789abcdef")
        var text = ""
        for _ in 0..<2 {
            var value = random.next()
            for _ in 0..<16 {
                text.append(digits[Int(value & 0xF)])
                value >>= 4
            }
        }
        return DeviceID(text)
    }

    static func describe(_ error: any Error) -> String {
        SQLiteErrorText.describe(error)
    }

    // MARK: - Transactions

    /// Runs `body` in a write transaction.
    ///
    /// An in-memory store remembers, between writes, its sync status, its
    /// earliest expiry date, its journal's head and its outbox's: no other
    /// connection can change them. A write forgets them unless `keepsMemos`:
    /// the calls' write path keeps the expiry date and the heads current
    /// itself and moves the status when it writes the outbox, a search writes
    /// none of them, and an ack moves only the status, which it reads again
    /// in its transaction (`take`) or forgets (`recordAcknowledgement`). Any
    /// write that fails forgets them, since its rollback undoes what they may
    /// have seen. A file store forgets them at every write, since another
    /// process may have written.
    func write<T>(keepsMemos: Bool = false, _ body: (Database) throws -> T) throws(DeviceStoreError) -> T {
        guard !isReadOnly else {
            throw DeviceStoreError(.readOnly, "the store was opened read-only")
        }
        do {
            return try access.with { connection in
                try connection.queue.cachedWrite(connection.writePath.connection) { db in
                    if !keepsMemos || !isInMemory { forgetMemos() }
                    return try body(db)
                }
            }
        } catch {
            // The body failed, or the commit did: either way it rolled back.
            forgetMemos()
            throw DeviceStore.writeFailure(error)
        }
    }

    private static func writeFailure(_ error: any Error) -> DeviceStoreError {
        switch error {
        case let error as DeviceStoreError: error
        case let error as OperationError: DeviceStoreError.invalid(error)
        default: DeviceStoreError(.database, "write failed, nothing was committed: \(DeviceStore.describe(error))")
        }
    }

    var isInMemory: Bool {
        if case .memory = location { return true }
        return false
    }

    func forgetStatus() {
        cachedStatus.withLock { $0 = nil }
    }

    func forgetMemos() {
        forgetStatus()
        access.memos.forget()
    }

    func read<T>(_ body: (Database) throws -> T) throws(DeviceStoreError) -> T {
        do {
            return try access.with { connection in try connection.queue.snapshotRead(connection.writePath.connection, body) }
        } catch let error as DeviceStoreError {
            throw error
        } catch {
            throw DeviceStoreError(.database, "read failed: \(DeviceStore.describe(error))")
        }
    }

    /// Lets go of the prepared statements the store's own connection keeps
    /// for its next calls (a few hundred KiB for a store the simulator
    /// drove); each is prepared again when next used. For a store that is
    /// done with its calls while many others are kept open: the simulator
    /// calls it once its end checks have read a device. A pooled store
    /// keeps none (`StoreConnectionPool`).
    public func releaseStatements() {
        access.withOwn { connection in
            connection.queue.inDatabase { db in
                connection.writePath.connection.releaseAll()
                db.releaseMemory()
            }
        }
    }

    /// Closes the store's own connection (a store file's), which nothing
    /// may use afterwards.
    func close() {
        access.withOwn { connection in try? connection.queue.close() }
    }

    /// Runs `body` with the queue of the connection that runs the store's
    /// transaction (`StoreAccess`), inside which `writePath` is its.
    func onConnection<T>(_ body: (DatabaseQueue) throws -> T) throws -> T {
        try access.with { try body($0.queue) }
    }

    // MARK: - Calls

    /// The store's current time.
    public var now: Timestamp { clock.now() }

    /// Applies one API call in its own transaction and returns what it did. An
    /// invalid call, or a batch whose expected client state does not match,
    /// commits nothing.
    @discardableResult
    public func perform(_ operation: AppOperation) throws(DeviceStoreError) -> CallOutcome {
        try performAll([operation])[0]
    }

    /// Applies several calls in one transaction: all commit or none does. Each
    /// call keeps its own call number. Used where a caller groups calls for
    /// throughput (benchmarks, bulk imports).
    public func performAll(_ operations: [AppOperation]) throws(DeviceStoreError) -> [CallOutcome] {
        for operation in operations {
            do { try operation.validate() } catch { throw DeviceStoreError.invalid(error) }
            if case .advanceClock = operation, !(clock is ManualClock) {
                throw DeviceStoreError(.clockNotSimulated, "advanceClock needs a simulated clock (the store uses the system clock)")
            }
        }
        let clock = self.clock
        // Calls keep the cached sync status: most send nothing (items never
        // do), and one that sends moves it forward (`status(_:after:head:)`); the
        // simulator asks for it before every sync.
        return try write(keepsMemos: true) { db in
            var outcomes: [CallOutcome] = []
            outcomes.reserveCapacity(operations.count)
            var appender: JournalAppender?
            for operation in operations {
                if case .advanceClock(let instant) = operation, let manual = clock as? ManualClock {
                    try manual.advance(to: instant)
                }
                let now = clock.now()
                let current: JournalAppender
                if let existing = appender, existing.time == now {
                    existing.startNextCall()
                    current = existing
                } else {
                    current = try JournalAppender(db: db, time: now, keys: privacyKeys, path: writePath)
                    appender = current
                }
                let before = current.outboxChange
                var executor = CallExecutor(appender: current)
                try executor.expire(now: now)
                try executor.run(operation)
                executor.outcome.seqs = current.appendedRange
                outcomes.append(executor.outcome)
                let after = current.outboxChange
                if after.movedEpoch {
                    forgetStatus()
                } else if after.sent > before.sent, let head = after.head {
                    cachedStatus.withLock { status in
                        status = status.flatMap { DeviceStore.status($0, after: after.sent - before.sent, head: head) }
                    }
                }
            }
            return outcomes
        }
    }

    /// Journals the expiry of everything whose expiration date has passed, as the
    /// next call would. Returns what it did.
    @discardableResult
    public func expireNow() throws(DeviceStoreError) -> CallOutcome {
        let now = clock.now()
        return try write { db in
            let appender = try JournalAppender(db: db, time: now, keys: privacyKeys, path: writePath)
            var executor = CallExecutor(appender: appender)
            try executor.expire(now: now)
            executor.outcome.seqs = appender.appendedRange
            return executor.outcome
        }
    }

    /// The named index, as `CSSearchableIndex(name:)`.
    public func index(named name: String) -> SearchableIndex {
        SearchableIndex(store: self, name: name)
    }

    /// Makes an activity current (`NSUserActivity.becomeCurrent()`).
    @discardableResult
    public func record(_ activity: UserActivity) throws(DeviceStoreError) -> CallOutcome {
        try perform(.activity(activity))
    }

    /// Records that a search result was shown; `ref` is an item identifier, an
    /// activity URL or a related identifier.
    public func recordShown(ref: String) throws(DeviceStoreError) {
        try perform(.shown(ref: ref))
    }

    /// Records that the user engaged with (tapped) a search result.
    public func recordEngaged(ref: String) throws(DeviceStoreError) {
        try perform(.engage(ref: ref))
    }
}

extension StoreLocation {
    public var displayName: String {
        switch self {
        case .memory: "in-memory store"
        case .file(let path): path
        }
    }
}
