import GRDB

/// Prepared statements kept for one connection across its transactions.
///
/// Each call used to look its statements up in GRDB's cache, hashing every
/// statement's SQL each time: a tenth of a call's cost in the simulator. A
/// slot holds its statement for the connection's life, so it also survives
/// GRDB clearing its cache after schema changes (SQLite recompiles a
/// statement whose schema changed when it next steps).
final class StatementSlots {
    private var slots: [DirectStatement?]

    init(count: Int) {
        slots = Array(repeating: nil, count: count)
    }

    /// The statement in slot `index`, prepared by `make` the first time.
    func statement(_ index: Int, _ make: () throws -> DirectStatement) rethrows -> DirectStatement {
        if let statement = slots[index] { return statement }
        let statement = try make()
        slots[index] = statement
        return statement
    }
}

/// What one store's connection keeps for its calls' write path: the
/// journal's, projector's and privacy projection's statements, the sync
/// state's (read by acks and status reads too), and two memos: the
/// projections' earliest expiry date and the journal's head.
///
/// Only touched inside the store's transactions, which its queue runs one at
/// a time; hence unchecked.
final class WritePath: @unchecked Sendable {
    let journal = StatementSlots(count: JournalAppender.statementCount)
    let projector = StatementSlots(count: Projector.statementCount)
    let privacy = StatementSlots(count: PrivacyProjection.statementCount)
    let outbox = StatementSlots(count: OutboxState.Statement.allCases.count)
    let expiry = Projector.EarliestExpiry()
    /// The journal's last row after the last append on this path; nil when
    /// not known. `DeviceStore.write` forgets it like the expiry date.
    var head: JournalAppender.Head?

    init() {}
}
