import GRDB

/// Copies of a database taken inside a snapshot read (`snapshotRead`).
extension DatabaseQueue {
    /// A new database at `path` for a snapshot's copy of a store: scratch,
    /// removed once the snapshot file is written from it (which is synced
    /// then), and made again from the start if anything fails. So it keeps
    /// no rollback journal and is never synced: with SQLite's defaults, the
    /// journal's syncs and an fdatasync of the whole copy took a third of
    /// the copy's time on a 170 MiB store.
    public static func snapshotCopy(at path: String) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF")
        }
        return try DatabaseQueue(path: path, configuration: configuration)
    }

    /// Copies this database into `destination` with SQLite's backup API,
    /// from a snapshot read. GRDB's `backup(to:)` reads through its `read`,
    /// whose `PRAGMA query_only` made the store compile every statement again
    /// after each backup.
    public func backupFromSnapshot(to destination: DatabaseQueue) throws {
        try backupFromSnapshot(to: destination) { _ in }
    }

    /// Copies this database into `destination` as `backupFromSnapshot(to:)`
    /// does, and runs `body` on this database in the same snapshot, so what it
    /// reads describes the copy exactly. Reading here rather than from the
    /// copy spares a new connection parsing the schema and compiling its
    /// statements.
    public func backupFromSnapshot<T>(to destination: DatabaseQueue, reading body: (Database) throws -> T) throws -> T {
        try destination.writeWithoutTransaction { destinationDB in
            try snapshotRead { db in
                try db.backup(to: destinationDB)
                return try body(db)
            }
        }
    }
}
