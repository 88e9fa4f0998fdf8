import GRDB
import GRDBSQLite

/// A statement on a hot path, bound and stepped through the SQLite C API.
///
/// Either GRDB prepares and owns the statement (one of the connection's
/// cached statements, finalized when the connection closes), or it is
/// prepared outside GRDB (`init(owned:_:)`) and finalized when the last copy
/// of this value goes. Values are bound directly instead of through
/// `StatementArguments`, whose type-erased values cost more than the insert
/// itself on the journal's hot path (`sightline bench append`). Text and
/// blobs are bound with `SQLITE_TRANSIENT`, so SQLite copies them.
public struct DirectStatement {
    /// What keeps the statement alive: GRDB's `Statement` or an `OwnedStatement`.
    private let owner: AnyObject
    private let handle: OpaquePointer
    private let connection: OpaquePointer?

    /// The connection's cached statement for `sql`, which GRDB prepares the
    /// first time and finalizes when the connection closes.
    public init(_ db: Database, _ sql: String) throws {
        try self.init(db.cachedStatement(sql: sql), db)
    }

    /// A statement of its own, not shared through the connection's cache: for a
    /// query that stays open while the caller may run the same SQL again (a
    /// journal scan whose body scans the journal too).
    public init(uncached db: Database, _ sql: String) throws {
        try self.init(db.makeStatement(sql: sql), db)
    }

    /// A statement prepared outside GRDB and kept by whoever keeps this value
    /// (`ConnectionStatements(groups:owned:)`): finalized when the last copy goes.
    ///
    /// GRDB keeps, beside each statement it prepares, what the statement reads
    /// (tables and columns, for observation) and its SQL as a cache key, a
    /// large share of a 10,000-device simulation's peak memory. A connection with such
    /// statements can only be closed by being released (GRDB then closes it
    /// with `sqlite3_close_v2`, which waits for them); an explicit `close()`
    /// would fail while one is alive.
    public init(owned db: Database, _ sql: String) throws {
        let owned = try OwnedStatement(db, sql)
        owner = owned
        handle = owned.handle
        connection = db.sqliteConnection
    }

    private init(_ statement: Statement, _ db: Database) {
        owner = statement
        handle = statement.sqliteStatement
        connection = db.sqliteConnection
    }

    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    /// Binds `value` to the parameter at `index` (from 1), as SQLite numbers them.
    public func bind(_ index: Int32, _ value: Int64) {
        sqlite3_bind_int64(handle, index, value)
    }

    public func bind(_ index: Int32, _ value: Int64?) {
        if let value { sqlite3_bind_int64(handle, index, value) } else { sqlite3_bind_null(handle, index) }
    }

    public func bind(_ index: Int32, _ value: Bool) {
        sqlite3_bind_int64(handle, index, value ? 1 : 0)
    }

    public func bind(_ index: Int32, _ value: Double?) {
        if let value { sqlite3_bind_double(handle, index, value) } else { sqlite3_bind_null(handle, index) }
    }

    public func bind(_ index: Int32, _ value: String?) {
        guard var value else {
            sqlite3_bind_null(handle, index)
            return
        }
        value.withUTF8 { utf8 in
            _ = sqlite3_bind_text(handle, index, utf8.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) },
                                  Int32(utf8.count), DirectStatement.transient)
        }
    }

    public func bind(_ index: Int32, _ value: some Collection<UInt8>) {
        let done = value.withContiguousStorageIfAvailable { buffer in
            // A zero-length blob is a blob, not NULL: sqlite3_bind_blob binds
            // NULL for a nil pointer, so give it a valid one.
            sqlite3_bind_blob(handle, index, buffer.baseAddress ?? UnsafePointer(bitPattern: 1), Int32(buffer.count),
                              DirectStatement.transient)
        }
        if done == nil { bind(index, Array(value)) }
    }

    /// Runs a statement that returns no rows and resets it.
    public func execute() throws {
        let code = sqlite3_step(handle)
        guard code == SQLITE_DONE else { throw failure(code) }
        sqlite3_reset(handle)
    }

    /// Steps once: true when a row is available for the column accessors. Call
    /// `reset()` when done with the rows.
    public func step() throws -> Bool {
        let code = sqlite3_step(handle)
        if code == SQLITE_ROW { return true }
        guard code == SQLITE_DONE else { throw failure(code) }
        return false
    }

    /// Rows changed by this statement's last run (0 for an insert that did nothing).
    public var changes: Int {
        Int(sqlite3_changes(connection))
    }

    /// The rowid of the connection's last successful insert.
    public var lastInsertedRowID: Int64 {
        sqlite3_last_insert_rowid(connection)
    }

    /// Resets the statement so that it can run again; bindings are kept.
    public func reset() {
        sqlite3_reset(handle)
    }

    /// Whether the statement is between a step that returned a row and its reset.
    public var isBusy: Bool {
        sqlite3_stmt_busy(handle) != 0
    }

    /// The value of `column` (from 0) in the current row, converted to an
    /// integer as `sqlite3_column_int64` converts it (NULL is 0).
    public func int64(_ column: Int32) -> Int64 {
        sqlite3_column_int64(handle, column)
    }

    public func isNull(_ column: Int32) -> Bool {
        sqlite3_column_type(handle, column) == SQLITE_NULL
    }

    public func isText(_ column: Int32) -> Bool {
        sqlite3_column_type(handle, column) == SQLITE_TEXT
    }

    public func isInteger(_ column: Int32) -> Bool {
        sqlite3_column_type(handle, column) == SQLITE_INTEGER
    }

    public func optionalInt64(_ column: Int32) -> Int64? {
        sqlite3_column_type(handle, column) == SQLITE_NULL ? nil : sqlite3_column_int64(handle, column)
    }

    public func double(_ column: Int32) -> Double {
        sqlite3_column_double(handle, column)
    }

    public func optionalDouble(_ column: Int32) -> Double? {
        sqlite3_column_type(handle, column) == SQLITE_NULL ? nil : sqlite3_column_double(handle, column)
    }

    public func text(_ column: Int32) -> String? {
        guard let pointer = sqlite3_column_text(handle, column) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    /// Calls `body` with the column's bytes where SQLite holds them, valid only
    /// until the next step or reset.
    public func withBlob<T>(_ column: Int32, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let pointer = sqlite3_column_blob(handle, column) else {
            return try body(UnsafeRawBufferPointer(start: nil, count: 0))
        }
        return try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    public func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let pointer = sqlite3_column_blob(handle, column) else { return [] }
        return [UInt8](UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// The error for a failed step, as GRDB reports errors; the statement is
    /// reset so the connection stays usable for the rollback.
    private func failure(_ code: Int32) -> DatabaseError {
        let message = connection.map { String(cString: sqlite3_errmsg($0)) }
        sqlite3_reset(handle)
        return DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: String(cString: sqlite3_sql(handle)))
    }
}

/// A prepared statement outside GRDB's cache, finalized with its last reference.
///
/// GRDB's statement authorizer still sees it compile (it is the connection's),
/// and forgets what it saw when GRDB next prepares a statement of its own.
private final class OwnedStatement {
    let handle: OpaquePointer

    init(_ db: Database, _ sql: String) throws {
        var prepared: OpaquePointer?
        let code = sqlite3_prepare_v3(db.sqliteConnection, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, nil)
        guard code == SQLITE_OK, let prepared else {
            sqlite3_finalize(prepared)
            let message = db.sqliteConnection.map { String(cString: sqlite3_errmsg($0)) }
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: sql)
        }
        handle = prepared
    }

    deinit {
        sqlite3_finalize(handle)
    }
}
