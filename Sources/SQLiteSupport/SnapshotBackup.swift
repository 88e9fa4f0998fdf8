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
            // A buffer is the file's bytes already (and SQLite serializes
            // only in-memory databases without the dbpage table, which
            // Debian's build leaves out).
            if let bytes = PageBuffers.bytes(db) { return (bytes, try body(db)) }
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

extension DatabaseQueue {
    /// Copies `image`, the bytes a database file would hold (as
    /// `serializedFromSnapshot` gives them), into this connection's main
    /// database, which must be a new in-memory one: afterwards its pages
    /// are the image's, byte for byte. SQLite reads an image only through a
    /// database of its own kind (`sqlite3_deserialize`), which counts each
    /// commit in its header where an in-memory database does not; so the
    /// image is opened that way on the side and copied in with the backup
    /// API, and the schema cookie stays the image's. Throws when SQLite
    /// refuses the bytes or they are shorter than a database header.
    public func load(image: [UInt8]) throws {
        guard let cookie = PageBuffers.schemaCookie(of: image) else {
            throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: "a database image of \(image.count) bytes has no header")
        }
        // The image is opened on a bare connection: nothing but the backup
        // reads it, and the backup copies pages without parsing the schema.
        var opened: OpaquePointer?
        let openStatus = sqlite3_open_v2(":memory:", &opened, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil)
        defer { sqlite3_close_v2(opened) }
        guard openStatus == SQLITE_OK, let source = opened else {
            throw DatabaseError(resultCode: ResultCode(rawValue: openStatus), message: "cannot open a connection for a database image")
        }
        guard let buffer = sqlite3_malloc64(sqlite3_uint64(image.count))?.assumingMemoryBound(to: UInt8.self) else {
            throw DatabaseError(resultCode: .SQLITE_NOMEM, message: "no memory for a database image of \(image.count) bytes")
        }
        image.withUnsafeBufferPointer { bytes in
            if let base = bytes.baseAddress { buffer.update(from: base, count: bytes.count) }
        }
        // SQLite owns the buffer from here, and frees it even when it refuses it.
        let size = sqlite3_int64(image.count)
        let flags = UInt32(SQLITE_DESERIALIZE_FREEONCLOSE) | UInt32(SQLITE_DESERIALIZE_READONLY)
        let status = sqlite3_deserialize(source, "main", buffer, size, size, flags)
        guard status == SQLITE_OK else {
            throw DatabaseError(resultCode: ResultCode(rawValue: status), message: "SQLite refused a database image of \(image.count) bytes")
        }
        try writeWithoutTransaction { db in
            // The backup leaves the copy's cookie one past the one this
            // database had, so that one is set first: the copy's schema is
            // then parsed once, by the first statement that needs it, where
            // putting the cookie back afterwards would parse it twice.
            if cookie > 0 { try db.execute(sql: "PRAGMA schema_version = \(cookie - 1)") }
            guard let backup = sqlite3_backup_init(db.sqliteConnection, "main", source, "main") else {
                let message = sqlite3_errmsg(db.sqliteConnection).map { String(cString: $0) } ?? "no message"
                throw DatabaseError(resultCode: .SQLITE_ERROR, message: "cannot copy a database image: \(message)")
            }
            let stepped = sqlite3_backup_step(backup, -1)
            let finished = sqlite3_backup_finish(backup)
            guard stepped == SQLITE_DONE, finished == SQLITE_OK else {
                let code = stepped == SQLITE_DONE ? finished : stepped
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: "copying a database image of \(image.count) bytes failed")
            }
            if cookie == 0 { try db.execute(sql: "PRAGMA schema_version = 0") }
        }
    }
}

extension DatabaseQueue {
    /// The bytes of a database file's header.
    static let headerBytes = 100
}
