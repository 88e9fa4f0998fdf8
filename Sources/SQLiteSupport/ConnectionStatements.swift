import GRDB

/// The prepared statements one connection keeps across its transactions: its
/// BEGIN and COMMIT, and the hot paths' statements in numbered slots, in
/// groups (one per user of the connection, each numbering its slots from 0:
/// `group(_:)`). A statement is taken only inside one of the connection's
/// transactions (`DatabaseQueue.cachedWrite` and `snapshotRead` with these
/// statements), which its queue runs one at a time; hence unchecked.
///
/// Looking statements up in GRDB's cache hashes every statement's SQL each
/// time: a tenth of a call's cost in the simulator. A slot holds its
/// statement for the connection's life, so it also survives GRDB clearing its
/// cache after schema changes (SQLite recompiles a statement whose schema
/// changed when it next steps).
///
/// Owned statements are prepared outside GRDB's cache
/// (`DirectStatement.init(owned:_:)`) and kept only here, BEGIN and COMMIT
/// too: for a connection that is never closed explicitly, only released (an
/// in-memory device store; a simulation keeps 10,000). Otherwise the slots
/// take their statements from GRDB's cache, where a one-off set finds what
/// the connection prepared before, and BEGIN and COMMIT are taken from it at
/// each transaction and not kept: a connection that is closed explicitly (a
/// restored store, a checked snapshot) must hold no statement of its own
/// when it closes.
public final class ConnectionStatements: @unchecked Sendable {
    fileprivate enum Transaction: Int, CaseIterable {
        case beginDeferred, beginImmediate, commit

        var sql: String {
            switch self {
            case .beginDeferred: "BEGIN DEFERRED TRANSACTION"
            case .beginImmediate: "BEGIN IMMEDIATE TRANSACTION"
            case .commit: "COMMIT TRANSACTION"
            }
        }
    }

    private var slots: [DirectStatement?]
    private let owned: Bool
    /// Where each group's slots begin; BEGIN and COMMIT come after them.
    private let offsets: [Int]
    private let transactionsAt: Int
    /// Whether the groups keep the statements of rarer events too (`StatementSlots.keepsRare`).
    private let keepsRare: Bool

    /// Room for groups of `groups[i]` statements each. `keepsRare`: the
    /// connection serves many stores in turn, so its groups keep the
    /// statements of rarer events as well.
    public init(groups: [Int], owned: Bool = false, keepsRare: Bool = false) {
        var offsets: [Int] = []
        var next = 0
        for count in groups {
            offsets.append(next)
            next += count
        }
        self.offsets = offsets
        transactionsAt = next
        slots = Array(repeating: nil, count: next + Transaction.allCases.count)
        self.owned = owned
        self.keepsRare = keepsRare
    }

    /// Lets every kept statement go (an owned one is finalized once no copy
    /// of it is left); each is prepared again when next taken. Called on
    /// the connection's queue, outside its transactions.
    public func releaseAll() {
        for index in slots.indices { slots[index] = nil }
    }

    /// The slots of group `index`.
    public func group(_ index: Int) -> StatementSlots {
        StatementSlots(kept: self, offset: offsets[index], count: (offsets.dropFirst(index + 1).first ?? transactionsAt) - offsets[index],
                       keepsRare: keepsRare)
    }

    fileprivate func statement(_ slot: Int, _ db: Database, _ sql: () -> String) throws -> DirectStatement {
        assert(db.isInsideTransaction, "a kept statement is taken only inside its connection's transaction")
        if let statement = slots[slot] { return statement }
        let statement = owned ? try DirectStatement(owned: db, sql()) : try DirectStatement(db, sql())
        slots[slot] = statement
        return statement
    }

    fileprivate func transaction(_ kind: Transaction, _ db: Database) throws -> DirectStatement {
        guard owned else { return try DirectStatement(db, kind.sql) }
        let slot = transactionsAt + kind.rawValue
        if let statement = slots[slot] { return statement }
        let statement = try DirectStatement(owned: db, kind.sql)
        slots[slot] = statement
        return statement
    }
}

