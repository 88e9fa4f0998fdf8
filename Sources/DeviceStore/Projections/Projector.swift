import Foundation
import GRDB
import IndexModel

/// The fold from journal events to projections. The write path and
/// `rebuildProjections()` both call `apply`, and nothing else writes projection
/// tables, so a rebuild from the journal equals the incrementally kept state.
///
/// `apply` reads only the event, its seq and time, and the projections
/// themselves: never the clock, so replaying gives the same result at any time.
struct Projector {
    let db: Database

    func apply(_ event: JournalEvent, seq: Seq, time: Timestamp) throws {
        switch event {
        case .itemIndexed(let index, let item):
            try upsertItem(item, index: index, seq: seq)
        case .itemUpdated(let index, let update):
            guard let existing = try loadItem(index: index, identifier: update.uniqueIdentifier) else { return }
            try upsertItem(existing.applying(update), index: index, seq: seq)
        case .itemDeleted(let index, let identifier, _), .itemExpired(let index, let identifier):
            try removeItem(index: index, identifier: identifier)
        case .clientStateSet(let index, let state):
            try db.cachedStatement(sql: """
                INSERT INTO client_states (index_name, state, changed_seq) VALUES (?, ?, ?)
                ON CONFLICT (index_name) DO UPDATE SET state = excluded.state, changed_seq = excluded.changed_seq
                """).execute(arguments: [index, Data(state), Int64(seq.rawValue)])
        case .activityRecorded(let activity):
            try recordActivity(activity, seq: seq, time: time)
        case .activityDeleted(let key, _), .activityExpired(let key):
            try removeActivity(key: key)
        case .resultShown(let ref):
            try db.cachedStatement(sql: """
                INSERT INTO engagement (ref, shown, engaged) VALUES (?, 1, 0)
                ON CONFLICT (ref) DO UPDATE SET shown = shown + 1
                """).execute(arguments: [ref])
        case .resultEngaged(let ref):
            try db.cachedStatement(sql: """
                INSERT INTO engagement (ref, shown, engaged) VALUES (?, 0, 1)
                ON CONFLICT (ref) DO UPDATE SET engaged = engaged + 1
                """).execute(arguments: [ref])
        }
    }

    // MARK: - Items

    /// The text columns the full-text index covers, as stored in `items`.
    struct ItemText: Equatable {
        var title: String?
        var displayName: String?
        var contentDescription: String?
        var keywords: String?

        init(_ attributes: AttributeSet) {
            title = attributes.title
            displayName = attributes.displayName
            contentDescription = attributes.contentDescription
            keywords = attributes.keywords.map { $0.joined(separator: "\n") }
        }

        init(row: Row, offset: Int) {
            title = row[offset]
            displayName = row[offset + 1]
            contentDescription = row[offset + 2]
            keywords = row[offset + 3]
        }

        var isEmpty: Bool { title == nil && displayName == nil && contentDescription == nil && keywords == nil }
        var arguments: [(any DatabaseValueConvertible)?] { [title, displayName, contentDescription, keywords] }
    }

