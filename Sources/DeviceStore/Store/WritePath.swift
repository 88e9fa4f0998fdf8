import GRDB
import SQLiteSupport
import SyncWire

/// What a connection keeps for its stores' write path: the call executor's,
/// journal's, projector's and privacy projection's statements, the sync
/// state's (read by acks and status reads too), BEGIN and COMMIT; and, for
/// the store whose transaction it runs, that store's memos (`WriteMemos`).
///
/// Only touched inside the store's transactions, which its queue runs one at
/// a time; hence unchecked.
final class WritePath: @unchecked Sendable {
    /// The connection's kept statements: BEGIN and COMMIT for every read and
    /// write of the store, and one group for each of the five below.
    let connection: ConnectionStatements
    let executor: StatementSlots
    let journal: StatementSlots
    let projector: StatementSlots
    let privacy: StatementSlots
    let outbox: StatementSlots
    /// The memos of the store whose transaction the path runs now: a
    /// pooled connection is given each store's as it takes its pages
    /// (`StoreAccess`).
    var memos = WriteMemos()

    var expiry: Projector.EarliestExpiry { memos.expiry }

    var head: JournalAppender.Head? {
        get { memos.head }
        set { memos.head = newValue }
    }

    var outboxHead: OutboxPosition? {
        get { memos.outboxHead }
        set { memos.outboxHead = newValue }
    }

    /// Forgets the store's expiry date and heads: the next write reads them.
    func forgetMemos() { memos.forget() }

    /// `owned`: the statements are prepared outside GRDB's cache and kept
    /// only here (`ConnectionStatements(groups:owned:)`), for the path of an
    /// in-memory store, which lives as long as its connection and is never
    /// closed explicitly: a simulation keeps 10,000 of them. A store file's
    /// connection may be closed explicitly (a restore closes the restored
    /// file), so its path takes its statements from GRDB's cache, as a
    /// one-off path does. `pooled`: the connection serves many stores in
    /// turn (`StoreConnectionPool`), so it keeps the statements of rarer
    /// events too (`StatementSlots.keepsRare`).
    init(owned: Bool = false, pooled: Bool = false) {
        connection = ConnectionStatements(groups: [JournalAppender.statementCount, Projector.statementCount,
                                                   PrivacyProjection.statementCount, OutboxState.Statement.allCases.count,
                                                   CallExecutor.statementCount],
                                          owned: owned, keepsRare: pooled)
        journal = connection.group(0)
        projector = connection.group(1)
        privacy = connection.group(2)
        outbox = connection.group(3)
        executor = connection.group(4)
    }
}

/// What a store remembers between its writes, as long as no other
/// connection can write its database: the projections' earliest expiry
/// date, the journal's head and the outbox's. Touched only inside the
/// store's transactions; hence unchecked.
final class WriteMemos: @unchecked Sendable {
    let expiry = Projector.EarliestExpiry()
    /// The journal's last row after the store's last append; nil when not
    /// known. `DeviceStore.write` forgets it like the expiry date.
    var head: JournalAppender.Head?
    /// The outbox's last message after the last append that knew it; nil
    /// when not known. Forgotten with `head`. Without it, the first message
    /// of each write would read it back from the outbox.
    var outboxHead: OutboxPosition?

    /// Forgets the expiry date and the heads: the next write reads them.
    func forget() {
        expiry.forget()
        head = nil
        outboxHead = nil
    }
}
