import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO

/// One connection, checked out of a ``PostgresPool`` for the length of a
/// ``PostgresPool/withSession(_:)`` body, with blocking calls to run
/// statements on it.
///
/// Every call blocks the calling thread until PostgreSQL answers; the work
/// itself runs on the pool's event loop, so a caller on any thread but that
/// loop's (a test on Swift's cooperative pool included) cannot starve it.
/// A session belongs to the thread running the body and is unusable after
/// the body returns. Every call throws ``PostgresFailure``.
///
/// Statements, bound values and rows never appear in errors or logs.
public final class PostgresSession {
    private let pooled: PooledConnection
    private let settings: PostgresPool.Settings
    private var isOpen = true

    init(_ pooled: PooledConnection, settings: PostgresPool.Settings) {
        self.pooled = pooled
        self.settings = settings
    }

    /// Ends the session: its connection goes back to the pool.
    func end() {
        isOpen = false
    }

    // MARK: Statements

    /// Runs one statement and returns its rows.
    ///
    /// The statement is sent unnamed, with its bound values: parsed, planned
    /// and run in one round trip. Each value goes as its own type
    /// (``PostgresValue/dataType``: `int8`, `text`, `bytea`, `int8[]`, …) and
    /// NULL untyped; PostgreSQL converts a value where the statement needs
    /// another type and it allows that (an `int8` into an `int4` column, which
    /// fails if it does not fit), and refuses the statement otherwise. Cast a
    /// parameter in the SQL (`$1::int8[]`) where the type matters. For a
    /// statement run for every frame, `query(_:_:)` with a ``PostgresStatement``
    /// saves the parsing and planning.
    ///
    /// Use ``execute(_:_:)`` when the number of rows affected matters.
    ///
    /// - Throws: ``PostgresFailure``: `.server` for an error in the SQL or a
    ///   value PostgreSQL refuses, `.binding`, `.timeout`, `.connectionLost`,
    ///   `.retryable`, or `.decoding` when a column has a type
    ///   ``PostgresValue`` does not hold.
    @discardableResult
    public func query(_ sql: String, _ binds: [PostgresValue] = []) throws(PostgresFailure) -> [PostgresRowValues] {
        checkOpen()
        let result = try wait(pooled.connection.query(try Self.query(sql, binds), logger: settings.logger))
        noteTransactionControl(result.metadata.command)
        return try Self.decode(result.rows)
    }

    /// Runs a statement the store runs often and returns its rows, as one of
    /// postgres-nio's prepared statements: prepared on this connection the
    /// first time it runs here, then only bound and run.
    ///
    /// Each bound value must have its parameter's type or be NULL; anything
    /// else is refused with code `.binding` before anything is sent.
    /// postgres-nio remembers a preparation that failed for the rest of the
    /// connection's life, so a failure here other than a refused binding
    /// retires the connection: it is closed instead of lent again.
    ///
    /// - Throws: ``PostgresFailure``, as `query(_:_:)` with SQL text does.
    @discardableResult
    public func query<Statement: PostgresStatement>(
        _ statement: Statement.Type, _ binds: [PostgresValue] = []
    ) throws(PostgresFailure) -> [PostgresRowValues] {
        checkOpen()
        let prepared = try PreparedStatement<Statement>(binds)
        let connection = pooled.connection
        let logger = settings.logger
        do {
            let rows = try wait(pooled.executor.future {
                var rows: [PostgresRow] = []
                for try await row in try await connection.execute(prepared, logger: logger) { rows.append(row) }
                return rows
            })
            return try Self.decode(rows)
        } catch {
            pooled.broken = true
            throw error
        }
    }

    /// Runs one statement and returns the number of rows it inserted,
    /// updated, deleted, merged, copied or selected, from its command tag (0
    /// for statements that affect no rows).
    ///
    /// The statement is sent unnamed and its values bound as
    /// `query(_:_:)` with SQL text binds them.
    ///
    /// - Throws: ``PostgresFailure``, as `query(_:_:)` with SQL text does.
    @discardableResult
    public func execute(_ sql: String, _ binds: [PostgresValue] = []) throws(PostgresFailure) -> Int {
        checkOpen()
        let result = try wait(pooled.connection.query(try Self.query(sql, binds), logger: settings.logger))
        noteTransactionControl(result.metadata.command)
        return Self.rowCount(result.metadata)
    }

    /// Runs a script of statements separated by semicolons (a schema, a
    /// migration), one after another, without binds.
    ///
    /// postgres-nio has no simple query protocol, which would take the whole
    /// script in one message, so the script is split at the semicolons that
    /// end statements (not those in strings, quoted names, dollar-quoted
    /// bodies or comments) and each statement is sent on its own. The script
    /// is not atomic by itself: run it inside
    /// ``transaction(isolation:readOnly:_:)`` for that (PostgreSQL's DDL is
    /// transactional), except for statements that refuse a transaction, such
    /// as `CREATE DATABASE`.
    ///
    /// - Throws: ``PostgresFailure`` from the first statement that fails; the
    ///   statements before it have run.
    public func executeScript(_ script: String) throws(PostgresFailure) {
        checkOpen()
        for statement in SQLScript.statements(script) {
            let result = try wait(pooled.connection.query(PostgresQuery(unsafeSQL: statement), logger: settings.logger))
            noteTransactionControl(result.metadata.command)
        }
    }

