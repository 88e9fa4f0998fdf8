import Foundation
import GRDB
import IndexModel
import SQLiteSupport

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
    private var statements: StatementSlots { appender.path.executor }

    /// Journals the removal of every item and activity whose expiration date is at
    /// or before `now`. Runs at the start of each call so expiry is journaled by
    /// the next write after the clock passes it; search hides expired entries at once.
    mutating func expire(now: Timestamp) throws {
        guard try appender.projections.mayHaveExpired(now: now) else { return }
        defer { appender.projections.forgetEarliestExpiry() }
        let items = try rows(.expiredItems, now.millisecondsSince1970) { statement throws(DeviceStoreError) in
            (try StoredValue.text(statement, 0, "items.index_name"), try StoredValue.text(statement, 1, "items.item_id"))
        }
        for (index, identifier) in items {
            try appender.append(.itemExpired(index: index, identifier: identifier))
            outcome.expired += 1
        }
        for key in try rows(.expiredActivities, now.millisecondsSince1970, { statement throws(DeviceStoreError) in
            try StoredValue.text(statement, 0, "activities.activity_key")
        }) {
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
                for identifier in try texts(.itemsOfDomain, index, domain, domain + ".", domain + "/", what: "items.item_id") {
                    try appender.append(.itemDeleted(index: index, identifier: identifier, cause: .domain(domain)))
                    outcome.deleted += 1
                }
            }
        case .deleteAll(let index):
            for identifier in try texts(.itemsOfIndex, index, what: "items.item_id") {
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
                for key in try texts(.activitiesOfDomain, domain, domain + ".", domain + "/", what: "activities.activity_key") {
                    try appender.append(.activityDeleted(key: key, cause: .domain(domain)))
                    outcome.deleted += 1
                }
            }
        case .deleteAllActivities:
            for key in try texts(.allActivities, what: "activities.activity_key") {
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
        try exists(.itemExists, identifier, index)
    }

    private func activityExists(key: String) throws -> Bool {
        try exists(.activityExists, key)
    }

    private func clientState(index: String) throws -> [UInt8]? {
        let statement = try prepared(.clientState)
        defer { statement.reset() }
        statement.bind(1, index)
        guard try statement.step(), !statement.isNull(0) else { return nil }
        return statement.blob(0)
    }

    private func describe(_ state: [UInt8]?) -> String {
        guard let state else { return "none" }
        return "\"" + Data(state).base64EncodedString() + "\""
    }

    // MARK: - Statements

    static var statementCount: Int { SQL.allCases.count }

    /// A statement of every call's path is kept for the connection's life;
    /// one of a rarer call (a deletion of activities, or by domain, or of
    /// everything) is compiled for each use (`SQL.isKept`), except where the
    /// slots keep those too (`StatementSlots.keepsRare`).
    private func prepared(_ sql: SQL) throws -> DirectStatement {
        guard sql.isKept || statements.keepsRare else { return try DirectStatement(owned: db, sql.text) }
        return try statements.statement(sql.rawValue, db, sql.text)
    }

    private func bound(_ sql: SQL, _ arguments: [String]) throws -> DirectStatement {
        let statement = try prepared(sql)
        for (index, argument) in arguments.enumerated() { statement.bind(Int32(index + 1), argument) }
        return statement
    }

    private func exists(_ sql: SQL, _ arguments: String...) throws -> Bool {
        let statement = try bound(sql, arguments)
        defer { statement.reset() }
        return try statement.step() && statement.int64(0) != 0
    }

    /// The first column of every row, a text, read as `what`.
    private func texts(_ sql: SQL, _ arguments: String..., what: String) throws -> [String] {
        let statement = try bound(sql, arguments)
        defer { statement.reset() }
        var values: [String] = []
        while try statement.step() { values.append(try StoredValue.text(statement, 0, what)) }
        return values
    }

    /// What `read` makes of every row of `sql`, whose one parameter is a time.
    private func rows<Value>(_ sql: SQL, _ time: Int64, _ read: (DirectStatement) throws(DeviceStoreError) -> Value) throws -> [Value] {
        let statement = try prepared(sql)
        defer { statement.reset() }
        statement.bind(1, time)
        var values: [Value] = []
        while try statement.step() { values.append(try read(statement)) }
        return values
    }

    private enum SQL: Int, CaseIterable {
        case itemExists, activityExists, clientState, expiredItems, expiredActivities
        case itemsOfDomain, itemsOfIndex, activitiesOfDomain, allActivities

        var isKept: Bool {
            switch self {
            case .itemExists, .clientState, .expiredItems, .expiredActivities: true
            case .activityExists, .itemsOfDomain, .itemsOfIndex, .activitiesOfDomain, .allActivities: false
            }
        }

        var text: String {
            switch self {
            case .itemExists: "SELECT EXISTS (SELECT 1 FROM items WHERE item_id = ? AND index_name = ?)"
            case .activityExists: "SELECT EXISTS (SELECT 1 FROM activities WHERE activity_key = ?)"
            case .clientState: "SELECT state FROM client_states WHERE index_name = ?"
            case .expiredItems:
                "SELECT index_name, item_id FROM items WHERE expires IS NOT NULL AND expires <= ? ORDER BY expires, rowid"
            case .expiredActivities:
                "SELECT activity_key FROM activities WHERE expires IS NOT NULL AND expires <= ? ORDER BY expires, rowid"
            case .itemsOfDomain:
                "SELECT item_id FROM items WHERE index_name = ? AND (domain = ? OR (domain >= ? AND domain < ?)) ORDER BY rowid"
            case .itemsOfIndex: "SELECT item_id FROM items WHERE index_name = ? ORDER BY rowid"
            case .activitiesOfDomain:
                "SELECT activity_key FROM activities WHERE domain = ? OR (domain >= ? AND domain < ?) ORDER BY rowid"
            case .allActivities: "SELECT activity_key FROM activities ORDER BY rowid"
            }
        }
    }
}
