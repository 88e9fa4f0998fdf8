import CloudCore
import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO

/// A bounded set of connections to one PostgreSQL database, lent one at a
/// time to blocking callers.
///
/// ``withSession(_:)`` checks out a connection, opening one when none is idle
/// and fewer than `size` are open, or waits up to the checkout timeout for
/// one to come back; runs the body on the calling thread; and returns the
/// connection, or closes it when it broke. Connections open lazily.
///
/// A pool outlives its database going away: sessions fail while the server
/// is down (`.unreachable`, `.connectionLost`) and succeed again once it is
/// back. Failures to open a connection space the attempts with capped
/// exponential backoff (50 ms doubling to 2 s, shared by the whole pool):
/// - until the pool has opened its first connection, a checkout keeps
///   trying until the connect timeout, so a server started before its
///   database waits for it;
/// - once it has, the database was lost: a checkout makes one attempt, and
///   none while the backoff lasts, and fails at once, so that a server
///   answers "unavailable" at once instead of holding each request for the
///   connect timeout.
///
/// Each connection opens with `application_name = sightline`, the statement
/// timeout as `statement_timeout` (so that one slow statement cannot hold a
/// connection for ever) and as `idle_in_transaction_session_timeout` (so that
/// a stalled caller cannot hold a transaction's locks for ever), and UTC as
/// its time zone. The connections run on an event loop group of one thread
/// that the pool owns; ``close()`` shuts it down.
///
/// The pool is for blocking callers: the simulator's single thread, the HTTP
/// server's blocking thread pool. Nothing here blocks one of Swift's
/// cooperative threads waiting on another, so it is safe, if wasteful, to
/// call from one; never call it from an event loop thread of its own.
public final class PostgresPool: @unchecked Sendable {
    /// What the sessions of this pool share.
    struct Settings: Sendable {
        let location: PostgresLocation
        let logger: Logger
        /// How long a call waits for an answer before the connection is
        /// closed: the statement timeout and some slack, or nil for none.
        let unansweredLimit: TimeAmount?
    }

    public let location: PostgresLocation
    /// The most connections open at once.
    public let size: Int
    public let statementTimeout: Duration?
    public let connectTimeout: Duration
    public let checkoutTimeout: Duration
    /// The schemas unqualified names are looked up in, set on every
    /// connection (`search_path`); nil keeps the server's.
    public let searchPath: String?

    private let password: String?
    private let settings: Settings
    private let group: MultiThreadedEventLoopGroup
    // `condition` guards `state`; every field of `state` is read and written with it held.
    private let condition = NSCondition()
    private var state = State()

    private struct State {
        var idle: [PooledConnection] = []
        /// Connections open, lent, or being opened.
        var open = 0
        var closed = false
        var groupShutDown = false
        var nextConnectionID = 0
        /// Whether a connection was ever opened: from then on a failure to
        /// open one is a lost database, and checkouts fail at once.
        var hasConnected = false
        /// Consecutive failures to open a connection, for the backoff.
        var connectFailures = 0
        var noConnectBefore: ContinuousClock.Instant?
        var tlsContext: NIOSSLContext?
    }

    private static let backoffStart: Duration = .milliseconds(50)
    private static let backoffLimit: Duration = .seconds(2)
    /// How much longer than the statement timeout a call waits for an answer.
    private static let answerSlack: Duration = .seconds(5)

    /// Makes a pool; it opens no connection until a session needs one.
    ///
    /// - Parameters:
    ///   - location: the server and database.
    ///   - password: from ``PostgresPassword/load(file:environment:)``; nil when
    ///     the server asks for none.
    ///   - size: the most connections open at once, at least 1.
    ///   - statementTimeout: the longest a statement may run; nil for no limit.
    ///   - connectTimeout: how long a checkout keeps trying to open the pool's
    ///     first connection (every attempt and the backoff between them) before
    ///     `.unreachable`, and the longest one attempt may take.
    ///   - checkoutTimeout: how long a checkout waits for a busy pool before
    ///     `.poolExhausted`.
    ///   - searchPath: the schemas unqualified names are looked up in, set
    ///     as `search_path` when each connection starts (nil: the server's).
    ///   - logger: for postgres-nio's events: connection errors at debug level,
    ///     protocol messages (which may hold row values) at trace level, so keep
    ///     it above trace wherever content must stay out of logs.
    public init(
        location: PostgresLocation,
        password: String?,
        size: Int = 10,
        statementTimeout: Duration? = .seconds(30),
        connectTimeout: Duration = .seconds(10),
        checkoutTimeout: Duration = .seconds(30),
        searchPath: String? = nil,
        logger: Logger = Logger(label: "sightline.postgres")
    ) {
        self.searchPath = searchPath
        precondition(size >= 1, "a PostgreSQL pool needs at least one connection")
        self.location = location
        self.password = password
        self.size = size
        self.statementTimeout = statementTimeout
        self.connectTimeout = connectTimeout
        self.checkoutTimeout = checkoutTimeout
        self.group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        self.settings = Settings(
            location: location, logger: logger,
            unansweredLimit: statementTimeout.map { Self.timeAmount($0 + Self.answerSlack) })
    }

