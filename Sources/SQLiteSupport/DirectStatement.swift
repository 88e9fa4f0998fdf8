import GRDB
import GRDBSQLite

/// A statement on a hot path, bound and stepped through the SQLite C API.
///
/// GRDB prepares and owns the statement (it is one of the connection's cached
/// statements, finalized when the connection closes); values are bound directly
/// instead of through `StatementArguments`, whose type-erased values cost more
/// than the insert itself on the journal's hot path (`sightline bench append`).
/// Text and blobs are bound with `SQLITE_TRANSIENT`, so SQLite copies them.
public struct DirectStatement {
    private let statement: Statement
    private let handle: OpaquePointer
    private let connection: OpaquePointer?

    public init(_ db: Database, _ sql: String) throws {
        try self.init(db.cachedStatement(sql: sql), db)
    }

    /// A statement of its own, not shared through the connection's cache: for a
    /// query that stays open while the caller may run the same SQL again (a
    /// journal scan whose body scans the journal too).
    public init(uncached db: Database, _ sql: String) throws {
        try self.init(db.makeStatement(sql: sql), db)
    }

    private init(_ statement: Statement, _ db: Database) {
        self.statement = statement
        handle = statement.sqliteStatement
        connection = db.sqliteConnection
    }

    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

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

    public var lastInsertedRowID: Int64 {
        sqlite3_last_insert_rowid(connection)
    }

    public func reset() {
        sqlite3_reset(handle)
    }

    /// Whether the statement is between a step that returned a row and its reset.
    public var isBusy: Bool {
        sqlite3_stmt_busy(handle) != 0
    }

    public func int64(_ column: Int32) -> Int64 {
        sqlite3_column_int64(handle, column)
    }

    public func isNull(_ column: Int32) -> Bool {
        sqlite3_column_type(handle, column) == SQLITE_NULL
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
        return DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: statement.sql)
    }
}
