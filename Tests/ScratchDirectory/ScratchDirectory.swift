import Foundation

/// Directories for tests under the system's temporary directory, removed
/// when the test process exits. A test may leave files in one for a
/// subprocess or a later step, so nothing is removed before the run ends;
/// nothing outlives it either, so `swift test` leaves no stores or snapshots
/// in the temporary directory.
public enum ScratchDirectory {
    private static let made = NSLock()
    nonisolated(unsafe) private static var directories: [URL] = []
    private static let removalAtExit: Void = {
        atexit { ScratchDirectory.removeAll() }
    }()

    /// A new directory named `prefix-<UUID>`.
    public static func make(_ prefix: String) throws -> URL {
        _ = removalAtExit
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        made.withLock { directories.append(url) }
        return url
    }

    private static func removeAll() {
        for url in made.withLock({ directories }) { try? FileManager.default.removeItem(at: url) }
    }
}
