import GRDB

/// Transactions whose BEGIN and COMMIT are prepared once per connection.
///
/// GRDB's `read` and `write` compile `BEGIN` and `COMMIT` on every call, and
/// its `read` also brackets the body with `PRAGMA query_only = 1` and `= 0`;
/// SQLite expires every prepared statement of the connection after such a
/// pragma, so each cached statement was compiled again after every read. In
/// the simulator, where thousands of small stores each take a few hundred
/// calls, a third of the time went into SQLite's parser.
extension DatabaseQueue {
    /// Runs `body` in a deferred transaction, so every statement in it sees the
    /// same snapshot of the database, and commits nothing. Reads here are
    /// internal and written as reads; a debug build checks that none of them
    /// changed a row.
    public func snapshotRead<T>(_ body: (Database) throws -> T) throws -> T {
        try writeWithoutTransaction { db in
            let changesBefore = db.totalChangesCount
            defer { assert(db.totalChangesCount == changesBefore, "a snapshot read changed the database") }
            return try db.inCachedTransaction("BEGIN DEFERRED TRANSACTION", body)
        }
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

    /// Runs `body` in an immediate transaction and commits it, or rolls it
    /// back when `body` throws.
    public func cachedWrite<T>(_ body: (Database) throws -> T) throws -> T {
        try writeWithoutTransaction { db in
            try db.inCachedTransaction("BEGIN IMMEDIATE TRANSACTION", body)
        }
    }
}

extension Database {
    fileprivate func inCachedTransaction<T>(_ begin: String, _ body: (Database) throws -> T) throws -> T {
        if isInsideTransaction { return try body(self) }
        try cachedStatement(sql: begin).execute()
        do {
            let result = try body(self)
            try cachedStatement(sql: "COMMIT TRANSACTION").execute()
            return result
        } catch {
            try? rollback()
            throw error
        }
    }
}
