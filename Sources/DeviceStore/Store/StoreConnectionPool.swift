import Foundation
import GRDB
import IndexQuery
import SQLiteSupport
import Synchronization

/// Connections that in-memory stores borrow one transaction at a time
/// (`StoreOptions.connections`), for a process that keeps many stores and
/// wakes them often, as the simulator does. A pooled store keeps its
/// database as pages of its own (`PageBuffer`) and no connection: each of
/// its reads and writes takes an idle connection, attaches the store's
/// pages for the length of it, and gives the connection back. The
/// connection keeps its parsed schema, its statements (the write path's
/// and GRDB's cache) and its SQL functions from one store to the next, so
/// an awake store costs its pages, and a wake is an inflate into pages.
///
/// That is right only for stores of one schema. SQLite keeps a parsed
/// schema for as long as the file's schema cookie (its count of schema
/// changes) is the one it parsed; two stores that each ran their own
/// schema statements can reach the same count with other tables at other
/// pages. So the pool serves only pages whose cookie is a new store's
/// (`newStoreCookie`), and every connection it holds has parsed a new
/// store's schema: a new in-memory store's pages are all the same
/// (`DeviceStore.newStorePages`, the search index's tables included), and a
/// store that never changed its schema still has that cookie, since every
/// schema statement counts one more. Pages with another cookie get a
/// connection of their own (`dedicated(to:)`), as does a store that
/// changes its schema: its connection stays with it instead of going back.
///
/// What a store remembers of its own between writes (`WriteMemos`, the
/// sync status) stays with the store: no other connection writes its pages.
public final class StoreConnectionPool: Sendable {
    /// How many idle connections are kept for the next transaction; one
    /// given back beyond them is closed.
    public let mostIdle: Int
    /// Each connection's page cache, in pages: a store's pages hold every
    /// page, so the cache only spares copying again the pages a
    /// transaction reads.
    let cachePages: Int
    private let idle = Mutex<[StoreConnection]>([])
    private let made = Atomic<Int>(0)
    /// The schema cookie of a new in-memory store, whose schema every
    /// connection of the pool has parsed; nil if there is no new store's
    /// image or its cookie is 0, an empty file's (the pool then serves
    /// no store).
    let newStoreCookie = PageBuffers.schemaCookie(of: DeviceStore.newStorePages).flatMap { $0 == 0 ? nil : $0 }

    public init(mostIdle: Int = 32, cachePages: Int = 16) {
        self.mostIdle = mostIdle
        self.cachePages = cachePages
    }

    /// The connections opened so far.
    public var connectionsMade: Int { made.load(ordering: .relaxed) }

    /// The idle connections now.
    public var idleConnections: Int { idle.withLock { $0.count } }

    /// What the idle connections hold in memory now, together: their
    /// statements, their page caches and the schema each parsed.
    public func idleMemory() -> ConnectionMemory {
        var memory = ConnectionMemory()
        for connection in idle.withLock({ $0 }) {
            memory.add(connection.queue.inDatabase { db in ConnectionMemory(db) })
        }
        return memory
    }

    /// Whether the pool's connections may run transactions on `pages`:
    /// those of a new store's schema.
    func serves(_ pages: PageBuffer) -> Bool {
        newStoreCookie != nil && pages.schemaCookie == newStoreCookie
    }

    /// An idle connection, or a new one, with no store's pages attached:
    /// `preferred` if it is idle (the connection a store ran its last
    /// transaction on, which may still cache its pages).
    func take(preferring preferred: ObjectIdentifier? = nil) throws -> StoreConnection {
        let connection = idle.withLock { connections -> StoreConnection? in
            if let preferred, let index = connections.lastIndex(where: { ObjectIdentifier($0) == preferred }) {
                return connections.remove(at: index)
            }
            return connections.popLast()
        }
        return try connection ?? open()
    }

    /// A new connection for `pages` alone, which are not of a new store's
    /// schema: attached to them for as long as it lives.
    func dedicated(to pages: PageBuffer) throws -> StoreConnection {
        let connection = try open()
        try connection.pin(pages)
        return connection
    }

    /// Keeps `connection`, whose store's pages are detached and of a new
    /// store's schema, for the next transaction if there is room.
    func giveBack(_ connection: StoreConnection) {
        idle.withLock { connections in
            if connections.count < mostIdle { connections.append(connection) }
        }
    }

    /// A new connection on a page buffer that has parsed a new store's
    /// schema. Opening it parsed an empty file's (GRDB reads the schema
    /// table at once), and SQLite compares cookies only when a statement
    /// runs, not when it is asked whether a table exists: so a statement
    /// runs on a new store's pages first.
    private func open() throws -> StoreConnection {
        let functions = QueryFunctions()
        var configuration = DeviceStore.configuration(for: .memory, options: StoreOptions(durability: .normal), functions: functions)
        let cachePages = cachePages
        configuration.prepareDatabase { db in try PageBuffers.prepare(db, cachePages: cachePages) }
        let queue = try DatabaseQueue(path: PageBuffers.path(), configuration: configuration)
        let newStore = try PageBuffer(DeviceStore.newStorePages)
        let handle = try queue.inDatabase { db in
            guard let handle = db.sqliteConnection else { return nil as OpaquePointer? }
            try PageBuffers.attach(handle, newStore)
            defer { try? PageBuffers.attach(handle, nil) }
            _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_schema")
            return handle
        }
        guard let handle else {
            throw DatabaseError(resultCode: .SQLITE_MISUSE, message: "a pooled connection has no SQLite handle")
        }
        made.add(1, ordering: .relaxed)
        return StoreConnection(queue: queue, writePath: WritePath(owned: true, pooled: true), functions: functions, handle: handle)
    }
}

