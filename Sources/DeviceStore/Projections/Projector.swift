import Foundation
import GRDB
import IndexModel
import SQLiteSupport

/// The fold from journal events to projections. The write path and
/// `rebuildProjections()` both call `apply`, and nothing else writes projection
/// tables, so a rebuild from the journal equals the incrementally kept state.
///
/// `apply` reads only the event, its seq and time, and the projections
/// themselves: never the clock, so replaying gives the same result at any time.
///
/// One projector serves one transaction (or one rebuild). Its statements are
/// bound through `DirectStatement` and kept in the connection's
/// `StatementSlots`; it also keeps the earliest expiration date
/// of the projections so that the expiry sweep before each call costs a
/// comparison, not a query, when nothing is due.
final class Projector {
    let db: Database
    private let statements: StatementSlots
    private let expiry: EarliestExpiry

    /// The earliest expiration date among items and activities, when known.
    /// It may be lower than the truth (an expiring entry was deleted, or a
    /// transaction that added one rolled back), never higher.
    final class EarliestExpiry {
        fileprivate enum State {
            case unknown
            /// `nil` means nothing expires.
            case known(Int64?)
        }

        fileprivate var state = State.unknown

        init() {}

        /// Forgets the date, to be read again: after a sweep or a rollback,
        /// or when another connection may have written.
        func forget() {
            state = .unknown
        }
    }

    /// `statements` must be slots of `db`'s connection: the store's, kept
    /// across its transactions, or new ones for a one-off fold. So must
    /// `expiry`, which an in-memory store keeps across its calls.
    init(db: Database, statements: StatementSlots = StatementSlots(count: Projector.statementCount),
         expiry: EarliestExpiry = EarliestExpiry()) {
        self.db = db
        self.statements = statements
        self.expiry = expiry
    }

    /// `payload` is the event's encoding when the caller has it (the journal
    /// row), so that the activity projection can keep its bytes without encoding
    /// the activity again.
    ///
    /// Returns true when the event recorded an activity under a key the
    /// activities table did not hold.
    func apply(_ event: JournalEvent, payload: [UInt8]? = nil, seq: Seq, time: Timestamp) throws -> Bool {
        switch event {
        case .itemIndexed(let index, let item):
            let attributes = payload.flatMap(EventCodec.indexedItemAttributes(in:)) ?? EventCodec.encode(item.attributes)[...]
            try upsertItem(item, attributes: attributes, index: index, seq: seq)
        case .itemUpdated(let index, let update):
            guard let existing = try loadItem(index: index, identifier: update.uniqueIdentifier) else { return false }
            let item = existing.applying(update)
            try upsertItem(item, attributes: EventCodec.encode(item.attributes)[...], index: index, seq: seq)
        case .itemDeleted(let index, let identifier, _), .itemExpired(let index, let identifier):
            try removeItem(index: index, identifier: identifier)
        case .clientStateSet(let index, let state):
            let statement = try prepared(.upsertClientState)
            statement.bind(1, index)
            statement.bind(2, state)
            statement.bind(3, Int64(seq.rawValue))
            try statement.execute()
        case .activityRecorded(let activity):
            // An activity event is the version and kind bytes followed by the
            // activity's own encoding (Journal/FORMAT.md).
            let encoded = payload.map { Array($0.dropFirst(2)) } ?? EventCodec.encode(activity)
            return try recordActivity(activity, key: activity.key, encoded: encoded, seq: seq, time: time)
        case .activityPurged(let residue):
            // A bare row under the key's pseudonym, whose empty payload says
            // it is a residue: the identifiers an item's deletion looks for,
            // nothing searchable, until its removal (also under the pseudonym) takes it out.
            let bare = UserActivity(activityType: "", relatedUniqueIdentifier: residue.relatedUniqueIdentifier,
                                    weakRelatedUniqueIdentifier: residue.weakRelatedUniqueIdentifier)
            return try recordActivity(bare, key: residue.key, encoded: [], seq: seq, time: time)
        case .activityDeleted(let key, _), .activityExpired(let key):
            try removeActivity(key: key)
        case .resultShown(let ref):
            let statement = try prepared(.countShown)
            statement.bind(1, ref)
            try statement.execute()
        case .resultEngaged(let ref):
            let statement = try prepared(.countEngaged)
            statement.bind(1, ref)
            try statement.execute()
        case .publicContentRequested, .cloudReindexAsked, .votesReindexRequested:
            // Only the privacy projection (the outbox) sends or answers them.
            break
        case .storeRestored, .epochAdvanced, .popularityModeLearned:
            // Markers: the epoch each opens is in the journal row itself (the
            // privacy projection moves the outbox on an advance).
            break
        case .reindexRequested(let index, let identifiers):
            let statement = try prepared(.insertReindexRequest)
            statement.bind(1, Int64(seq.rawValue))
            statement.bind(2, index)
            if let identifiers {
                var writer = BinaryWriter()
                writer.uvarint(UInt64(identifiers.count))
                for identifier in identifiers { writer.string(identifier) }
                statement.bind(3, writer.bytes)
            } else {
                statement.bind(3, nil as String?)
            }
            try statement.execute()
        case .reindexAcknowledged(_, let request):
            let statement = try prepared(.acknowledgeReindex)
            statement.bind(1, Int64(seq.rawValue))
            statement.bind(2, Int64(request))
            try statement.execute()
        }
        return false
    }

