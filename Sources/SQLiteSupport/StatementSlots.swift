import GRDB

/// Prepared statements kept for one connection across its transactions.
///
/// Looking statements up in GRDB's cache hashes every statement's SQL each
/// time, a noticeable share of a call's cost in the simulator. A slot holds its
/// statement for the connection's life, so it also survives GRDB clearing its
/// cache after schema changes (SQLite recompiles a statement whose schema
/// changed when it next steps).
///
/// Only touched inside its connection's transactions, which the connection's
/// queue runs one at a time; hence unchecked.
public final class StatementSlots: @unchecked Sendable {
    private var slots: [DirectStatement?]
    private let owned: Bool

    /// `owned`: the slots prepare their statements outside GRDB's cache
    /// (`DirectStatement.init(owned:_:)`), for a connection that is never
    /// closed explicitly, only released, and whose statements are all
    /// kept here for its life. Otherwise they come from GRDB's cache, where a
    /// short-lived set of slots finds what the connection prepared before.
    public init(count: Int, owned: Bool = false) {
        slots = Array(repeating: nil, count: count)
        self.owned = owned
    }

    /// The statement in slot `index`, prepared from `sql` on `db` the first time.
    public func statement(_ index: Int, _ db: Database, _ sql: @autoclosure () -> String) throws -> DirectStatement {
        if let statement = slots[index] { return statement }
        let statement = owned ? try DirectStatement(owned: db, sql()) : try DirectStatement(db, sql())
        slots[index] = statement
        return statement
    }
}
