import Foundation
import GRDB
import IndexModel
import SyncWire

/// An activity as the store keeps it, with what the store derived.
public struct StoredActivity: Hashable, Sendable {
    public var activity: UserActivity
    public var viewCount: Int
    /// True when the strongly related item was deleted after the activity last
    /// became current: the activity is then not returned by search.
    public var relatedItemDeleted: Bool
}

/// The engagement counts of one result reference.
public struct EngagementCounts: Hashable, Sendable {
    public var shown: Int
    public var engaged: Int
}

extension DeviceStore {
    /// The current items of an index, ordered by identifier. Expired items are
    /// included until their expiry is journaled (search hides them at once).
    public func items(in index: String) throws(DeviceStoreError) -> [SearchableItem] {
        try read { db in
            let rows = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT item_id, domain, expires, attributes FROM items WHERE index_name = ? ORDER BY item_id
                """), arguments: [index])
            return try rows.map { row throws(DeviceStoreError) in try StoredValue.item(row, from: 0) }
        }
    }

    public func item(in index: String, identifier: String) throws(DeviceStoreError) -> SearchableItem? {
        try read { db in try Projector(db: db).loadItem(index: index, identifier: identifier) }
    }

    /// The names of the indexes that hold items or a client state.
    public func indexNames() throws(DeviceStoreError) -> [String] {
        try read { db in
            try String.fetchAll(db.cachedStatement(sql: """
                SELECT index_name FROM items UNION SELECT index_name FROM client_states ORDER BY 1
                """))
        }
    }

    /// The public hashes this device holds a live vote for, in ascending
    /// order: what the cloud should count of it once it has synced.
    public func liveVotes() throws(DeviceStoreError) -> [PublicHash] {
        try read { db in
            var hashes: [PublicHash] = []
            for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT hash FROM public_votes ORDER BY hash")) {
                let bytes: Data = try StoredValue.column(row, 0, "public_votes.hash")
                guard let hash = PublicHash([UInt8](bytes)) else {
                    throw DeviceStoreError(.corruptStore, "public_votes.hash holds \(bytes.count) bytes, not a public hash of \(PublicHash.byteCount)")
                }
                hashes.append(hash)
            }
            return hashes
        }
    }

    /// All activities, ordered by key.
    public func activities() throws(DeviceStoreError) -> [StoredActivity] {
        try read { db in
            try Row.fetchAll(db, sql: """
                SELECT payload, view_count, related_deleted FROM activities WHERE length(payload) > 0 ORDER BY activity_key
                """).map { row in
                let payload: Data = try StoredValue.column(row, 0, "activities.payload")
                return StoredActivity(activity: try EventCodec.decodeActivity([UInt8](payload)),
                                      viewCount: try StoredValue.column(row, 1, "activities.view_count"),
                                      relatedItemDeleted: try StoredValue.column(row, 2, "activities.related_deleted"))
            }
        }
    }

    public func engagement(ref: String) throws(DeviceStoreError) -> EngagementCounts {
        try read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT shown, engaged FROM engagement WHERE ref = ?", arguments: [ref]) else {
                return EngagementCounts(shown: 0, engaged: 0)
            }
            return EngagementCounts(shown: try StoredValue.column(row, 0, "engagement.shown of \(ref)"),
                                    engaged: try StoredValue.column(row, 1, "engagement.engaged of \(ref)"))
        }
    }

    /// The client state of an index's last committed batch.
    public func clientState(of index: String) throws(DeviceStoreError) -> [UInt8]? {
        try self.index(named: index).fetchLastClientState()
    }
}

/// How much the projections hold.
public struct ProjectionCounts: Hashable, Sendable {
    public var items: Int
    public var activities: Int
    public var clientStates: Int
    public var indexes: [String]
}

extension DeviceStore {
    public func projectionCounts() throws(DeviceStoreError) -> ProjectionCounts {
        let indexes = try indexNames()
        return try read { db in
            ProjectionCounts(
                items: try Int.fetchOne(db, sql: "SELECT count(*) FROM items") ?? 0,
                activities: try Int.fetchOne(db, sql: "SELECT count(*) FROM activities") ?? 0,
                clientStates: try Int.fetchOne(db, sql: "SELECT count(*) FROM client_states") ?? 0,
                indexes: indexes)
        }
    }
}
