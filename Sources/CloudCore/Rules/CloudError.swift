import Snapshot

/// An expected failure of a cloud operation.
public struct CloudError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure, for callers that act on it (the server chooses
    /// its HTTP status by it, the CLI some exit statuses).
    public enum Code: String, Hashable, Sendable {
        case storeNotFound
        case notACloudStore
        case invalidOption
        case enrolmentRefused
        case alreadyEnrolled
        case corruptLog
        /// A registry or projection row holds a value no cloud writes (a
        /// NULL, a REAL, a number out of range): the file was edited or damaged.
        case corruptStore
        case database
        /// A snapshot cannot be written, or is refused for restore.
        case snapshot
        /// A search's query would do more work than its budget allows, or
        /// ran past its deadline (`QueryBudget`).
        case queryTooExpensive
        /// The snapshot is encrypted and no key was given.
        case keyRequired
        /// A restore's destination holds a store, and the restore was not forced.
        case destinationExists
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    /// A snapshot container's failure as a cloud error: `keyRequired` for an
    /// encrypted snapshot read without a key, `snapshot` otherwise.
    public init(_ error: SnapshotError) {
        self.init(error.code == .keyRequired ? .keyRequired : .snapshot, error.message)
    }
}
