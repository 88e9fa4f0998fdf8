import GRDB

/// Transactions whose BEGIN and COMMIT are prepared once per connection and
/// stepped directly.
///
/// GRDB's `read` and `write` compile `BEGIN` and `COMMIT` on every call, and
/// its `read` also brackets the body with `PRAGMA query_only = 1` and `= 0`;
/// SQLite expires every prepared statement of the connection after such a
/// pragma, so each cached statement would be compiled again after every read:
/// in the simulator, where thousands of small stores each take a few hundred
/// calls, SQLite's parser would take a large share of the run. Executing the
/// cached BEGIN and COMMIT through GRDB still costs a cache lookup by their
/// SQL and its bookkeeping around every statement, a measurable share of a
/// 10,000-device run, so they are stepped with the C API, and an in-memory
/// store keeps its own (`TransactionStatements`).
extension DatabaseQueue {
    /// Runs `body` in a deferred transaction, so every statement in it sees the
    /// same snapshot of the database, and commits nothing. Reads here are
    /// internal and written as reads; a debug build checks that none of them
    /// changed a row. `statements` are this queue's, if it keeps them.
    public func snapshotRead<T>(_ statements: TransactionStatements? = nil, _ body: (Database) throws -> T) throws -> T {
        try writeWithoutTransaction { db in
            let changesBefore = db.totalChangesCount
            defer { assert(db.totalChangesCount == changesBefore, "a snapshot read changed the database") }
            return try db.inCachedTransaction(.beginDeferred, statements, body)
        }
    }

    /// Copies this database into `destination` with SQLite's backup API,
    /// from a snapshot read. GRDB's `backup(to:)` reads through its `read`,
    /// whose `PRAGMA query_only` made the store compile every statement again
    /// after each backup.
    public func backupFromSnapshot(to destination: DatabaseQueue) throws {
        try backupFromSnapshot(to: destination) { _ in }
    }

    /// Copies this database into `destination` as `backupFromSnapshot(to:)`
    /// does, and runs `body` on this database in the same snapshot, so what it
    /// reads describes the copy exactly. Reading here rather than from the
    /// copy spares a new connection parsing the schema and compiling its
    /// statements.
    public func backupFromSnapshot<T>(to destination: DatabaseQueue, reading body: (Database) throws -> T) throws -> T {
        try destination.writeWithoutTransaction { destinationDB in
            try snapshotRead { db in
                try db.backup(to: destinationDB)
                return try body(db)
            }
        }
    }

    /// Runs `body` in an immediate transaction and commits it, or rolls it
    /// back when `body` throws. `statements` are this queue's, if it keeps them.
    public func cachedWrite<T>(_ statements: TransactionStatements? = nil, _ body: (Database) throws -> T) throws -> T {
        try writeWithoutTransaction { db in
            try db.inCachedTransaction(.beginImmediate, statements, body)
        }
    }
}

/// A connection's BEGIN and COMMIT statements.
///
/// They are stepped with the C API, so GRDB does not see them execute. It
/// needs not: it asks SQLite whether a transaction is open
/// (`isInsideTransaction`), and what else it tracks around a statement serves
/// transaction observers and `transactionDate`, which Sightline does not use.
///
/// Owned ones (an in-memory device store's) are prepared outside GRDB and
/// kept here for the connection's life. Others are taken from GRDB's cache
/// at each transaction and not kept: a connection that is closed explicitly
/// (a restored store, a checked snapshot) must hold no statement of its own
/// when it closes.
///
/// Only touched inside its connection's transactions, which the connection's
/// queue runs one at a time; hence unchecked.
public final class TransactionStatements: @unchecked Sendable {
    fileprivate enum Kind: Int, CaseIterable {
        case beginDeferred, beginImmediate, commit

        var sql: String {
            switch self {
            case .beginDeferred: "BEGIN DEFERRED TRANSACTION"
            case .beginImmediate: "BEGIN IMMEDIATE TRANSACTION"
            case .commit: "COMMIT TRANSACTION"
            }
        }
    }

    /// Nil unless owned.
    private let slots: StatementSlots?

    /// `owned`: the statements are prepared outside GRDB's cache and kept here
    /// for the connection's life, for a connection that is never closed
    /// explicitly. Otherwise each transaction takes them from GRDB's cache.
    public init(owned: Bool = false) {
        slots = owned ? StatementSlots(count: Kind.allCases.count, owned: true) : nil
    }

    fileprivate func statement(_ kind: Kind, _ db: Database) throws -> DirectStatement {
        try slots?.statement(kind.rawValue, db, kind.sql) ?? DirectStatement(db, kind.sql)
    }
}

extension Database {
    fileprivate func inCachedTransaction<T>(_ begin: TransactionStatements.Kind, _ statements: TransactionStatements?,
                                            _ body: (Database) throws -> T) throws -> T {
        if isInsideTransaction { return try body(self) }
        func statement(_ kind: TransactionStatements.Kind) throws -> DirectStatement {
            try statements?.statement(kind, self) ?? DirectStatement(self, kind.sql)
        }
        try statement(begin).execute()
        do {
            let result = try body(self)
            try statement(.commit).execute()
            return result
        } catch {
            try? rollback()
            throw error
        }
    }
}
