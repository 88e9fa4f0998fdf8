import CloudPostgres
import Logging
import Foundation
import PostgresTestSupport
import Testing

@Test func eachConnectionIdentifiesItselfAndCarriesTheTimeouts() throws {
    try TestPostgres.withDatabase(statementTimeout: .milliseconds(1500)) { pool, _ in
        try pool.withSession { session throws in
            let row = try session.query(
                "SELECT current_setting('application_name') AS app, current_setting('statement_timeout') AS statement, "
                    + "current_setting('idle_in_transaction_session_timeout') AS idle, current_setting('TimeZone') AS zone")[0]
            #expect(try row["app"].text == "sightline")
            #expect(try row["statement"].text == "1500ms")
            #expect(try row["idle"].text == "1500ms")
            #expect(try row["zone"].text == "UTC")
        }
    }
}

@Test func aWrongPasswordIsAnAuthenticationFailure() throws {
    let server = try TestPostgres.server()
    let pool = PostgresPool(location: server.location, password: "not-the-password", size: 1, connectTimeout: .seconds(5))
    defer { pool.close() }
    #expect {
        try pool.withSession { _ in }
    } throws: { error in
        guard let failure = error as? PostgresFailure else { return false }
        return failure.code == .authentication && ["28P01", "28000"].contains(failure.sqlState)
            && !failure.description.contains("not-the-password")
    }
}

@Test func aMissingDatabaseIsReportedAsSuch() throws {
    let server = try TestPostgres.server()
    var location = server.location
    location.database = "no_such_database"
    let pool = PostgresPool(location: location, password: server.password, size: 1, connectTimeout: .seconds(5))
    defer { pool.close() }
    #expect {
        try pool.withSession { _ in }
    } throws: { error in
        guard let failure = error as? PostgresFailure else { return false }
        return failure.code == .missingDatabase && failure.sqlState == "3D000" && failure.description.contains("no_such_database")
    }
}

@Test func anUnreachableServerIsReportedWithTheURLAndNoPassword() throws {
    // A port that was free a moment ago: nothing listens there.
    let port = try freePort()
    let location = PostgresLocation(user: "sightline", host: "127.0.0.1", port: port, database: "sightline", tls: .disable)
    let pool = PostgresPool(location: location, password: "secret-password-42", size: 1, connectTimeout: .milliseconds(400))
    defer { pool.close() }
    let started = ContinuousClock.now
    #expect {
        try pool.withSession { _ in }
    } throws: { error in
        guard let failure = error as? PostgresFailure else { return false }
        return failure.code == .unreachable && failure.isTransient
            && failure.description.contains("postgres://sightline@127.0.0.1:\(port)/sightline")
            && !failure.description.contains("secret-password-42")
    }
    // It kept trying, with backoff, for about the connect timeout and no longer.
    #expect(ContinuousClock.now - started < .seconds(3))
}

@Test func thePoolLendsNoMoreThanItsSizeAtOnce() throws {
    try TestPostgres.withDatabase(size: 2) { pool, _ in
        let lock = NSLock()
        nonisolated(unsafe) var inUse = 0
        nonisolated(unsafe) var mostInUse = 0
        nonisolated(unsafe) var failures: [any Error] = []
        nonisolated(unsafe) var backends = Set<Int64>()
        let threads = 6
        let done = DispatchGroup()
        for _ in 0..<threads {
            done.enter()
            // Threads of their own, not the cooperative pool's, since each blocks.
            Thread.detachNewThread {
                defer { done.leave() }
                do {
                    try pool.withSession { session throws in
                        lock.withLock {
                            inUse += 1
                            mostInUse = max(mostInUse, inUse)
                        }
                        let pid = try session.query("SELECT pg_backend_pid()::int8 AS pid, pg_sleep(0.1)::text AS slept")[0]["pid"].int64
                        lock.withLock {
                            inUse -= 1
                            backends.insert(pid)
                        }
                    }
                } catch {
                    lock.withLock { failures.append(error) }
                }
            }
        }
        done.wait()
        #expect(failures.isEmpty)
        #expect(mostInUse == 2)
        #expect(backends.count <= 2)
    }
}

@Test func aCheckoutGivesUpWhenThePoolStaysBusy() throws {
    let server = try TestPostgres.server()
    let pool = PostgresPool(location: server.location, password: server.password, size: 1, checkoutTimeout: .milliseconds(200))
    defer { pool.close() }
    let holding = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    let finished = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        _ = try? pool.withSession { _ in
            holding.signal()
            release.wait()
        }
        finished.signal()
    }
    holding.wait()
    #expect {
        try pool.withSession { _ in }
    } throws: { error in
        (error as? PostgresFailure)?.code == .poolExhausted
    }
    release.signal()
    finished.wait()
    try pool.withSession { session throws in
        #expect(try session.query("SELECT 1::int8 AS one")[0]["one"].int64 == 1)
    }
}