    /// How many connections are lent (or being opened) and how many wait idle, now.
    public var use: ConnectionPoolUse {
        condition.lock()
        defer { condition.unlock() }
        return ConnectionPoolUse(inUse: state.open - state.idle.count, idle: state.idle.count, maximum: size)
    }

    /// Runs `body` with a connection of this pool, on the calling thread, and
    /// returns what it returns.
    ///
    /// - Throws: what `body` throws, or ``PostgresFailure``: `.poolExhausted`
    ///   when no connection came free within the checkout timeout, `.closed`
    ///   after ``close()``, and the failures of opening a connection
    ///   (`.unreachable`, `.authentication`, `.missingDatabase`).
    public func withSession<T>(_ body: (PostgresSession) throws -> T) throws -> T {
        let pooled = try checkout()
        let session = PostgresSession(pooled, settings: settings)
        defer {
            session.end()
            checkin(pooled)
        }
        return try body(session)
    }

    /// Closes the idle connections now and each lent one when it comes back,
    /// then stops the event loop. Sessions started afterwards fail with
    /// `.closed`. Safe to call more than once. Must not be called from inside
    /// a session's body (it would wait for that session's connection).
    public func close() {
        condition.lock()
        guard !state.closed else {
            condition.unlock()
            return
        }
        state.closed = true
        let idle = state.idle
        state.idle = []
        state.open -= idle.count
        let shutDown = takeGroupShutdownLocked()
        condition.broadcast()
        condition.unlock()
        for pooled in idle { try? pooled.connection.close().wait() }
        if shutDown { shutDownGroup() }
    }

    // MARK: Checkout

    private func checkout() throws(PostgresFailure) -> PooledConnection {
        let clock = ContinuousClock()
        let deadline = clock.now + checkoutTimeout
        condition.lock()
        while true {
            if state.closed {
                condition.unlock()
                throw PostgresFailure(.closed, "the PostgreSQL pool for \(location) is closed")
            }
            if let pooled = state.idle.popLast() {
                if pooled.connection.isClosed {
                    // The server ended it while idle (a restart, pg_terminate_backend).
                    state.open -= 1
                    continue
                }
                condition.unlock()
                return pooled
            }
            if state.open < size {
                state.open += 1
                let id = state.nextConnectionID
                state.nextConnectionID += 1
                condition.unlock()
                let pooled: PooledConnection
                do {
                    pooled = try open(id: id)
                } catch {
                    condition.lock()
                    state.open -= 1
                    let shutDown = takeGroupShutdownLocked()
                    condition.signal()
                    condition.unlock()
                    if shutDown { shutDownGroup() }
                    throw error
                }
                // close() may have run while the connection was opening; checkin
                // then closes it and, as the last, stops the event loop.
                guard !condition.withLock({ state.closed }) else {
                    checkin(pooled)
                    throw PostgresFailure(.closed, "the PostgreSQL pool for \(location) is closed")
                }
                return pooled
            }
            let remaining = deadline - clock.now
            guard remaining > .zero else {
                condition.unlock()
                throw PostgresFailure(
                    .poolExhausted,
                    "all \(size) connections to PostgreSQL at \(location) stayed busy for \(checkoutTimeout); raise the pool size or find the slow work")
            }
            _ = condition.wait(until: Date(timeIntervalSinceNow: Self.seconds(remaining)))
        }
    }

    private func checkin(_ pooled: PooledConnection) {
        condition.lock()
        let keep = !state.closed && pooled.isReusable
        if keep {
            state.idle.append(pooled)
        } else {
            state.open -= 1
        }
        let shutDown = takeGroupShutdownLocked()
        condition.signal()
        condition.unlock()
        if !keep { try? pooled.connection.close().wait() }
        if shutDown { shutDownGroup() }
    }

