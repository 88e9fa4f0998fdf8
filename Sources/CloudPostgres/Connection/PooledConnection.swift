import Logging
import NIOCore
import PostgresNIO

/// One open connection of a pool and what belongs to it: its prepared
/// statements and whether it may be lent again.
///
/// Only the thread that has it checked out touches it; the pool's lock
/// orders one borrower after the next.
final class PooledConnection {
    /// A statement prepared on this connection, with its parameters' types as
    /// the server inferred them.
    struct PreparedStatement {
        let query: PreparedQuery
        let parameterTypes: [UInt32]
    }

    let connection: PostgresConnection
    /// Runs postgres-nio's async-only operations on this connection's event loop.
    let executor: EventLoopTaskExecutor
    /// Prepared statements by SQL text, and the order they were prepared in,
    /// to deallocate the oldest when there are too many.
    var statements: [String: PreparedStatement] = [:]
    var preparedOrder: [String] = []
    /// Inside ``PostgresSession/transaction(isolation:readOnly:_:)``.
    var inTransaction = false
    /// A `BEGIN` run as a plain statement, not yet ended by `COMMIT` or `ROLLBACK`.
    var openedTransactionByStatement = false
    /// Set when the connection broke, or its state is unknown (a failed
    /// ROLLBACK, a watchdog that closed it): it is closed, not lent again.
    var broken = false

    /// More prepared statements than this per connection is a sign of SQL
    /// built with values in it; the oldest are deallocated.
    static let statementLimit = 512

    init(_ connection: PostgresConnection) {
        self.connection = connection
        self.executor = EventLoopTaskExecutor(connection.eventLoop)
    }

    /// Whether the pool may lend this connection again.
    var isReusable: Bool {
        !broken && !connection.isClosed && !inTransaction && !openedTransactionByStatement
    }
}