/// One group of a connection's kept statements (`ConnectionStatements`),
/// numbered from 0 by the code that uses them.
public struct StatementSlots: Sendable {
    private let kept: ConnectionStatements
    private let offset: Int
    private let count: Int
    /// Whether a statement of a rarer event is kept here as well, which a
    /// store's own connection leaves to be compiled at each use so that
    /// thousands of idle stores do not hold it. Slots that serve one
    /// transaction and go with it (`init(count:)`) keep it: a restore's
    /// replay meets such events thousands of times (items with related
    /// activities deleted), and compiles each of their statements once. So
    /// do the slots of a connection that serves many stores in turn
    /// (`ConnectionStatements(groups:owned:keepsRare:)`): there one copy
    /// serves them all.
    public let keepsRare: Bool

    fileprivate init(kept: ConnectionStatements, offset: Int, count: Int, keepsRare: Bool) {
        self.kept = kept
        self.offset = offset
        self.count = count
        self.keepsRare = keepsRare
    }

    /// `count` slots of a connection's own, for a one-off transaction that
    /// keeps nothing after it (a rebuild, a replay).
    public init(count: Int) {
        self.init(kept: ConnectionStatements(groups: [count]), offset: 0, count: count, keepsRare: true)
    }

    /// The statement in slot `index`, prepared from `sql` on `db` the first
    /// time. `db` must be inside a transaction of the connection.
    public func statement(_ index: Int, _ db: Database, _ sql: @autoclosure () -> String) throws -> DirectStatement {
        precondition(index >= 0 && index < count, "slot \(index) of a group of \(count)")
        return try kept.statement(offset + index, db, sql)
    }
}

/// Transactions whose BEGIN and COMMIT are stepped with the C API.
///
/// GRDB's `read` and `write` compile `BEGIN` and `COMMIT` on every call, and
/// its `read` also brackets the body with `PRAGMA query_only = 1` and `= 0`;
/// SQLite expires every prepared statement of the connection after such a
/// pragma, so each cached statement would be compiled again after every read:
/// in the simulator, where thousands of small stores each take a few hundred
/// calls, SQLite's parser would take a large share of the run. Executing the
/// cached BEGIN and COMMIT through GRDB still costs a cache lookup by their
/// SQL and its bookkeeping around every statement, a measurable share of a
/// 10,000-device run.
///
/// GRDB does not see these statements execute, and needs not: it asks SQLite
/// whether a transaction is open (`isInsideTransaction`), and what else it
/// tracks around a statement serves transaction observers and
/// `transactionDate`, which Sightline does not use.
extension DatabaseQueue {
    /// Runs `body` in a deferred transaction, so every statement in it sees the
    /// same snapshot of the database, and commits nothing. Reads here are
    /// internal and written as reads; a debug build checks that none of them
    /// changed a row. `statements` are this queue's, if it keeps them.
    public func snapshotRead<T>(_ statements: ConnectionStatements? = nil, _ body: (Database) throws -> T) throws -> T {
        try writeWithoutTransaction { db in
            let changesBefore = db.totalChangesCount
            defer { assert(db.totalChangesCount == changesBefore, "a snapshot read changed the database") }
            return try db.inCachedTransaction(.beginDeferred, statements, body)
        }
    }

    /// Runs `body` in an immediate transaction and commits it, or rolls it
    /// back when `body` throws. `statements` are this queue's, if it keeps them.
    public func cachedWrite<T>(_ statements: ConnectionStatements? = nil, _ body: (Database) throws -> T) throws -> T {
        try writeWithoutTransaction { db in
            try db.inCachedTransaction(.beginImmediate, statements, body)
        }
    }
}

extension Database {
    fileprivate func inCachedTransaction<T>(_ begin: ConnectionStatements.Transaction, _ statements: ConnectionStatements?,
                                            _ body: (Database) throws -> T) throws -> T {
        if isInsideTransaction { return try body(self) }
        func statement(_ kind: ConnectionStatements.Transaction) throws -> DirectStatement {
            try statements?.transaction(kind, self) ?? DirectStatement(self, kind.sql)
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
