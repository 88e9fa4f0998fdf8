/// One call of the app-facing API, as a value. `DeviceStore.perform(_:)` commits
/// each operation in its own transaction; operations files (`device apply`) hold
/// one per line.
public enum AppOperation: Hashable, Sendable {
    /// Index (insert or replace) items in a named index.
    case index(index: String, items: [SearchableItem])
    /// Update existing items with isUpdate semantics; absent items are ignored.
    case update(index: String, updates: [ItemUpdate])
    case delete(index: String, identifiers: [String])
    /// Delete items whose domain is one of these or below one (dotted prefix).
    case deleteDomains(index: String, domains: [String])
    case deleteAll(index: String)
    /// A batch of index operations that commits atomically with a client state.
    case batch(IndexBatch)
    /// Make an activity current.
    case activity(UserActivity)
    case deleteActivities(identifiers: [String])
    case deleteActivityDomains(domains: [String])
    case deleteAllActivities
    case shown(ref: String)
    case engage(ref: String)
    /// Move a simulated clock forward. Refused where the clock is the system's.
    case advanceClock(to: Timestamp)

    /// The operation's name in operations files.
    public var name: String {
        switch self {
        case .index: "index"
        case .update: "update"
        case .delete: "delete"
        case .deleteDomains: "deleteDomains"
        case .deleteAll: "deleteAll"
        case .batch: "batch"
        case .activity: "activity"
        case .deleteActivities: "deleteActivities"
        case .deleteActivityDomains: "deleteActivityDomains"
        case .deleteAllActivities: "deleteAllActivities"
        case .shown: "shown"
        case .engage: "engage"
        case .advanceClock: "advanceClock"
        }
    }

    /// Whether the operation may appear inside a batch.
    public var isIndexOperation: Bool {
        switch self {
        case .index, .update, .delete, .deleteDomains, .deleteAll: true
        default: false
        }
    }

    public var indexName: String? {
        switch self {
        case .index(let index, _), .update(let index, _), .delete(let index, _), .deleteDomains(let index, _),
             .deleteAll(let index):
            index
        case .batch(let batch):
            batch.index
        default:
            nil
        }
    }
}

/// A batch (`beginBatch` … `endBatch(clientState:)`): index operations of one named
/// index that commit together with the index's new client state, or not at all.
public struct IndexBatch: Hashable, Sendable {
    public var index: String
    public var operations: [AppOperation]
    public var clientState: [UInt8]
    /// The compare-and-swap condition of `endBatch(expectedClientState:newClientState:)`.
    public var condition: ClientStateCondition

    public init(index: String, operations: [AppOperation], clientState: [UInt8],
                condition: ClientStateCondition = .unconditional) {
        self.index = index
        self.operations = operations
        self.clientState = clientState
        self.condition = condition
    }
}

/// The condition a batch's commit is subject to.
public enum ClientStateCondition: Hashable, Sendable {
    /// Commit whatever the current client state is.
    case unconditional
    /// Commit only if the index's current client state equals this one (nil: the
    /// index has none yet). A mismatch commits nothing.
    case expecting([UInt8]?)
}
