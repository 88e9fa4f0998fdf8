/// A PostgreSQL operation that failed: what kind of failure, what to do about
/// it, and PostgreSQL's own SQLSTATE where the server sent one.
///
/// `code` is for callers that act on the failure: retry a `.retryable`
/// transaction, answer 503 while the database is `.unreachable` or the
/// connection was `.connectionLost`, report a `.server` failure as a bug.
/// `description` never holds a password, a bound value, or PostgreSQL's
/// DETAIL field (which may repeat row values, as a unique violation's
/// "Key (id)=(…) already exists" does); `detail` keeps that for whoever may
/// see it.
public struct PostgresFailure: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of failure.
    public enum Code: String, Hashable, Sendable {
        /// The URL is not one this layer accepts (syntax, a password in it, an
        /// unknown parameter).
        case invalidLocation
        /// The password file cannot be read, or holds no password.
        case password
        /// No connection could be opened in time: refused, timed out, or the
        /// server is starting or shutting down.
        case unreachable
        /// The server refused the user or password (SQLSTATE 28P01, 28000).
        case authentication
        /// The database named in the URL does not exist (SQLSTATE 3D000).
        case missingDatabase
        /// The statement ran past the statement timeout (SQLSTATE 57014), or
        /// the server stopped answering for longer than that.
        case timeout
        /// The connection broke while in use; whether the statement took
        /// effect is unknown unless it ran inside a transaction (then it did
        /// not). The pool opens a new connection for the next session.
        case connectionLost
        /// A serialization failure (40001) or deadlock (40P01): the
        /// transaction was rolled back and may be run again from the start.
        case retryable
        /// Any other error the server reported; `sqlState` names it.
        case server
        /// Every connection stayed checked out for the whole checkout timeout.
        case poolExhausted
        /// The pool was closed.
        case closed
        /// A column's value is not of the type read, is NULL where a value was
        /// expected, or is not one this layer decodes.
        case decoding
        /// A bound value does not fit the statement's parameter type.
        case binding
        /// The server or the client library did something this layer does not
        /// expect.
        case protocolViolation
    }

    public let code: Code
    /// What went wrong and, where it helps, how to fix it.
    public let message: String
    /// PostgreSQL's five-character SQLSTATE, when the server reported the failure.
    public let sqlState: String?
    /// PostgreSQL's DETAIL field, which may hold row values: kept out of `description`.
    public let detail: String?
    /// PostgreSQL's HINT field.
    public let hint: String?
    /// The constraint that a violation names (unique, foreign key, check).
    public let constraint: String?

    public init(
        _ code: Code, _ message: String,
        sqlState: String? = nil, detail: String? = nil, hint: String? = nil, constraint: String? = nil
    ) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
        self.detail = detail
        self.hint = hint
        self.constraint = constraint
    }

    public var description: String {
        var text = message
        if let sqlState { text += " (SQLSTATE \(sqlState))" }
        if let hint { text += "; hint: \(hint)" }
        return text
    }

    /// Whether running the same work again, from its transaction's start, may
    /// succeed: serialization failures, deadlocks, a lost connection, a server
    /// that was unreachable.
    public var isTransient: Bool {
        switch code {
        case .retryable, .connectionLost, .unreachable, .poolExhausted: true
        default: false
        }
    }

    /// A unique constraint violation (SQLSTATE 23505).
    public var isUniqueViolation: Bool { sqlState == "23505" }
}