@Test func aClosedPoolRefusesSessionsAndClosesTwiceSafely() throws {
    let server = try TestPostgres.server()
    let pool = PostgresPool(location: server.location, password: server.password, size: 1)
    try pool.withSession { try $0.executeScript("SELECT 1") }
    pool.close()
    pool.close()
    #expect {
        try pool.withSession { _ in }
    } throws: { error in
        (error as? PostgresFailure)?.code == .closed
    }
}

@Test func thePoolOutlivesARestartOfTheServer() throws {
    try TestPostgres.withPrivateCluster { cluster in
        let pool = PostgresPool(
            location: cluster.server.location, password: cluster.server.password, size: 2, connectTimeout: .seconds(10))
        defer { pool.close() }
        let sql = "SELECT pg_backend_pid()::int8 AS pid, $1::int8 AS n"
        let before = try pool.withSession { try $0.query(sql, [.int64(1)])[0]["pid"].int64 }
        try cluster.restart()
        // The old connection is gone: at most one session learns it the hard way.
        var lost = 0
        var after: Int64?
        while after == nil && lost < 2 {
            do {
                after = try pool.withSession { try $0.query(sql, [.int64(2)])[0]["pid"].int64 }
            } catch let failure as PostgresFailure where failure.code == .connectionLost {
                lost += 1
            }
        }
        #expect(lost <= 1)
        #expect(try #require(after) != before)
    }
}


/// A server shut down while one session's statement waits on a lock and
/// another sits in a transaction: the waiting statement and the COMMIT
/// that follows both fail as a lost connection, at once, instead of waiting
/// for an answer that cannot come (postgres-nio never answers a statement
/// that reaches a closed channel).
@Test func sessionsCutOffByAServerShutdownFailAtOnce() throws {
    try TestPostgres.withPrivateCluster { cluster in
        let pool = PostgresPool(location: cluster.server.location, password: cluster.server.password, size: 2,
                                statementTimeout: nil, connectTimeout: .seconds(1))
        defer { pool.close() }
        _ = try pool.withSession { try $0.executeScript("CREATE TABLE gate (id int PRIMARY KEY); INSERT INTO gate VALUES (1)") }
        let locked = DispatchSemaphore(value: 0)
        let stopped = DispatchSemaphore(value: 0)
        let holder = OnAThread {
            try pool.withSession { session in
                try session.transaction {
                    try session.query("SELECT 1 FROM gate WHERE id = 1 FOR UPDATE")
                    locked.signal()
                    // Still in the transaction when the server stops; COMMIT comes after.
                    _ = stopped.wait(timeout: .now() + 10)
                }
            }
        }
        #expect(locked.wait(timeout: .now() + 10) == .success)
        let waiter = OnAThread {
            try pool.withSession { session in
                try session.transaction { try session.query("SELECT 1 FROM gate WHERE id = 1 FOR UPDATE") }
            }
        }
        // The server stops once the waiter's statement waits on the lock.
        let observer = PostgresPool(location: cluster.server.location, password: cluster.server.password, size: 1)
        let deadline = ContinuousClock.now + .seconds(10)
        while try observer.withSession({ session in
            try session.query("SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'")[0]["n"].int64
        }) == 0 {
            guard ContinuousClock.now < deadline else {
                Issue.record("the waiter's statement did not wait on the lock within 10 s")
                break
            }
            Thread.sleep(forTimeInterval: 0.01)
        }
        observer.close()
        try cluster.stop()
        stopped.signal()
        for (name, call) in [("the waiting statement", waiter), ("the COMMIT", holder)] {
            let outcome = try call.failure(within: .seconds(10))
            let failure = try #require(outcome, "\(name) did not fail")
            #expect((failure as? PostgresFailure)?.code == .connectionLost, "\(name): \(failure)")
        }
    }
}

/// A call run on a thread of its own, whose outcome a test waits for with a deadline.
private final class OnAThread: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var outcome: (any Error)?

    init(_ body: @escaping @Sendable () throws -> Void) {
        Thread {
            do {
                try body()
            } catch {
                self.lock.withLock { self.outcome = error }
            }
            self.done.signal()
        }.start()
    }

    /// What the call threw, or nil when it returned; throws when it has not ended within `limit`.
    func failure(within limit: Duration) throws -> (any Error)? {
        let seconds = Double(limit.components.seconds)
        guard done.wait(timeout: .now() + seconds) == .success else { throw POSIXError(.ETIMEDOUT) }
        return lock.withLock { outcome }
    }
}
