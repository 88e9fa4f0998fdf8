import Foundation

/// A SQLite store on disk is up to three files: the database, its WAL and its
/// shared-memory index. Restores move them together.
public enum StoreFiles {
    public static let suffixes = ["", "-wal", "-shm"]

    /// Creates (or empties) the file at `path` readable and writable by its
    /// owner only: stores and snapshots hold device keys and private
    /// content. SQLite gives a database's WAL and index the database's mode.
    public static func createPrivate(_ path: String) -> Bool {
        let descriptor = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        return fchmod(descriptor, 0o600) == 0
    }

    /// Removes the store at `path` with its WAL and index, if they exist.
    public static func remove(_ path: String) {
        for suffix in suffixes { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    /// Moves the self-contained store file `replacement` to `path`. A store
    /// already at `path` (and its WAL) is first moved aside to
    /// `path.replaced-<stamp>`, which is returned. If any rename fails, what
    /// was moved goes back, `replacement` is removed, and `path` is as it was.
    /// The directory is fsynced afterwards.
    public static func replace(_ path: String, with replacement: String, stamp: Int64) throws(SnapshotError) -> String? {
        var kept: String?
        var moved: [String] = []
        func undo() {
            if let kept { for done in moved { _ = rename(kept + done, path + done) } }
            remove(replacement)
        }
        if FileManager.default.fileExists(atPath: path) {
            let aside = path + ".replaced-\(stamp)"
            kept = aside
            for suffix in suffixes where FileManager.default.fileExists(atPath: path + suffix) {
                guard rename(path + suffix, aside + suffix) == 0 else {
                    let failure = errno
                    undo()
                    throw SnapshotError(.io, "cannot move the existing store \(path)\(suffix) aside (errno \(failure)); nothing changed")
                }
                moved.append(suffix)
            }
        }
        guard rename(replacement, path) == 0 else {
            let failure = errno
            undo()
            throw SnapshotError(.io, "cannot rename the restored store into \(path) (errno \(failure)); nothing changed")
        }
        SnapshotFile.syncDirectory(of: path)
        return kept
    }
}
