import IndexModel
import Snapshot

/// An expected failure of a device store operation: a code to branch on, a message
/// that says what is wrong and how to fix it, and context. Messages never contain
/// titles, descriptions or search text.
public struct DeviceStoreError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure, for callers that act on it (the CLI chooses some
    /// exit statuses by it).
    public enum Code: String, Hashable, Sendable {
        /// A read-only command was given a store that does not exist.
        case storeNotFound
        /// The file is not a Sightline device store, or is of an unsupported version.
        case notADeviceStore
        /// The operation breaks a rule or limit (see `operationError`).
        case invalidOperation
        /// A batch's expected client state differs from the index's current one.
        case clientStateMismatch
        /// `advanceClock` on a store whose clock is the system clock.
        case clockNotSimulated
        /// `advanceClock` to an instant before the current time.
        case clockWentBackwards
        /// A journal row cannot be read, decoded or chained.
        case corruptJournal
        /// A stored value is not one this build writes: a negative or huge
        /// position, a REAL or NULL where an integer belongs (the file was
        /// edited or damaged).
        case corruptStore
        /// A write was attempted on a store opened read-only.
        case readOnly
        /// SQLite reported an error.
        case database
        /// A query would do more work than its budget allows, or ran past its
        /// deadline (`QueryBudget`).
        case queryTooExpensive
        /// The snapshot is encrypted and no key was given.
        case keyRequired
        /// A restore's destination holds a store, and the restore was not forced.
        case destinationExists
        /// A store option (such as the app name) is not valid.
        case invalidOption
        /// A snapshot cannot be written, or is refused for restore (damaged,
        /// truncated, the wrong key, another version, a mismatched manifest).
        case snapshot
        /// The sync state or outbox cannot do what was asked (an ack for
        /// positions the outbox never had, a missing device key).
        case sync
    }

    public let code: Code
    public let message: String
    /// The journal position the error is about, when there is one.
    public let seq: Seq?
    /// The field-level error of an invalid operation.
    public let operationError: OperationError?

    public init(_ code: Code, _ message: String, seq: Seq? = nil, operationError: OperationError? = nil) {
        self.code = code
        self.message = message
        self.seq = seq
        self.operationError = operationError
    }

    public static func invalid(_ error: OperationError) -> DeviceStoreError {
        DeviceStoreError(.invalidOperation, error.description, operationError: error)
    }

    /// A snapshot container's failure as a store error: `keyRequired` for an
    /// encrypted snapshot read without a key, `snapshot` otherwise.
    public init(_ error: SnapshotError) {
        self.init(error.code == .keyRequired ? .keyRequired : .snapshot, error.message)
    }

    public var description: String { message }
}
