import Foundation
import GRDB
import IndexModel

/// The app's side of reindexing, as `CSSearchableIndexDelegate`: the store asks,
/// the app indexes again through the usual API, then acknowledges.
public protocol ReindexDelegate {
    /// Index everything of `index` again. An app that keeps its own position
    /// resumes from `store.index(named:).fetchLastClientState()`.
    func reindexAll(index: String, in store: DeviceStore) throws
    /// Index these items of `index` again.
    func reindexItems(index: String, identifiers: [String], in store: DeviceStore) throws
}

/// A reindex request the app has not acknowledged yet.
public struct ReindexRequest: Hashable, Sendable {
    /// The seq of the `reindexRequested` event.
    public let seq: Seq
    public let index: String
    /// Nil: everything of the index.
    public let identifiers: [String]?

    public init(seq: Seq, index: String, identifiers: [String]?) {
        self.seq = seq
        self.index = index
        self.identifiers = identifiers
    }
}

extension DeviceStore {
    /// Journals a request to index `index` again (everything, or `identifiers`).
    @discardableResult
    public func requestReindex(index: String, identifiers: [String]? = nil) throws(DeviceStoreError) -> Seq {
        let now = clock.now()
        let keys = privacyKeys
        return try write { db in
            let appender = try JournalAppender(db: db, time: now, keys: keys)
            return try appender.append(.reindexRequested(index: index, identifiers: identifiers))
        }
    }

    /// The requests not yet acknowledged, oldest first.
    public func pendingReindexRequests() throws(DeviceStoreError) -> [ReindexRequest] {
        try read { db in
            try Row.fetchAll(db, sql: """
                SELECT seq, index_name, identifiers FROM reindex_requests WHERE acknowledged_seq IS NULL ORDER BY seq
                """).map { row in
                var identifiers: [String]?
                if let blob = try StoredValue.column(row, 2, "reindex_requests.identifiers", as: Data?.self) {
                    var reader = BinaryReader([UInt8](blob))
                    let count = try reader.uvarint()
                    identifiers = try (0..<count).map { _ in try reader.string() }
                }
                return ReindexRequest(seq: Seq(try StoredValue.position(StoredValue.column(row, 0, "reindex_requests.seq"), "reindex_requests.seq")),
                                      index: try StoredValue.column(row, 1, "reindex_requests.index_name"), identifiers: identifiers)
            }
        }
    }

    /// Hands each pending request to `delegate` and journals its
    /// acknowledgement once the delegate returns. A delegate that throws leaves
    /// its request pending (and the ones after it untouched). Returns how many
    /// were acknowledged.
    @discardableResult
    public func processReindexRequests(with delegate: some ReindexDelegate) throws -> Int {
        var acknowledged = 0
        for request in try pendingReindexRequests() {
            if let identifiers = request.identifiers {
                try delegate.reindexItems(index: request.index, identifiers: identifiers, in: self)
            } else {
                try delegate.reindexAll(index: request.index, in: self)
            }
            let now = clock.now()
            let keys = privacyKeys
            try write { db in
                let appender = try JournalAppender(db: db, time: now, keys: keys)
                try appender.append(.reindexAcknowledged(index: request.index, request: request.seq.rawValue))
            }
            acknowledged += 1
        }
        return acknowledged
    }

    /// The named indexes the store knows: those with items or a client state.
    static func knownIndexes(_ db: Database) throws -> [String] {
        try String.fetchAll(db, sql: """
            SELECT DISTINCT index_name FROM items UNION SELECT index_name FROM client_states ORDER BY 1
            """)
    }
}
