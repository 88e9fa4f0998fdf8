import GRDB
import GRDBSQLite

/// A database file read through a memory map (`PRAGMA mmap_size`) that
/// grows a chunk at a time, with its map over the whole file.
///
/// SQLite maps a file as large as it is. In WAL mode the file grows only at
/// checkpoints, and a checkpoint that grows it also grows the map to the new
/// end (`mremap`), which the kernel can rarely do in place: it moves the
/// map, page table and all, and makes every core drop what it cached of the
/// old addresses. The larger the file, the more that costs, and a store that
/// grows does it at nearly every checkpoint: in a simulated cloud of 100,000
/// devices these moves take 8.5% of the event loop's time.
///
/// With a chunk size (`SQLITE_FCNTL_CHUNK_SIZE`) the file grows, and is cut
/// back at checkpoints, to a whole number of chunks, so a checkpoint asks for
/// a larger file only once a chunk. Such a checkpoint maps only up to the end
/// of what it wrote, so after each checkpoint the map is grown to the whole
/// file (`SQLITE_FCNTL_SIZE_HINT` with the file's size, which extends
/// nothing): pages written later in the chunk are read in place too. SQLite
/// leaves a map alone while it has handed out pages of it, so the map may
/// stay short until the next checkpoint that grows the file; pages past it
/// are read through the page cache meanwhile.
public enum MappedGrowth {
    /// The pages the write-ahead log holds before a commit checkpoints it:
    /// SQLite's automatic checkpoint, which the hook takes the place of.
    public static let checkpointPages: Int32 = 1_000

    /// Makes `db`'s main file grow `chunkBytes` at a time, with its map
    /// grown to the whole file after each checkpoint. For a connection that
    /// writes a file database in WAL mode.
    public static func install(_ db: Database, chunkBytes: Int32) throws {
        var chunk = chunkBytes
        let status = sqlite3_file_control(db.sqliteConnection, "main", SQLITE_FCNTL_CHUNK_SIZE, &chunk)
        guard status == SQLITE_OK else {
            throw DatabaseError(resultCode: ResultCode(rawValue: status), message: "cannot set the store file's chunk size")
        }
        // Replaces SQLite's automatic checkpoint (`sqlite3_wal_autocheckpoint`
        // installs its hook in the same place), and does what it did first.
        sqlite3_wal_hook(db.sqliteConnection, { _, connection, name, pages in
            guard pages >= MappedGrowth.checkpointPages, let connection else { return SQLITE_OK }
            _ = sqlite3_wal_checkpoint(connection, name)
            MappedGrowth.mapWholeFile(connection, name)
            return SQLITE_OK
        }, nil)
    }

    /// Grows the map of the connection's `name` database to its file's
    /// size. Only a hint: when it fails, pages past the map are read through
    /// the page cache, as before.
    private static func mapWholeFile(_ connection: OpaquePointer, _ name: UnsafePointer<CChar>?) {
        var file: UnsafeMutablePointer<sqlite3_file>?
        guard sqlite3_file_control(connection, name, SQLITE_FCNTL_FILE_POINTER, &file) == SQLITE_OK,
              let file, let methods = file.pointee.pMethods, let fileSize = methods.pointee.xFileSize else { return }
        var size: sqlite3_int64 = 0
        guard fileSize(file, &size) == SQLITE_OK, size > 0 else { return }
        _ = sqlite3_file_control(connection, name, SQLITE_FCNTL_SIZE_HINT, &size)
    }
}