    // MARK: - Expiry

    /// Whether anything may have expired at `now`. Conservative: true can mean
    /// the sweep finds nothing (an expiring entry was deleted since), never the
    /// other way round.
    func mayHaveExpired(now: Timestamp) throws -> Bool {
        let earliest: Int64?
        switch expiry.state {
        case .known(let value):
            earliest = value
        case .unknown:
            let statement = try prepared(.earliestExpiry)
            earliest = try statement.step() ? statement.optionalInt64(0) : nil
            statement.reset()
            expiry.state = .known(earliest)
        }
        guard let earliest else { return false }
        return earliest <= now.millisecondsSince1970
    }

    /// After a sweep the earliest date is read again when next needed.
    func forgetEarliestExpiry() {
        expiry.forget()
    }

    private func noteExpiry(_ expires: Int64?) {
        guard let expires, case .known(let earliest) = expiry.state else { return }
        expiry.state = .known(min(earliest ?? expires, expires))
    }

    // MARK: - Items

    /// The text columns of `items`, which the ranked search index reads.
    struct ItemText {
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

        func bind(to statement: DirectStatement, from index: Int32) {
            statement.bind(index, title)
            statement.bind(index + 1, displayName)
            statement.bind(index + 2, contentDescription)
            statement.bind(index + 3, keywords)
        }
    }

    func loadItem(index: String, identifier: String) throws -> SearchableItem? {
        let statement = try prepared(.loadItem)
        defer { statement.reset() }
        statement.bind(1, identifier)
        statement.bind(2, index)
        guard try statement.step() else { return nil }
        let attributes = try EventCodec.decodeAttributes(statement.blob(2))
        return SearchableItem(uniqueIdentifier: identifier, domainIdentifier: statement.text(0), attributes: attributes,
                              expirationDate: statement.optionalInt64(1).map { Timestamp(millisecondsSince1970: $0) })
    }

    /// `attributes` is the item's encoded attribute set.
    private func upsertItem(_ item: SearchableItem, attributes: ArraySlice<UInt8>, index: String, seq: Seq) throws {
        let text = ItemText(item.attributes)
        let expires = item.expirationDate?.millisecondsSince1970
        noteExpiry(expires)
        // Most indexed items are new: try the insert first, and fall back to
        // an update when the identifier is already in this index.
        let insert = try prepared(.insertItem)
        insert.bind(1, item.uniqueIdentifier)
        insert.bind(2, index)
        bindItemColumns(item, text: text, attributes: attributes, expires: expires, seq: seq, to: insert, from: 3)
        try insert.execute()
        if insert.changes > 0 { return }
        let update = try prepared(.updateItem)
        bindItemColumns(item, text: text, attributes: attributes, expires: expires, seq: seq, to: update, from: 1)
        update.bind(11, item.uniqueIdentifier)
        update.bind(12, index)
        try update.execute()
        guard update.changes > 0 else {
            throw DeviceStoreError(.database, "item \(index)/\(item.uniqueIdentifier) was neither inserted nor found")
        }
    }