    // MARK: Transactions

    /// The isolation level of a transaction.
    public enum Isolation: Sendable {
        case readCommitted
        case repeatableRead
        case serializable

        var sql: String {
            switch self {
            case .readCommitted: "READ COMMITTED"
            case .repeatableRead: "REPEATABLE READ"
            case .serializable: "SERIALIZABLE"
            }
        }
    }

    /// Runs `body` inside a transaction: `BEGIN` before, `COMMIT` after, and
    /// `ROLLBACK` when `body` throws (its error is rethrown).
    ///
    /// A COMMIT that fails is an error, and so is one that PostgreSQL turned
    /// into a rollback because a statement in the transaction failed and
    /// `body` caught that failure and went on (code `.server`, SQLSTATE
    /// 25P02): either way nothing was committed. A `.retryable` failure
    /// (serialization, deadlock) means the whole body may be run again.
    /// Transactions do not nest.
    @discardableResult
    public func transaction<T>(
        isolation: Isolation = .readCommitted, readOnly: Bool = false, _ body: () throws -> T
    ) throws -> T {
        checkOpen()
        precondition(!pooled.inTransaction && !pooled.openedTransactionByStatement, "PostgreSQL transactions do not nest")
        _ = try control("BEGIN ISOLATION LEVEL \(isolation.sql)\(readOnly ? " READ ONLY" : "")")
        pooled.inTransaction = true
        let value: T
        do {
            value = try body()
        } catch {
            pooled.inTransaction = false
            do {
                _ = try control("ROLLBACK")
            } catch {
                // The connection's state is unknown: it is not lent again.
                pooled.broken = true
            }
            throw error
        }
        pooled.inTransaction = false
        let tag = try control("COMMIT")
        guard tag == "COMMIT" else {
            throw PostgresFailure(
                .server,
                "the transaction was rolled back at COMMIT: a statement in it had failed and its error was caught",
                sqlState: "25P02")
        }
        return value
    }

    // MARK: Bulk load

    /// Loads rows into `table` with `COPY … FROM STDIN` and returns how many.
    ///
    /// The rows are encoded in COPY's text format into buffers of about a
    /// mebibyte before anything is sent, so their text must fit in memory:
    /// load a large set in batches (inside one transaction if it must be all
    /// or nothing). COPY runs under the pool's statement timeout. `table` and
    /// `columns` must be plain lower-case names (letters, digits, `_`): postgres-nio
    /// quotes them as given and takes no schema, so the table is found
    /// through the connection's `search_path`.
    ///
    /// postgres-nio offers COPY only as an `async` function; it runs here as a
    /// task on the connection's event loop (`EventLoopTaskExecutor`), never on
    /// Swift's cooperative pool, while the calling thread waits.
    ///
    /// - Throws: ``PostgresFailure``: `.binding` for a row of the wrong width
    ///   or a name that is not plain, `.server` for a value the column refuses
    ///   (nothing of the COPY is loaded then), and the connection failures.
    @discardableResult
    public func copyFrom(table: String, columns: [String], rows: some Sequence<[PostgresValue]>) throws(PostgresFailure) -> Int {
        checkOpen()
        for name in [table] + columns where !Self.isPlainName(name) {
            throw PostgresFailure(
                .binding, "COPY takes plain lower-case names (letters, digits, _; at most 63 bytes), not '\(name)'")
        }
        guard !columns.isEmpty else { throw PostgresFailure(.binding, "COPY needs at least one column") }
        var encoder = CopyTextEncoder(columnCount: columns.count)
        for row in rows { try encoder.append(row) }
        let rowCount = encoder.rowCount
        guard rowCount > 0 else { return 0 }
        let chunks = encoder.finish()
        let connection = pooled.connection
        let logger = settings.logger
        try wait(pooled.executor.future {
            try await connection.copyFrom(table: table, columns: columns, format: .text(.init()), logger: logger) { writer in
                for chunk in chunks { try await writer.write(chunk) }
            }
        })
        return rowCount
    }

    // MARK: Internals

    private func checkOpen() {
        precondition(isOpen, "a PostgresSession is used after its withSession body returned")
    }

    /// Runs a transaction control statement and returns its command tag.
    private func control(_ sql: String) throws(PostgresFailure) -> String {
        let result = try wait(pooled.connection.query(PostgresQuery(unsafeSQL: sql), logger: settings.logger))
        return result.metadata.command
    }

