import GRDB
import GRDBSQLite

/// Whether a table or a column exists in a connection's main database,
/// asked of the schema SQLite already parsed (`sqlite3_table_column_metadata`).
///
/// GRDB's `tableExists` loads and keeps a copy of the whole schema per
/// connection (about 10 KiB), and a statement kept for the question costs
/// about 1.7 KiB more; a simulation keeps thousands of in-memory stores, each
/// asking these on its hot paths.
public enum SchemaLookup {
    /// Whether the main database has a table (not a view) named `table`.
    public static func hasTable(_ db: Database, _ table: String) throws -> Bool {
        try lookup(db, table, nil)
    }

    /// Whether `table` of the main database has a column named `column`.
    public static func hasColumn(_ db: Database, table: String, column: String) throws -> Bool {
        try lookup(db, table, column)
    }

    private static func lookup(_ db: Database, _ table: String, _ column: String?) throws -> Bool {
        let code = sqlite3_table_column_metadata(db.sqliteConnection, "main", table, column, nil, nil, nil, nil, nil)
        switch code {
        case SQLITE_OK: return true
        // What SQLite answers for a table or column that is not there.
        case SQLITE_ERROR: return false
        default:
            let message = db.sqliteConnection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message)
        }
    }
}
