import GRDB
import SQLiteSupport
import SyncWire

/// What one store's connection keeps for its calls' write path: the
/// journal's, projector's and privacy projection's statements, the sync
/// state's (read by acks and status reads too), BEGIN and COMMIT, and three
/// memos: the projections' earliest expiry date, the journal's head and the
/// outbox's.
///
/// Only touched inside the store's transactions, which its queue runs one at
/// a time; hence unchecked.
final class WritePath: @unchecked Sendable {
    /// The connection's kept statements: BEGIN and COMMIT for every read and
    /// write of the store, and one group for each of the four below.
    let connection: ConnectionStatements
    let journal: StatementSlots
    let projector: StatementSlots
    let privacy: StatementSlots
    let outbox: StatementSlots
    let expiry = Projector.EarliestExpiry()
    /// The journal's last row after the last append on this path; nil when
    /// not known. `DeviceStore.write` forgets it like the expiry date.
    var head: JournalAppender.Head?
    /// The outbox's last message after the last append on this path that
    /// knew it; nil when not known. Forgotten with `head`. Without it, the
    /// first message of each write would read it back from the outbox.
    var outboxHead: OutboxPosition?

    /// Forgets the expiry date and the heads: the next write reads them.
    func forgetMemos() {
        expiry.forget()
        head = nil
        outboxHead = nil
    }

    /// `owned`: the statements are prepared outside GRDB's cache and kept
    /// only here (`ConnectionStatements(groups:owned:)`), for the path of an
    /// in-memory store, which lives as long as its connection and is never
    /// closed explicitly: a simulation keeps 10,000 of them. A store file's
    /// connection may be closed explicitly (a restore closes the restored
    /// file), so its path takes its statements from GRDB's cache, as a
    /// one-off path does.
    init(owned: Bool = false) {
        connection = ConnectionStatements(groups: [JournalAppender.statementCount, Projector.statementCount,
                                                   PrivacyProjection.statementCount, OutboxState.Statement.allCases.count],
                                          owned: owned)
        journal = connection.group(0)
        projector = connection.group(1)
        privacy = connection.group(2)
        outbox = connection.group(3)
    }
}