    func loadItem(index: String, identifier: String) throws -> SearchableItem? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT domain, expires, attributes FROM items WHERE item_id = ? AND index_name = ?
            """), arguments: [identifier, index]) else { return nil }
        let blob: Data = row[2]
        let attributes = try EventCodec.decodeAttributes([UInt8](blob))
        let expires: Int64? = row[1]
        return SearchableItem(uniqueIdentifier: identifier, domainIdentifier: row[0], attributes: attributes,
                              expirationDate: expires.map { Timestamp(millisecondsSince1970: $0) })
    }

    private func upsertItem(_ item: SearchableItem, index: String, seq: Seq) throws {
        let text = ItemText(item.attributes)
        let attributes = Data(EventCodec.encode(item.attributes))
        let expires = item.expirationDate?.millisecondsSince1970
        let existing = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT rowid, title, display_name, content_description, keywords FROM items
            WHERE item_id = ? AND index_name = ?
            """), arguments: [item.uniqueIdentifier, index])
        if let existing {
            let rowid: Int64 = existing[0]
            let oldText = ItemText(row: existing, offset: 1)
            let textChanged = oldText != text
            if textChanged && !oldText.isEmpty {
                try ftsDelete(table: "items_fts", rowid: rowid, columns: oldText.arguments)
            }
            try db.cachedStatement(sql: """
                UPDATE items SET domain = ?, expires = ?, title = ?, display_name = ?, content_description = ?,
                keywords = ?, content_url = ?, ranking_hint = ?, attributes = ?, changed_seq = ? WHERE rowid = ?
                """).execute(arguments: StatementArguments(values([
                    item.domainIdentifier, expires, text.title, text.displayName, text.contentDescription,
                    text.keywords, item.attributes.contentURL, item.attributes.rankingHint, attributes,
                    Int64(seq.rawValue), rowid,
                ])))
            if textChanged && !text.isEmpty {
                try ftsInsert(table: "items_fts", rowid: rowid, columns: text.arguments)
            }
        } else {
            try db.cachedStatement(sql: """
                INSERT INTO items (item_id, index_name, domain, expires, title, display_name, content_description,
                keywords, content_url, ranking_hint, attributes, changed_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """).execute(arguments: StatementArguments(values([
                    item.uniqueIdentifier, index, item.domainIdentifier, expires, text.title, text.displayName,
                    text.contentDescription, text.keywords, item.attributes.contentURL, item.attributes.rankingHint,
                    attributes, Int64(seq.rawValue),
                ])))
            if !text.isEmpty {
                try ftsInsert(table: "items_fts", rowid: db.lastInsertedRowID, columns: text.arguments)
            }
        }
    }

    private func removeItem(index: String, identifier: String) throws {
        guard let existing = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT rowid, title, display_name, content_description, keywords FROM items
            WHERE item_id = ? AND index_name = ?
            """), arguments: [identifier, index]) else { return }
        let rowid: Int64 = existing[0]
        let oldText = ItemText(row: existing, offset: 1)
        if !oldText.isEmpty {
            try ftsDelete(table: "items_fts", rowid: rowid, columns: oldText.arguments)
        }
        try db.cachedStatement(sql: "DELETE FROM items WHERE rowid = ?").execute(arguments: [rowid])
        // A strongly related activity becomes ineligible once no item of that
        // identifier remains in any index.
        try db.cachedStatement(sql: """
            UPDATE activities SET related_deleted = 1
            WHERE related = ? AND related_deleted = 0 AND NOT EXISTS (SELECT 1 FROM items WHERE item_id = ?)
            """).execute(arguments: [identifier, identifier])
    }

    // MARK: - Activities

    struct ActivityText: Equatable {
        var title: String?
        var keywords: String?
        var contentDescription: String?

        init(_ activity: UserActivity) {
            title = activity.title ?? activity.attributes.title
            let allKeywords = activity.keywords + (activity.attributes.keywords ?? [])
            keywords = allKeywords.isEmpty ? nil : allKeywords.joined(separator: "\n")
            contentDescription = activity.attributes.contentDescription
        }

        init(row: Row, offset: Int) {
            title = row[offset]
            keywords = row[offset + 1]
            contentDescription = row[offset + 2]
        }

        var isEmpty: Bool { title == nil && keywords == nil && contentDescription == nil }
        var arguments: [(any DatabaseValueConvertible)?] { [title, keywords, contentDescription] }
    }

    private func recordActivity(_ activity: UserActivity, seq: Seq, time: Timestamp) throws {
        let text = ActivityText(activity)
        let key = activity.key
        let payload = Data(EventCodec.encode(activity))
        let columns: [(any DatabaseValueConvertible)?] = [
            activity.activityType, text.title, text.keywords, text.contentDescription, activity.webpageURL,
            activity.relatedUniqueIdentifier, activity.weakRelatedUniqueIdentifier, activity.domainIdentifier,
            activity.persistentIdentifier, activity.expirationDate?.millisecondsSince1970,
            activity.eligibleForSearch, activity.eligibleForHandoff, activity.eligibleForPublicIndexing,
        ]
        if let existing = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT rowid, title, keywords, content_description FROM activities WHERE activity_key = ?
            """), arguments: [key]) {
            let rowid: Int64 = existing[0]
            let oldText = ActivityText(row: existing, offset: 1)
            let textChanged = oldText != text
            if textChanged && !oldText.isEmpty {
                try ftsDelete(table: "activities_fts", rowid: rowid, columns: oldText.arguments)
            }
            try db.cachedStatement(sql: """
                UPDATE activities SET activity_type = ?, title = ?, keywords = ?, content_description = ?,
                webpage_url = ?, related = ?, weak_related = ?, domain = ?, persistent_id = ?, expires = ?,
                eligible_search = ?, eligible_handoff = ?, eligible_public = ?, related_deleted = 0,
                view_count = view_count + 1, last_seen = ?, payload = ?, changed_seq = ? WHERE rowid = ?
                """).execute(arguments: StatementArguments(columns + [time.millisecondsSince1970, payload,
                                                                     Int64(seq.rawValue), rowid]))
            if textChanged && !text.isEmpty {
                try ftsInsert(table: "activities_fts", rowid: rowid, columns: text.arguments)
            }
        } else {
            try db.cachedStatement(sql: """
                INSERT INTO activities (activity_type, title, keywords, content_description, webpage_url, related,
                weak_related, domain, persistent_id, expires, eligible_search, eligible_handoff, eligible_public,
                activity_key, related_deleted, view_count, first_seen, last_seen, payload, changed_seq)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 1, ?, ?, ?, ?)
                """).execute(arguments: StatementArguments(columns + [
                    key, time.millisecondsSince1970, time.millisecondsSince1970, payload, Int64(seq.rawValue),
                ]))
            if !text.isEmpty {
                try ftsInsert(table: "activities_fts", rowid: db.lastInsertedRowID, columns: text.arguments)
            }
        }
    }

    private func removeActivity(key: String) throws {
        guard let existing = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT rowid, title, keywords, content_description FROM activities WHERE activity_key = ?
            """), arguments: [key]) else { return }
        let rowid: Int64 = existing[0]
        let oldText = ActivityText(row: existing, offset: 1)
        if !oldText.isEmpty {
            try ftsDelete(table: "activities_fts", rowid: rowid, columns: oldText.arguments)
        }
        try db.cachedStatement(sql: "DELETE FROM activities WHERE rowid = ?").execute(arguments: [rowid])
    }

    private func values(_ values: [(any DatabaseValueConvertible)?]) -> [(any DatabaseValueConvertible)?] {
        values
    }

    // MARK: - Full-text index (external content: the old text must be given to delete)

    private func ftsInsert(table: String, rowid: Int64, columns: [(any DatabaseValueConvertible)?]) throws {
        let placeholders = Array(repeating: "?", count: columns.count).joined(separator: ", ")
        try db.cachedStatement(sql: "INSERT INTO \(table) (rowid, \(ftsColumns(table))) VALUES (?, \(placeholders))")
            .execute(arguments: StatementArguments([rowid] + columns))
    }

    private func ftsDelete(table: String, rowid: Int64, columns: [(any DatabaseValueConvertible)?]) throws {
        let placeholders = Array(repeating: "?", count: columns.count).joined(separator: ", ")
        try db.cachedStatement(sql: "INSERT INTO \(table) (\(table), rowid, \(ftsColumns(table))) VALUES ('delete', ?, \(placeholders))")
            .execute(arguments: StatementArguments([rowid] + columns))
    }

    private func ftsColumns(_ table: String) -> String {
        table == "items_fts" ? "title, display_name, content_description, keywords" : "title, keywords, content_description"
    }
}
