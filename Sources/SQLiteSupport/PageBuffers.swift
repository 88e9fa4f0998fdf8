import CPageBuffers
import GRDB
import GRDBSQLite

/// Databases whose file is a buffer in this process's memory (the
/// `CPageBuffers` VFS), which a connection can be pointed at anew between
/// transactions: `refill` puts other pages in its file and drops its page
/// cache, and the connection goes on with its parsed schema and its
/// compiled statements as long as the new pages have the same schema
/// cookie. An in-memory database (`:memory:`) holds its pages in its page
/// cache and cannot be given other pages without a backup into it, which
/// makes SQLite parse its schema and compile every statement again.
///
/// A buffer holds what a database file would, byte for byte (so
/// `DatabaseQueue.serializedFromSnapshot` copies it as it is). Unlike an
/// in-memory database, it counts each commit in its header's change
/// counter, as a file does.
public enum PageBuffers {
    /// The path that opens a new, empty buffer, for
    /// `DatabaseQueue(path:configuration:)` with `prepare(_:cachePages:)`
    /// in the configuration. Every open makes a buffer of its own.
    public static func path() throws -> String {
        let status = sightline_page_buffers_register()
        guard status == SQLITE_OK else {
            throw DatabaseError(resultCode: ResultCode(rawValue: status), message: "cannot register SQLite's page-buffer VFS")
        }
        return "file:page-buffer?vfs=\(String(cString: sightline_page_buffers_vfs))"
    }

    /// What a connection on a buffer runs first: its rollback journal and
    /// temporary tables in memory (the VFS opens no other file), pages read
    /// in place (`mmap_size` over the whole buffer), and a page cache of
    /// `cachePages` pages for the pages a transaction writes: the buffer
    /// already holds every page, and a larger cache would hold them twice.
    public static func prepare(_ db: Database, cachePages: Int) throws {
        _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = MEMORY")
        _ = try Int.fetchOne(db, sql: "PRAGMA mmap_size = \(sightline_page_buffer_limit())")
        try db.execute(sql: "PRAGMA temp_store = MEMORY; PRAGMA synchronous = OFF; PRAGMA cache_size = \(max(1, cachePages))")
    }

    /// The largest database a buffer holds (address space reserved once,
    /// not memory); a write past it fails as on a full disk.
    public static var limit: Int { Int(sightline_page_buffer_limit()) }

    /// A copy of the bytes of the connection's file; nil if its main
    /// database is not on a buffer.
    public static func bytes(_ db: Database) -> [UInt8]? {
        var data: UnsafePointer<UInt8>?
        var size: sqlite3_int64 = 0
        guard sightline_page_buffer_bytes(db.sqliteConnection, &data, &size) == 1 else { return nil }
        guard let data, size > 0, let count = Int(exactly: size) else { return [] }
        return [UInt8](UnsafeBufferPointer(start: data, count: count))
    }

    /// The schema cookie of the connection's file (SQLite's count of its
    /// schema changes, at byte 40 of the header); nil if its main database
    /// is not on a buffer or holds less than a header. Reads the buffer
    /// only: `connection` may be one that no thread uses, outside its queue.
    public static func schemaCookie(_ connection: OpaquePointer) -> UInt32? {
        var cookie: UInt32 = 0
        return sightline_page_buffer_cookie(connection, &cookie) == 1 ? cookie : nil
    }

    /// The schema cookie of the database whose bytes are `pages`; nil for
    /// less than a header.
    public static func schemaCookie(of pages: [UInt8]) -> UInt32? {
        // A big-endian UInt32 at byte 40 of the 100-byte header.
        guard pages.count >= DatabaseQueue.headerBytes else { return nil }
        return pages[40..<44].reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// The bytes of the connection's file if it is a buffer, else 0.
    public static func byteCount(_ db: Database) -> Int {
        var data: UnsafePointer<UInt8>?
        var size: sqlite3_int64 = 0
        guard sightline_page_buffer_bytes(db.sqliteConnection, &data, &size) == 1 else { return 0 }
        return Int(clamping: size)
    }

    /// Makes `pages` the connection's file and drops its page cache, so its
    /// next statement reads them. Outside a transaction only. Throws when
    /// the main database is not on a buffer or there is no memory; the file
    /// is then empty.
    public static func refill(_ db: Database, with pages: [UInt8]) throws {
        guard !db.isInsideTransaction else {
            throw DatabaseError(resultCode: .SQLITE_MISUSE, message: "a page buffer is refilled inside a transaction")
        }
        let connection = db.sqliteConnection
        defer { sqlite3_db_release_memory(connection) }
        guard let target = sightline_page_buffer_refill(connection, sqlite3_int64(pages.count)) else {
            _ = sightline_page_buffer_refill(connection, 0)
            throw DatabaseError(resultCode: .SQLITE_NOMEM,
                                message: "cannot give a page buffer \(pages.count) bytes (at most \(limit), between transactions)")
        }
        pages.withUnsafeBufferPointer { source in
            if let base = source.baseAddress { target.update(from: base, count: source.count) }
        }
    }
}
