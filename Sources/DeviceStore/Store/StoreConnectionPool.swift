import GRDB
import IndexQuery
import SQLiteSupport
import Synchronization

/// Connections that in-memory stores borrow (`StoreOptions.connections`),
/// for a process that keeps many stores and wakes them often, as the
/// simulator does. Each connection's database is a page buffer
/// (`PageBuffers`): a store opened or woken takes an idle connection and
/// puts its pages in the buffer, and gives the connection back when it is
/// dropped. The connection keeps its parsed schema, its statements (the
/// write path's and GRDB's cache) and its SQL functions from one store to
/// the next, so a wake is a copy of pages instead of a new connection, a
/// backup into it, its schema parsed and its statements compiled again.
///
/// That is right only for stores of one schema. SQLite keeps a parsed
/// schema for as long as the file's schema cookie (its count of schema
/// changes) is the one it parsed; two stores that each ran their own
/// schema statements can reach the same count with other tables at other
/// pages. So the pool serves only stores whose cookie is a new store's
/// (`newStoreCookie`), and every connection it holds has parsed a new
/// store's schema: a new in-memory store's pages are all the same
/// (`DeviceStore.newStorePages`, the search index's tables included), and a
/// store that never changed its schema still has that cookie, since every
/// schema statement counts one more. A store with another cookie opens a
/// connection of its own, as without a pool; a connection whose store
/// changed its schema is closed when the store is dropped, not kept.
///
/// What a store remembers of its own between writes (`WritePath`'s memos,
/// the sync status) is forgotten when it takes a connection, as a new
/// connection's would be.
public final class StoreConnectionPool: Sendable {
    /// How many idle connections are kept for the next store; one given
    /// back beyond them is closed.
    public let mostIdle: Int
    /// Each connection's page cache, in pages: the buffer holds every page,
    /// so the cache only spares copying again the pages a transaction reads.
    let cachePages: Int
    private let idle = Mutex<[Connection]>([])
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

    /// A connection whose buffer holds `pages`, for a store until it is
    /// dropped; nil for pages of another schema than a new store's.
    func lease(pages: [UInt8]) throws -> Lease? {
        guard let cookie = newStoreCookie, PageBuffers.schemaCookie(of: pages) == cookie else { return nil }
        let connection = try idle.withLock { $0.popLast() } ?? open()
        try connection.queue.inDatabase { db in try PageBuffers.refill(db, with: pages) }
        connection.writePath.forgetMemos()
        return Lease(connection: connection, pool: self)
    }

    /// A new connection on a buffer that has parsed a new store's schema.
    /// Opening it parsed an empty file's (GRDB reads the schema table at
    /// once), and SQLite compares cookies only when a statement runs, not
    /// when it is asked whether a table exists: so a statement runs on a
    /// new store's pages first.
    private func open() throws -> Connection {
        let functions = QueryFunctions()
        var configuration = DeviceStore.configuration(for: .memory, options: StoreOptions(durability: .normal), functions: functions)
        let cachePages = cachePages
        configuration.prepareDatabase { db in try PageBuffers.prepare(db, cachePages: cachePages) }
        let queue = try DatabaseQueue(path: PageBuffers.path(), configuration: configuration)
        let handle = try queue.inDatabase { db in
            try PageBuffers.refill(db, with: DeviceStore.newStorePages)
            _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_schema")
            return db.sqliteConnection
        }
        made.add(1, ordering: .relaxed)
        return Connection(queue: queue, handle: handle, writePath: WritePath(owned: true), functions: functions)
    }

    /// Keeps `connection` for the next store if its store left the schema
    /// as a new store's, and there is room.
    fileprivate func giveBack(_ connection: Connection) {
        guard let cookie = newStoreCookie, let handle = connection.handle, PageBuffers.schemaCookie(handle) == cookie else { return }
        idle.withLock { connections in
            if connections.count < mostIdle { connections.append(connection) }
        }
    }

    /// A connection on a page buffer, its write path's statements and its SQL functions.
    final class Connection: @unchecked Sendable {
        let queue: DatabaseQueue
        /// The connection's SQLite handle, read outside the queue only by
        /// `giveBack`, when no store holds the connection.
        let handle: OpaquePointer?
        let writePath: WritePath
        let functions: QueryFunctions

        init(queue: DatabaseQueue, handle: OpaquePointer?, writePath: WritePath, functions: QueryFunctions) {
            self.queue = queue
            self.handle = handle
            self.writePath = writePath
            self.functions = functions
        }
    }

    /// A store's hold on a connection, which goes back to the pool when
    /// the store that holds it is dropped.
    final class Lease: Sendable {
        let connection: Connection
        private let pool: StoreConnectionPool

        fileprivate init(connection: Connection, pool: StoreConnectionPool) {
            self.connection = connection
            self.pool = pool
        }

        deinit { pool.giveBack(connection) }
    }
}
