import ArgumentParser

/// The CLI's exit statuses, one per kind of failure (docs/CLI.md).
enum ExitStatus {
    /// A verification, invariant or comparison failed.
    static let checkFailed = ExitCode(1)
    /// Invalid input: a bad operations line, a conflicting batch, a bad query.
    static let invalidInput = ExitCode(2)
    /// A store could not be opened or read.
    static let storeUnavailable = ExitCode(3)
    /// Sync stopped: the cloud refused for good, or could not be reached.
    static let syncFailed = ExitCode(4)
}
