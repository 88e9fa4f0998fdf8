import GRDB

/// Copies of a database taken inside a snapshot read (`snapshotRead`).
extension DatabaseQueue {
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
