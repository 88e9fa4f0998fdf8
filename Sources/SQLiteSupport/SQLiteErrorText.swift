import GRDB

/// How the stores say what went wrong in SQLite: the result code and
/// SQLite's own message, not GRDB's whole description with the statement.
public enum SQLiteErrorText {
    public static func describe(_ error: any Error) -> String {
        if let error = error as? DatabaseError {
            return "SQLite error \(error.resultCode.primaryResultCode.rawValue): \(error.message ?? "unknown")"
        }
        return String(describing: error)
    }
}
