import GRDB
import GRDBSQLite

/// What one SQLite connection holds in memory, as SQLite counts it
/// (`sqlite3_db_status`): its prepared statements, its page cache (for an
/// in-memory database, the database itself; for a page buffer, the buffer's
/// bytes besides, `PageBuffers`) and its parsed schema.
public struct ConnectionMemory: Sendable, Equatable {
    public var statements = 0
    public var pages = 0
    public var schema = 0

    public init(statements: Int = 0, pages: Int = 0, schema: Int = 0) {
        self.statements = statements
        self.pages = pages
        self.schema = schema
    }

    /// What `db`'s connection holds now. SQLite walks every prepared
    /// statement to count them: a few microseconds a statement.
    public init(_ db: Database) {
        func status(_ operation: Int32) -> Int {
            var current: Int32 = 0, highest: Int32 = 0
            guard sqlite3_db_status(db.sqliteConnection, operation, &current, &highest, 0) == SQLITE_OK else { return 0 }
            return Int(current)
        }
        self.init(statements: status(SQLITE_DBSTATUS_STMT_USED),
                  pages: status(SQLITE_DBSTATUS_CACHE_USED) + PageBuffers.byteCount(db),
                  schema: status(SQLITE_DBSTATUS_SCHEMA_USED))
    }

    public var total: Int { statements + pages + schema }

    /// Adds what another connection holds.
    public mutating func add(_ other: ConnectionMemory) {
        statements += other.statements
        pages += other.pages
        schema += other.schema
    }
}
