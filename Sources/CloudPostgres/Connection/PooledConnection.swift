import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO

/// One open connection of a pool and what belongs to it: whether it is in a
/// transaction and whether it may be lent again.
///
/// Only the thread that has it checked out touches it; the pool's lock
/// orders one borrower after the next.
final class PooledConnection {
    let connection: PostgresConnection
    /// Runs postgres-nio's async-only operations on this connection's event loop.
    let executor: EventLoopTaskExecutor
    /// Inside ``PostgresSession/transaction(isolation:readOnly:_:)``.
    var inTransaction = false
    /// A `BEGIN` run as a plain statement, not yet ended by `COMMIT` or `ROLLBACK`.
    var openedTransactionByStatement = false
    /// Set when the connection broke, or its state is unknown (a failed
    /// ROLLBACK, a watchdog that closed it, a prepared statement that
    /// failed): it is closed, not lent again.
    var broken = false

    /// Fails the call that waits on this connection, if one does: set by
    /// ``PostgresSession`` for the length of each call, run when the
    /// connection closes.
    let interrupt = NIOLockedValueBox<(@Sendable () -> Void)?>(nil)

    /// How long after the connection closed a waiting call is failed, so
    /// that postgres-nio's own error for it (which carries the server's
    /// reason, "terminating connection due to administrator command") comes
    /// first when there is one.
    static let closeGrace: TimeAmount = .milliseconds(50)

    init(_ connection: PostgresConnection) {
        self.connection = connection
        self.executor = EventLoopTaskExecutor(connection.eventLoop)
        // postgres-nio hands each statement to its channel without a write
        // promise, so a statement that reaches a channel that has just
        // closed is never answered, and a call waiting for it would wait for
        // ever (a database restarted or stopped under a server). The close
        // fails whatever call is waiting instead.
        let interrupt = self.interrupt
        let eventLoop = connection.eventLoop
        connection.closeFuture.whenComplete { _ in
            eventLoop.scheduleTask(in: PooledConnection.closeGrace) {
                interrupt.withLockedValue { $0 }?()
            }
        }
    }

    /// Whether the pool may lend this connection again.
    var isReusable: Bool {
        !broken && !connection.isClosed && !inTransaction && !openedTransactionByStatement
    }
}
