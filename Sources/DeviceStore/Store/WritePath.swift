import GRDB
import SQLiteSupport

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
