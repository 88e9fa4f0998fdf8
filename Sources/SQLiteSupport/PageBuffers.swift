import CPageBuffers
import GRDB
import GRDBSQLite

/// Databases whose file is a buffer in this process's memory (the
/// `CPageBuffers` VFS), which a connection can be pointed at anew between
/// transactions: `attach` makes other pages (`PageBuffer`) its file, and
/// the connection goes on with its parsed schema and its compiled
/// statements as long as the new pages have the same schema cookie. An
/// in-memory database (`:memory:`) holds its pages in its page cache and
/// cannot be given other pages without a backup into it, which makes
/// SQLite parse its schema and compile every statement again.
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
}

extension PageBuffers {
    /// Makes `pages` the connection's file (nil: the connection's own, empty
    /// one), so its next statement reads them. The VFS makes SQLite's check
    /// for another connection's change see one, so its next transaction
    /// drops its page cache and counts a new data version, unless `pages`
    /// are those it had before it went back to its own file and no other
    /// connection had them since. Outside a transaction only. `pages` must
    /// stay attached to no other connection while this one has them.
    ///
    /// It takes the connection's handle rather than its `Database`: the
    /// caller holds the connection (no thread is using it), and need not
    /// enter its queue to point it at other pages.
    public static func attach(_ connection: OpaquePointer, _ pages: PageBuffer?) throws {
        guard sqlite3_get_autocommit(connection) != 0, sightline_page_buffer_attach(connection, pages?.pages) == 1 else {
            throw DatabaseError(resultCode: .SQLITE_MISUSE,
                                message: "pages are attached to a connection inside a transaction, or one not on a page buffer")
        }
    }
}

/// A database file's bytes that the process owns, as a page buffer holds
/// them (`PageBuffers`): attached to a connection between transactions
/// (`PageBuffers.attach`), they are its file until it is given others. So
/// a database can be kept in memory without a connection of its own, and
/// any idle connection on a page buffer can run its next transaction.
///
/// Like a page buffer, the bytes are a range of address space reserved
/// once (`PageBuffers.limit`) that never moves, and take memory only where
/// written.
public final class PageBuffer: @unchecked Sendable {
    fileprivate let pages: OpaquePointer

    /// Pages holding `bytes` (none: an empty file).
    public init(_ bytes: [UInt8] = []) throws {
        guard let pages = sightline_pages_new() else {
            throw DatabaseError(resultCode: .SQLITE_NOMEM, message: "cannot allocate a page buffer")
        }
        self.pages = pages
        try fill(bytes.count) { target in
            bytes.withUnsafeBufferPointer { source in
                if let base = source.baseAddress { target.baseAddress?.update(from: base, count: source.count) }
            }
        }
    }

    deinit { sightline_pages_free(pages) }

    /// Makes the buffer `count` bytes long and lets `body` write all of
    /// them (what it held is not kept). Not while attached to a connection
    /// inside a transaction.
    public func fill(_ count: Int, _ body: (UnsafeMutableBufferPointer<UInt8>) throws -> Void) throws {
        guard let target = sightline_pages_fill(pages, sqlite3_int64(count)) else {
            _ = sightline_pages_fill(pages, 0)
            throw DatabaseError(resultCode: .SQLITE_NOMEM,
                                message: "cannot give a page buffer \(count) bytes (at most \(PageBuffers.limit))")
        }
        try body(UnsafeMutableBufferPointer(start: target, count: count))
    }

    /// Calls `body` with the buffer's bytes, which it must not keep.
    public func withBytes<T>(_ body: (UnsafeBufferPointer<UInt8>) throws -> T) rethrows -> T {
        var data: UnsafePointer<UInt8>?
        var size: sqlite3_int64 = 0
        _ = sightline_pages_bytes(pages, &data, &size)
        return try body(UnsafeBufferPointer(start: data, count: data == nil ? 0 : Int(clamping: size)))
    }

    /// How many times the buffer was changed (written through a
    /// connection, truncated or filled): the same count, the same bytes.
    public var changes: UInt64 { UInt64(sightline_pages_writes(pages)) }

    /// The buffer's size in bytes.
    public var count: Int { withBytes { $0.count } }

    /// The schema cookie in the buffer's header; nil for less than a header.
    public var schemaCookie: UInt32? {
        var cookie: UInt32 = 0
        return sightline_pages_cookie(pages, &cookie) == 1 ? cookie : nil
    }
}
