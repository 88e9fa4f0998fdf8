import GRDB
import GRDBSQLite

/// Copies of a database taken inside a snapshot read (`snapshotRead`).
extension DatabaseQueue {
    /// A new database at `path` for a snapshot's copy of a store: scratch,
    /// removed once the snapshot file is written from it (which is synced
    /// then), and made again from the start if anything fails. So it keeps
    /// no rollback journal and is never synced: with SQLite's defaults, the
    /// journal's syncs and an fdatasync of the whole copy would be a large
    /// share of the copy's time.
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

    /// The main database's bytes, as its file would hold them, and what
    /// `body` reads, in one snapshot read (`snapshotRead`). For an in-memory
    /// database this is what `backupFromSnapshot(to:reading:)` would copy
    /// into a new file, without the file: no connection to open and set up,
    /// no pages written and read back, nothing to remove. The bytes are a
    /// copy, held in memory whole. `statements` are this queue's, if it
    /// keeps them.
    public func serializedFromSnapshot<T>(_ statements: ConnectionStatements? = nil,
                                          reading body: (Database) throws -> T) throws -> (image: [UInt8], read: T) {
        try snapshotRead(statements) { db in
            var size: sqlite3_int64 = 0
            guard let pointer = sqlite3_serialize(db.sqliteConnection, "main", &size, 0) else {
                throw DatabaseError(resultCode: .SQLITE_NOMEM, message: "sqlite3_serialize made no copy of the database")
            }
            defer { sqlite3_free(pointer) }
            guard let count = Int(exactly: size), count >= 0 else {
                throw DatabaseError(resultCode: .SQLITE_ERROR, message: "sqlite3_serialize gave a size of \(size) bytes")
            }
            let image = [UInt8](UnsafeBufferPointer(start: pointer, count: count))
            return (image, try body(db))
        }
    }
}
