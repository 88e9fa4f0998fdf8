import Foundation
import GRDB
import IndexModel
import IndexQuery

/// An item a query found, with the named index that holds it.
public struct QueryMatch: Hashable, Sendable {
    public var index: String
    public var item: SearchableItem
}

extension DeviceStore {
    /// How the query compiler sees the `items` projection: every attribute in
    /// the encoded `attributes` set, the text columns and rankingHint as
    /// columns, and the item's identifier, domain and expiration date.
    static let itemsQueryTarget = SQLTarget(attributesColumn: "attributes", columns: [
        "title": .init("title", .text),
        "displayName": .init("display_name", .text),
        "contentDescription": .init("content_description", .text),
        "contentURL": .init("content_url", .text),
        "rankingHint": .init("ranking_hint", .number),
        "uniqueIdentifier": .init("item_id", .text),
        "domainIdentifier": .init("domain", .text),
        "expirationDate": .init("expires", .date),
    ])

    /// The items a Core Spotlight query matches (CSSearchQuery), ordered by index
    /// and identifier. `$time` values are resolved once against the store's
    /// clock. Expired items are never returned, even before their expiry is
    /// journaled. `index` restricts the search to one named index.
    ///
    /// The run spends `budget` (`QueryBudget`); past it, or past its
    /// deadline, it throws `queryTooExpensive` and returns nothing.
    public func query(_ query: QueryExpression, index: String? = nil, limit: Int? = nil,
                      budget: QueryBudget = QueryBudget()) throws(DeviceStoreError) -> [QueryMatch] {
        let now = clock.now()
        let compiled = CompiledQuery(query, now: now)
        let condition = QuerySQLCompiler.compile(compiled, target: DeviceStore.itemsQueryTarget)
        var sql = """
            SELECT index_name, item_id, domain, expires, attributes FROM items
            WHERE (expires IS NULL OR expires > ?) AND \(condition.sql)
            """
        var arguments: [any DatabaseValueConvertible] = [now.millisecondsSince1970]
        arguments += condition.arguments.map(\.databaseValue)
        if let index {
            sql += " AND index_name = ?"
            arguments.append(index)
        }
        sql += " ORDER BY index_name, item_id"
        if let limit {
            sql += " LIMIT ?"
            arguments.append(max(limit, 0))
        }
        do {
            return try read { db in
                try queryFunctions.spending(budget, on: condition) {
                    try Row.fetchAll(db, sql: sql, arguments: StatementArguments(arguments)).map { row in
                        QueryMatch(index: try StoredValue.column(row, 0, "items.index_name"), item: try StoredValue.item(row, from: 1))
                    }
                }
            }
        } catch {
            // The functions' stop reaches here as SQLite's error.
            if let stop = budget.exhaustion { throw DeviceStoreError(.queryTooExpensive, stop.description) }
            throw error
        }
    }
}

extension SQLCondition.Argument {
    var databaseValue: any DatabaseValueConvertible {
        switch self {
        case .text(let text): text
        case .integer(let integer): integer
        case .real(let real): real
        }
    }
}
