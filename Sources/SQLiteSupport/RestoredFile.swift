import GRDB

/// The SQLite steps a restore takes on the file it has just extracted.
public enum RestoredFile {
    /// What `PRAGMA integrity_check` reports, or nil when the file is sound.
    private static func integrityProblems(at path: String) throws -> String? {
        // A restore runs this beside connections that read the same file, and
        // a reader can meet a lock a moment old (one rebuilding the WAL index).
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        let report = try queue.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
        return report == ["ok"] ? nil : report.prefix(3).joined(separator: "; ")
    }

    /// Why the restored file at `path` is not a sound database, in words
    /// (device and cloud restores say it the same way), or nil when it is.
    public static func integrityFailure(at path: String) -> String? {
        do {
            guard let problems = try integrityProblems(at: path) else { return nil }
            return "the snapshot's database fails SQLite's integrity check: \(problems)"
        } catch {
            return "the snapshot's content is not a readable SQLite database: \(SQLiteErrorText.describe(error))"
        }
    }

    /// Folds the WAL into the file and leaves WAL mode, then closes `queue`, so
    /// the file can be renamed alone.
    public static func closeSelfContained(_ queue: DatabaseQueue) throws {
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = DELETE")
        }
        try queue.close()
    }
}
