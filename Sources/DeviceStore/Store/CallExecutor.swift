import Foundation
import GRDB
import IndexModel

/// Turns one validated API call into journal events inside a write transaction.
/// It reads the projections to decide which events a call implies (which items
/// a domain deletion removes, whether an updated item exists) and appends them
/// through the `JournalAppender`, which folds each into the projections.
struct CallExecutor {
    let appender: JournalAppender
    var outcome: CallOutcome

    init(appender: JournalAppender) {
        self.appender = appender
        outcome = CallOutcome(call: appender.call)
    }

    private var db: Database { appender.db }

    /// Journals the removal of every item and activity whose expiration date is at
    /// or before `now`. Runs at the start of each call so expiry is journaled by
    /// the next write after the clock passes it; search hides expired entries at once.
    mutating func expire(now: Timestamp) throws {
        guard try appender.projections.mayHaveExpired(now: now) else { return }
        defer { appender.projections.forgetEarliestExpiry() }
        let items = try Row.fetchAll(db.cachedStatement(sql: """
            SELECT index_name, item_id FROM items WHERE expires IS NOT NULL AND expires <= ? ORDER BY expires, rowid
            """), arguments: [now.millisecondsSince1970])
        for row in items {
            try appender.append(.itemExpired(index: StoredValue.column(row, 0, "items.index_name"),
                                             identifier: StoredValue.column(row, 1, "items.item_id")))
            outcome.expired += 1
        }
        let activities = try String.fetchAll(db.cachedStatement(sql: """
            SELECT activity_key FROM activities WHERE expires IS NOT NULL AND expires <= ? ORDER BY expires, rowid
            """), arguments: [now.millisecondsSince1970])
        for key in activities {
            try appender.append(.activityExpired(key: key))
            outcome.expired += 1
        }
    }

    mutating func run(_ operation: AppOperation) throws {
        switch operation {
        case .index(let index, let items):
            for item in items {
                try appender.append(.itemIndexed(index: index, item: item))
                outcome.indexed += 1
            }
        case .update(let index, let updates):
            for update in updates {
                if try itemExists(index: index, identifier: update.uniqueIdentifier) {
                    try appender.append(.itemUpdated(index: index, update: update))
                    outcome.updated += 1
                } else {
                    outcome.ignored += 1
                }
            }
        case .delete(let index, let identifiers):
            for identifier in identifiers where try itemExists(index: index, identifier: identifier) {
                try appender.append(.itemDeleted(index: index, identifier: identifier, cause: .identifier))
                outcome.deleted += 1
            }
        case .deleteDomains(let index, let domains):
            for domain in domains {
                let identifiers = try String.fetchAll(db.makeStatement(sql: """
                    SELECT item_id FROM items WHERE index_name = ?
                    AND (domain = ? OR (domain >= ? AND domain < ?)) ORDER BY rowid
                    """), arguments: [index, domain, domain + ".", domain + "/"])
                for identifier in identifiers {
                    try appender.append(.itemDeleted(index: index, identifier: identifier, cause: .domain(domain)))
                    outcome.deleted += 1
                }
            }
        case .deleteAll(let index):
            let identifiers = try String.fetchAll(db.makeStatement(sql: """
                SELECT item_id FROM items WHERE index_name = ? ORDER BY rowid
                """), arguments: [index])
            for identifier in identifiers {
                try appender.append(.itemDeleted(index: index, identifier: identifier, cause: .all))
                outcome.deleted += 1
            }
        case .batch(let batch):
            if case .expecting(let expected) = batch.condition {
                let current = try clientState(index: batch.index)
                guard current == expected else {
                    throw DeviceStoreError(.clientStateMismatch, """
                        batch for index "\(batch.index)" expected client state \(describe(expected)) \
                        but the index has \(describe(current)); nothing was committed
                        """)
                }
            }
            for inner in batch.operations {
                try run(inner)
            }
            try appender.append(.clientStateSet(index: batch.index, state: batch.clientState))
            outcome.clientStates += 1
        case .activity(let activity):
            try appender.append(.activityRecorded(activity))
            outcome.activities += 1
        case .deleteActivities(let identifiers):
            for identifier in identifiers {
                let key = UserActivity.key(persistentIdentifier: identifier)
                if try activityExists(key: key) {
                    try appender.append(.activityDeleted(key: key, cause: .identifier))
                    outcome.deleted += 1
                }
            }
        case .deleteActivityDomains(let domains):
            for domain in domains {
                let keys = try String.fetchAll(db.makeStatement(sql: """
                    SELECT activity_key FROM activities WHERE domain = ? OR (domain >= ? AND domain < ?) ORDER BY rowid
                    """), arguments: [domain, domain + ".", domain + "/"])
                for key in keys {
                    try appender.append(.activityDeleted(key: key, cause: .domain(domain)))
                    outcome.deleted += 1
                }
            }
        case .deleteAllActivities:
            for key in try String.fetchAll(db, sql: "SELECT activity_key FROM activities ORDER BY rowid") {
                try appender.append(.activityDeleted(key: key, cause: .all))
                outcome.deleted += 1
            }
        case .shown(let ref):
            try appender.append(.resultShown(ref: ref))
            outcome.engagements += 1
        case .engage(let ref):
            try appender.append(.resultEngaged(ref: ref))
            outcome.engagements += 1
        case .advanceClock:
            // The store moves its clock before the transaction; the expiry sweep
            // that follows is this call's only effect.
            break
        }
    }

    private func itemExists(index: String, identifier: String) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: """
            SELECT EXISTS (SELECT 1 FROM items WHERE item_id = ? AND index_name = ?)
            """), arguments: [identifier, index]) ?? false
    }

    private func activityExists(key: String) throws -> Bool {
        try Bool.fetchOne(db.makeStatement(sql: "SELECT EXISTS (SELECT 1 FROM activities WHERE activity_key = ?)"),
                          arguments: [key]) ?? false
    }

    private func clientState(index: String) throws -> [UInt8]? {
        try Data.fetchOne(db.cachedStatement(sql: "SELECT state FROM client_states WHERE index_name = ?"),
                          arguments: [index]).map { [UInt8]($0) }
    }

    private func describe(_ state: [UInt8]?) -> String {
        guard let state else { return "none" }
        return "\"" + Data(state).base64EncodedString() + "\""
    }
}