    /// Binds domain, expires, the four text columns, content_url, ranking_hint,
    /// attributes and changed_seq, in that order, from parameter `first`.
    private func bindItemColumns(_ item: SearchableItem, text: ItemText, attributes: ArraySlice<UInt8>, expires: Int64?, seq: Seq,
                                 to statement: DirectStatement, from first: Int32) {
        statement.bind(first, item.domainIdentifier)
        statement.bind(first + 1, expires)
        text.bind(to: statement, from: first + 2)
        statement.bind(first + 6, item.attributes.contentURL)
        statement.bind(first + 7, item.attributes.rankingHint)
        statement.bind(first + 8, attributes)
        statement.bind(first + 9, Int64(seq.rawValue))
    }

    private func removeItem(index: String, identifier: String) throws {
        let delete = try prepared(.deleteItem)
        delete.bind(1, identifier)
        delete.bind(2, index)
        try delete.execute()
        guard delete.changes > 0 else { return }
        // A strongly related activity becomes ineligible once no item of that
        // identifier remains in any index. Most deleted items have no related
        // activity, and a read finds that for less than an update that
        // changes nothing.
        let related = try prepared(.hasRelatedActivity)
        related.bind(1, identifier)
        let hasRelated = try related.step()
        related.reset()
        guard hasRelated else { return }
        let orphan = try prepared(.orphanRelatedActivities)
        orphan.bind(1, identifier)
        orphan.bind(2, identifier)
        try orphan.execute()
    }

    // MARK: - Activities

    /// The text columns of `activities`, which the ranked search index reads.
    struct ActivityText {
        var title: String?
        var keywords: String?
        var contentDescription: String?

        init(_ activity: UserActivity) {
            title = activity.title ?? activity.attributes.title
            let allKeywords = activity.keywords + (activity.attributes.keywords ?? [])
            keywords = allKeywords.isEmpty ? nil : allKeywords.joined(separator: "\n")
            contentDescription = activity.attributes.contentDescription
        }

        func bind(to statement: DirectStatement, from index: Int32) {
            statement.bind(index, title)
            statement.bind(index + 1, keywords)
            statement.bind(index + 2, contentDescription)
        }
    }

    /// True when the key was new to the activities table.
    private func recordActivity(_ activity: UserActivity, key: String, encoded: [UInt8], seq: Seq, time: Timestamp) throws -> Bool {
        let text = ActivityText(activity)
        let expires = activity.expirationDate?.millisecondsSince1970
        noteExpiry(expires)
        // Binds activity_type through eligible_public (13 columns) from `first`.
        func bindColumns(_ statement: DirectStatement, from first: Int32) {
            statement.bind(first, activity.activityType)
            text.bind(to: statement, from: first + 1)
            statement.bind(first + 4, activity.webpageURL)
            statement.bind(first + 5, activity.relatedUniqueIdentifier)
            statement.bind(first + 6, activity.weakRelatedUniqueIdentifier)
            statement.bind(first + 7, activity.domainIdentifier)
            statement.bind(first + 8, activity.persistentIdentifier)
            statement.bind(first + 9, expires)
            statement.bind(first + 10, activity.eligibleForSearch)
            statement.bind(first + 11, activity.eligibleForHandoff)
            statement.bind(first + 12, activity.eligibleForPublicIndexing)
        }
        let insert = try prepared(.insertActivity)
        bindColumns(insert, from: 1)
        insert.bind(14, key)
        insert.bind(15, time.millisecondsSince1970)
        insert.bind(16, time.millisecondsSince1970)
        insert.bind(17, encoded)
        insert.bind(18, Int64(seq.rawValue))
        try insert.execute()
        if insert.changes > 0 { return true }
        let update = try prepared(.updateActivity)
        bindColumns(update, from: 1)
        update.bind(14, time.millisecondsSince1970)
        update.bind(15, encoded)
        update.bind(16, Int64(seq.rawValue))
        update.bind(17, key)
        try update.execute()
        guard update.changes > 0 else { throw DeviceStoreError(.database, "activity \(key) was neither inserted nor found") }
        return false
    }

    private func removeActivity(key: String) throws {
        let delete = try prepared(.deleteActivity)
        delete.bind(1, key)
        try delete.execute()
    }

    // MARK: - Statements

    /// A statement of every call's path is kept for the connection's life; one
    /// of a rarer event is compiled for each use (`SQL.isKept`), except where
    /// the slots keep those too (`StatementSlots.keepsRare`: a one-off fold,
    /// a pooled connection).
    private func prepared(_ sql: SQL) throws -> DirectStatement {
        guard sql.isKept || statements.keepsRare else { return try DirectStatement(owned: db, sql.text) }
        return try statements.statement(sql.rawValue, db, sql.text)
    }

