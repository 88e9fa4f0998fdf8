import Foundation
import GRDB
import IndexModel

/// A named index of a device store, as `CSSearchableIndex(name:)`. Each method is
/// one call and one transaction.
public struct SearchableIndex: Sendable {
    public let store: DeviceStore
    public let name: String

    /// Indexes items: inserts them, or replaces items with the same identifier.
    @discardableResult
    public func indexSearchableItems(_ items: [SearchableItem]) throws(DeviceStoreError) -> CallOutcome {
        try store.perform(.index(index: name, items: items))
    }

    /// Updates existing items with isUpdate semantics; updates of absent items are ignored.
    @discardableResult
    public func updateSearchableItems(_ updates: [ItemUpdate]) throws(DeviceStoreError) -> CallOutcome {
        try store.perform(.update(index: name, updates: updates))
    }

    @discardableResult
    public func deleteSearchableItems(withIdentifiers identifiers: [String]) throws(DeviceStoreError) -> CallOutcome {
        try store.perform(.delete(index: name, identifiers: identifiers))
    }

    /// Deletes the items of these domains and of every domain below them
    /// ("album" also removes "album.2015", not "albums").
    @discardableResult
    public func deleteSearchableItems(withDomainIdentifiers domains: [String]) throws(DeviceStoreError) -> CallOutcome {
        try store.perform(.deleteDomains(index: name, domains: domains))
    }

    @discardableResult
    public func deleteAllSearchableItems() throws(DeviceStoreError) -> CallOutcome {
        try store.perform(.deleteAll(index: name))
    }

    /// Starts a batch. Operations added to it are applied by `endBatch`, all in
    /// one transaction with the new client state.
    public func beginBatch() -> Batch {
        Batch(index: name)
    }

    /// Commits the batch with its client state.
    @discardableResult
    public func endBatch(_ batch: Batch, clientState: [UInt8]) throws(DeviceStoreError) -> CallOutcome {
        try store.perform(.batch(IndexBatch(index: name, operations: batch.operations, clientState: clientState)))
    }

    /// Commits the batch only if the index's client state is still
    /// `expectedClientState` (nil: none yet). A mismatch commits nothing and throws
    /// `clientStateMismatch`.
    @discardableResult
    public func endBatch(_ batch: Batch, expectedClientState: [UInt8]?, newClientState: [UInt8]) throws(DeviceStoreError) -> CallOutcome {
        try store.perform(.batch(IndexBatch(index: name, operations: batch.operations, clientState: newClientState,
                                            condition: .expecting(expectedClientState))))
    }

    /// The client state of the last committed batch of this index, or nil.
    public func fetchLastClientState() throws(DeviceStoreError) -> [UInt8]? {
        try store.read { db in
            try Data.fetchOne(db, sql: "SELECT state FROM client_states WHERE index_name = ?", arguments: [name])
                .map { [UInt8]($0) }
        }
    }

    /// The operations of a batch in progress. A value: nothing is written until
    /// `endBatch`.
    public struct Batch: Sendable {
        public let index: String
        public private(set) var operations: [AppOperation] = []

        init(index: String) {
            self.index = index
        }

        public mutating func indexSearchableItems(_ items: [SearchableItem]) {
            operations.append(.index(index: index, items: items))
        }

        public mutating func updateSearchableItems(_ updates: [ItemUpdate]) {
            operations.append(.update(index: index, updates: updates))
        }

        public mutating func deleteSearchableItems(withIdentifiers identifiers: [String]) {
            operations.append(.delete(index: index, identifiers: identifiers))
        }

        public mutating func deleteSearchableItems(withDomainIdentifiers domains: [String]) {
            operations.append(.deleteDomains(index: index, domains: domains))
        }

        public mutating func deleteAllSearchableItems() {
            operations.append(.deleteAll(index: index))
        }
    }
}