/// A store's connection and what it keeps across transactions: its write
/// path's statements and its SQL functions. A pooled one (`handle` set) is
/// on a page buffer, and runs each store's transactions on that store's
/// pages (`StoreAccess`).
final class StoreConnection: @unchecked Sendable {
    let queue: DatabaseQueue
    let writePath: WritePath
    let functions: QueryFunctions
    /// The SQLite handle of a connection on a page buffer, for attaching
    /// pages without entering its queue, by the one holding it.
    let handle: OpaquePointer?
    /// The pages attached for good, kept alive as long as the connection.
    private var pinned: PageBuffer?

    init(queue: DatabaseQueue, writePath: WritePath, functions: QueryFunctions, handle: OpaquePointer? = nil) {
        self.queue = queue
        self.writePath = writePath
        self.functions = functions
        self.handle = handle
    }

    /// Attaches `pages`, for one transaction or (`pin`) for good.
    func attach(_ pages: PageBuffer?) throws {
        guard let handle else {
            throw DatabaseError(resultCode: .SQLITE_MISUSE, message: "pages attached to a connection not on a page buffer")
        }
        try PageBuffers.attach(handle, pages)
    }

    func pin(_ pages: PageBuffer) throws {
        try attach(pages)
        pinned = pages
    }

    deinit {
        // The connection's file must not point at pages that go before it.
        if pinned != nil, let handle { try? PageBuffers.attach(handle, nil) }
    }
}

/// How a store reaches its database: through a connection of its own, or
/// (a pooled in-memory store) through its pages and a pool's connection
/// for each transaction. Its lock keeps the store's transactions one at a
/// time, as a connection's queue would: two connections on the same pages
/// would each miss the other's pages in flight.
final class StoreAccess: @unchecked Sendable {
    private let lock = NSLock()
    /// The store's own connection: a file's, a read-only or unpooled
    /// store's, or one opened for pages of another schema.
    private var own: StoreConnection?
    private let pool: StoreConnectionPool?
    /// A pooled store's database, as a file would hold it.
    let pages: PageBuffer?
    /// The store's memos, which its write path takes for each transaction.
    let memos: WriteMemos
    /// The connection running the store's transaction now.
    private var held: StoreConnection?
    /// The pooled connection that ran the store's last transaction.
    private var last: ObjectIdentifier?

    init(own connection: StoreConnection) {
        own = connection
        pool = nil
        pages = nil
        memos = connection.writePath.memos
    }

    /// Access through `pool` to `pages`, or through a connection of their
    /// own if the pool does not serve them.
    init(pool: StoreConnectionPool, pages: PageBuffer) throws {
        self.pool = pool
        self.pages = pages
        let memos = WriteMemos()
        self.memos = memos
        if !pool.serves(pages) {
            let connection = try pool.dedicated(to: pages)
            connection.writePath.memos = memos
            own = connection
        }
    }

    /// Runs `body` with the store's connection; one of the pool's is given
    /// the store's pages and memos for the length of it.
    func with<T>(_ body: (StoreConnection) throws -> T) throws -> T {
        try locked {
            if let own {
                held = own
                defer { held = nil }
                return try body(own)
            }
            guard let pool, let pages else {
                throw DatabaseError(resultCode: .SQLITE_MISUSE, message: "a store has neither a connection nor pages")
            }
            let connection = try pool.take(preferring: last)
            last = ObjectIdentifier(connection)
            try connection.attach(pages)
            connection.writePath.memos = memos
            held = connection
            defer {
                held = nil
                if pool.serves(pages), (try? connection.attach(nil)) != nil {
                    pool.giveBack(connection)
                } else {
                    // The store changed its schema (or its pages could not be
                    // detached): the connection parsed it and stays with the
                    // store, on its pages.
                    try? connection.pin(pages)
                    own = connection
                }
            }
            return try body(connection)
        }
    }

    /// Whether the store takes a pool's connection for each transaction
    /// (not to be asked inside one).
    var isPooled: Bool { locked { own == nil } }

    /// A copy of the store's pages between its transactions, if it keeps
    /// its database as pages.
    func copyOfPages() -> [UInt8]? { locked { pages?.withBytes { Array($0) } } }

    /// The size of the store's pages, if it keeps its database as pages
    /// (pooled, or on a connection pinned to them).
    func pageBytes() -> Int? { locked { pages?.count } }

    /// The change count of the store's pages (`PageBuffer.changes`), if it
    /// keeps its database as pages.
    func pageChanges() -> UInt64? { locked { pages?.changes } }

    /// What the store's connection holds in memory: a pooled store's, its
    /// pages only.
    func memory() -> ConnectionMemory {
        locked {
            if let own { return own.queue.inDatabase { db in ConnectionMemory(db) } }
            return ConnectionMemory(pages: pages?.count ?? 0)
        }
    }

    /// Runs `body` with the store's own connection, if it has one.
    func withOwn(_ body: (StoreConnection) -> Void) {
        locked { if let own { body(own) } }
    }

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// The connection running the store's transaction now: only inside `with`.
    var current: StoreConnection {
        guard let held else { preconditionFailure("a store's connection is used outside its transactions") }
        return held
    }
}