    static var statementCount: Int { SQL.allCases.count }

    private enum SQL: Int, CaseIterable {
        case loadItem, insertItem, updateItem, deleteItem, hasRelatedActivity, orphanRelatedActivities
        case insertActivity, updateActivity, deleteActivity
        case upsertClientState, countShown, countEngaged, earliestExpiry
        case insertReindexRequest, acknowledgeReindex

        /// Whether the connection keeps the statement: the statements of rarer
        /// events (a strongly related item's deletion, a reindex request and
        /// its acknowledgement) are compiled when used, as in the privacy
        /// projection.
        var isKept: Bool {
            switch self {
            case .orphanRelatedActivities, .insertReindexRequest, .acknowledgeReindex: false
            default: true
            }
        }

        var text: String {
            switch self {
            case .loadItem:
                "SELECT domain, expires, attributes FROM items WHERE item_id = ? AND index_name = ?"
            case .insertItem:
                """
                INSERT INTO items (item_id, index_name, domain, expires, title, display_name, content_description,
                keywords, content_url, ranking_hint, attributes, changed_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (item_id, index_name) DO NOTHING
                """
            case .updateItem:
                """
                UPDATE items SET domain = ?, expires = ?, title = ?, display_name = ?, content_description = ?,
                keywords = ?, content_url = ?, ranking_hint = ?, attributes = ?, changed_seq = ?
                WHERE item_id = ? AND index_name = ?
                """
            case .deleteItem:
                "DELETE FROM items WHERE item_id = ? AND index_name = ?"
            case .hasRelatedActivity:
                "SELECT 1 FROM activities WHERE related = ? AND related_deleted = 0 LIMIT 1"
            case .orphanRelatedActivities:
                """
                UPDATE activities SET related_deleted = 1
                WHERE related = ? AND related_deleted = 0 AND NOT EXISTS (SELECT 1 FROM items WHERE item_id = ?)
                """
            case .insertActivity:
                """
                INSERT INTO activities (activity_type, title, keywords, content_description, webpage_url, related,
                weak_related, domain, persistent_id, expires, eligible_search, eligible_handoff, eligible_public,
                activity_key, related_deleted, view_count, first_seen, last_seen, payload, changed_seq)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 1, ?, ?, ?, ?)
                ON CONFLICT (activity_key) DO NOTHING
                """
            case .updateActivity:
                """
                UPDATE activities SET activity_type = ?, title = ?, keywords = ?, content_description = ?,
                webpage_url = ?, related = ?, weak_related = ?, domain = ?, persistent_id = ?, expires = ?,
                eligible_search = ?, eligible_handoff = ?, eligible_public = ?, related_deleted = 0,
                view_count = view_count + 1, last_seen = ?, payload = ?, changed_seq = ? WHERE activity_key = ?
                """
            case .deleteActivity:
                "DELETE FROM activities WHERE activity_key = ?"
            case .upsertClientState:
                """
                INSERT INTO client_states (index_name, state, changed_seq) VALUES (?, ?, ?)
                ON CONFLICT (index_name) DO UPDATE SET state = excluded.state, changed_seq = excluded.changed_seq
                """
            case .countShown:
                """
                INSERT INTO engagement (ref, shown, engaged) VALUES (?, 1, 0)
                ON CONFLICT (ref) DO UPDATE SET shown = shown + 1
                """
            case .countEngaged:
                """
                INSERT INTO engagement (ref, shown, engaged) VALUES (?, 0, 1)
                ON CONFLICT (ref) DO UPDATE SET engaged = engaged + 1
                """
            case .insertReindexRequest:
                "INSERT INTO reindex_requests (seq, index_name, identifiers) VALUES (?, ?, ?)"
            case .acknowledgeReindex:
                "UPDATE reindex_requests SET acknowledged_seq = ? WHERE seq = ? AND acknowledged_seq IS NULL"
            case .earliestExpiry:
                """
                SELECT min(expires) FROM (
                    SELECT min(expires) AS expires FROM items WHERE expires IS NOT NULL
                    UNION ALL SELECT min(expires) FROM activities WHERE expires IS NOT NULL)
                """
            }
        }
    }
}
