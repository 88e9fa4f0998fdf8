import GRDB

/// How the stores say what went wrong in SQLite: the result code and
/// SQLite's own message, not GRDB's whole description with the statement.
public enum SQLiteErrorText {
    /// The primary result code and SQLite's message for a GRDB `DatabaseError`,
    /// and the error's own description for any other error.
    public static func describe(_ error: any Error) -> String {
        if let error = error as? DatabaseError {
            return "SQLite error \(error.resultCode.primaryResultCode.rawValue): \(error.message ?? "unknown")"
        }
        return String(describing: error)
    }
}
