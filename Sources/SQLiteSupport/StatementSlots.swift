import GRDB

/// Prepared statements kept for one connection across its transactions.
///
/// A device store's calls used to look their statements up in GRDB's cache,
/// hashing every statement's SQL each time: a tenth of a call's cost in the
/// simulator. A slot holds its statement for the connection's life, so it
/// also survives GRDB clearing its cache after schema changes (SQLite
/// recompiles a statement whose schema changed when it next steps).
///
/// Only touched inside its connection's transactions, which the connection's
/// queue runs one at a time; hence unchecked.
public final class StatementSlots: @unchecked Sendable {
    private var slots: [DirectStatement?]

    public init(count: Int) {
        slots = Array(repeating: nil, count: count)
    }

    /// The statement in slot `index`, prepared by `make` the first time.
    public func statement(_ index: Int, _ make: () throws -> DirectStatement) rethrows -> DirectStatement {
        if let statement = slots[index] { return statement }
        let statement = try make()
        slots[index] = statement
        return statement
    }
}