    /// Whether the caller, holding the lock, is the one to stop the event loop:
    /// the pool is closed and no connection is left.
    private func takeGroupShutdownLocked() -> Bool {
        guard state.closed, state.open == 0, !state.groupShutDown else { return false }
        state.groupShutDown = true
        return true
    }

    private func shutDownGroup() {
        try? group.syncShutdownGracefully()
    }

    // MARK: Opening connections

    /// Opens a connection, trying again after the failures that pass (refused,
    /// timed out, server starting) with the pool's backoff: until the connect
    /// timeout before the pool's first connection, not at all after it (see
    /// the type's notes). Authentication and a missing database fail at once.
    private func open(id: Int) throws(PostgresFailure) -> PooledConnection {
        let clock = ContinuousClock()
        let deadline = clock.now + connectTimeout
        let patient = condition.withLock { !state.hasConnected }
        while true {
            let (notBefore, failures) = condition.withLock { (state.noConnectBefore, state.connectFailures) }
            if let notBefore, notBefore > clock.now {
                if !patient {
                    let wait = notBefore - clock.now
                    throw PostgresFailure(
                        .unreachable,
                        "cannot connect to PostgreSQL at \(location): the last \(failures) attempts failed; the next is in \(Self.milliseconds(wait)) ms")
                }
                if notBefore >= deadline {
                    throw PostgresFailure(
                        .unreachable,
                        "cannot connect to PostgreSQL at \(location) within \(connectTimeout): it failed \(failures) times in a row")
                }
                Thread.sleep(forTimeInterval: Self.seconds(notBefore - clock.now))
            }
            let remaining = deadline - clock.now
            do {
                let connection = try attempt(id: id, timeout: max(remaining, .milliseconds(1)))
                condition.withLock {
                    state.hasConnected = true
                    state.connectFailures = 0
                    state.noConnectBefore = nil
                }
                return PooledConnection(connection)
            } catch {
                guard error.code == .unreachable else { throw error }
                let delay = condition.withLock {
                    state.connectFailures += 1
                    let exponent = min(state.connectFailures - 1, 10)
                    let delay = min(Self.backoffStart * (1 << exponent), Self.backoffLimit)
                    state.noConnectBefore = clock.now + delay
                    return delay
                }
                if !patient || clock.now + delay >= deadline { throw error }
            }
        }
    }

    private func attempt(id: Int, timeout: Duration) throws(PostgresFailure) -> PostgresConnection {
        var configuration = PostgresConnection.Configuration(
            host: location.host, port: location.port, username: location.user, password: password,
            database: location.database, tls: try tls())
        configuration.options.connectTimeout = Self.timeAmount(timeout)
        var parameters = [("application_name", "sightline"), ("TimeZone", "UTC")]
        if let statementTimeout {
            let milliseconds = String(Self.milliseconds(statementTimeout))
            parameters.append(("statement_timeout", milliseconds))
            parameters.append(("idle_in_transaction_session_timeout", milliseconds))
        }
        if let searchPath { parameters.append(("search_path", searchPath)) }
        configuration.options.additionalStartupParameters = parameters
        let future = PostgresConnection.connect(
            on: group.next(), configuration: configuration, id: id, logger: settings.logger)
        do {
            return try future.wait()
        } catch {
            throw PostgresFailure.from(error, phase: .connecting, location: location)
        }
    }

    private func tls() throws(PostgresFailure) -> PostgresConnection.Configuration.TLS {
        guard location.tls != .disable else { return .disable }
        let context: NIOSSLContext
        do {
            context = try condition.withLock {
                if let existing = state.tlsContext { return existing }
                var tls = TLSConfiguration.makeClientConfiguration()
                // libpq's prefer and require encrypt without verifying the server.
                tls.certificateVerification = .none
                let made = try NIOSSLContext(configuration: tls)
                state.tlsContext = made
                return made
            }
        } catch {
            throw PostgresFailure(.unreachable, "cannot set up TLS for PostgreSQL at \(location): \(error)")
        }
        return location.tls == .require ? .require(context) : .prefer(context)
    }

    // MARK: Durations

    private static func timeAmount(_ duration: Duration) -> TimeAmount {
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (total, overflowAgain) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        return .nanoseconds(overflow || overflowAgain ? .max : max(total, 0))
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        // PostgreSQL takes at most INT_MAX milliseconds for these settings.
        guard !overflow else { return Int64(Int32.max) }
        return min(max(whole + attoseconds / 1_000_000_000_000_000, 1), Int64(Int32.max))
    }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