    /// Follows `BEGIN`, `COMMIT` and `ROLLBACK` run as plain statements, so
    /// that a connection left inside a transaction is not lent again.
    private func noteTransactionControl(_ command: String) {
        switch command {
        case "BEGIN", "START TRANSACTION": pooled.openedTransactionByStatement = true
        case "COMMIT", "ROLLBACK": pooled.openedTransactionByStatement = false
        default: break
        }
    }

    /// Waits for `future`, so that no call blocks for ever: the call fails
    /// as `.connectionLost` when the connection closes under it (a server
    /// that stopped or restarted), and the connection is closed when the
    /// server has not answered long after the statement timeout (a server
    /// that stopped responding, a network that dropped).
    private func wait<T: Sendable>(_ future: EventLoopFuture<T>) throws(PostgresFailure) -> T {
        let connection = pooled.connection
        let answer = future.eventLoop.makePromise(of: T.self)
        future.cascade(to: answer)
        let lost = PostgresFailure(.connectionLost, "lost the connection to PostgreSQL at \(settings.location): it closed")
        pooled.interrupt.withLockedValue { $0 = { answer.fail(lost) } }
        defer { pooled.interrupt.withLockedValue { $0 = nil } }
        // A connection that closed before the call was registered fails it now.
        if connection.isClosed {
            connection.eventLoop.scheduleTask(in: PooledConnection.closeGrace) { answer.fail(lost) }
        }
        let watchdogFired = NIOLockedValueBox(false)
        var watchdog: Scheduled<Void>?
        if let limit = settings.unansweredLimit {
            let location = settings.location
            watchdog = connection.eventLoop.scheduleTask(in: limit) {
                watchdogFired.withLockedValue { $0 = true }
                answer.fail(PostgresFailure(.timeout, "PostgreSQL at \(location) did not answer in time; the connection was closed"))
                let _: EventLoopFuture<Void> = connection.close()
            }
        }
        defer { watchdog?.cancel() }
        do {
            return try answer.futureResult.wait()
        } catch {
            if watchdogFired.withLockedValue({ $0 }) {
                pooled.broken = true
                throw PostgresFailure(
                    .timeout, "PostgreSQL at \(settings.location) did not answer in time; the connection was closed")
            }
            throw failure(from: error)
        }
    }

    private func failure(from error: any Error) -> PostgresFailure {
        let failure = PostgresFailure.from(error, phase: .statement, location: settings.location)
        if failure.code == .connectionLost || pooled.connection.isClosed { pooled.broken = true }
        return failure
    }

    /// `sql` with `binds`, as postgres-nio sends it.
    private static func query(_ sql: String, _ binds: [PostgresValue]) throws(PostgresFailure) -> PostgresQuery {
        var bindings = PostgresBindings(capacity: binds.count)
        for (index, value) in binds.enumerated() {
            try value.bind(into: &bindings, parameter: index)
        }
        return PostgresQuery(unsafeSQL: sql, binds: bindings)
    }

    private static func decode(_ rows: [PostgresRow]) throws(PostgresFailure) -> [PostgresRowValues] {
        guard let first = rows.first else { return [] }
        let names = first.map(\.columnName)
        var decoded: [PostgresRowValues] = []
        decoded.reserveCapacity(rows.count)
        for row in rows {
            var values: [PostgresValue] = []
            values.reserveCapacity(names.count)
            for cell in row {
                guard var bytes = cell.bytes else {
                    values.append(.null)
                    continue
                }
                do {
                    values.append(try PostgresValue(from: &bytes, type: cell.dataType, format: cell.format, context: .default))
                } catch let problem as PostgresValue.DecodingProblem {
                    throw PostgresFailure(.decoding, "cannot decode column \(cell.columnIndex) (\(cell.columnName)): \(problem.reason)")
                } catch {
                    throw PostgresFailure(.decoding, "cannot decode column \(cell.columnIndex) (\(cell.columnName))")
                }
            }
            guard values.count == names.count else {
                throw PostgresFailure(.protocolViolation, "a row has \(values.count) columns where the first had \(names.count)")
            }
            decoded.append(PostgresRowValues(columnNames: names, values: values))
        }
        return decoded
    }

    private static func rowCount(_ metadata: PostgresQueryMetadata) -> Int {
        if let rows = metadata.rows { return rows }
        // postgres-nio parses the counts of INSERT, UPDATE, DELETE, SELECT, COPY,
        // MOVE and FETCH; MERGE's tag ("MERGE 3") it keeps whole.
        let parts = metadata.command.split(separator: " ")
        if parts.count == 2, parts[0] == "MERGE", let count = Int(parts[1]) { return count }
        return 0
    }

    private static func isPlainName(_ name: String) -> Bool {
        guard let first = name.utf8.first, name.utf8.count <= 63 else { return false }
        let lower = UInt8(ascii: "a")...UInt8(ascii: "z")
        let digit = UInt8(ascii: "0")...UInt8(ascii: "9")
        guard lower.contains(first) || first == UInt8(ascii: "_") else { return false }
        return name.utf8.allSatisfy { lower.contains($0) || digit.contains($0) || $0 == UInt8(ascii: "_") }
    }
}
