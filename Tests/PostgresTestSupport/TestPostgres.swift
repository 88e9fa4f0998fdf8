import CloudPostgres
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A PostgreSQL server for tests, and a fresh database on it for each test.
///
/// The server is the one named by `SIGHTLINE_TEST_POSTGRES_URL` (its
/// password in `PGPASSWORD`), which tools/test sets after starting a cluster;
/// without it, the first test to ask starts a cluster with `tools/postgres
/// start` for this test process, which stops and removes it at exit. Either
/// way the tests never skip: no server is a failure.
///
/// Each ``withDatabase(_:)`` creates a database of its own, named `t_` and a
/// random UUID, and drops it afterwards, so tests run in parallel without
/// seeing each other's tables.
public enum TestPostgres {
    /// Where the server is and its password.
    public struct Server: Sendable {
        public let location: PostgresLocation
        public let password: String?
    }

    /// The server, started once per process when the environment names none.
    public static func server() throws -> Server {
        try shared.get()
    }

    /// Runs `body` with a pool of `size` connections to a new, empty database
    /// of its own, then closes the pool and drops the database.
    public static func withDatabase<T>(
        size: Int = 4, statementTimeout: Duration? = .seconds(30),
        _ body: (PostgresPool, Server) throws -> T
    ) throws -> T {
        let database = try TestDatabase(size: size, statementTimeout: statementTimeout)
        defer { database.drop() }
        return try body(database.pool, database.server)
    }

    /// ``withDatabase(size:statementTimeout:_:)`` for an async body.
    public static func withDatabase<T>(
        size: Int = 4, statementTimeout: Duration? = .seconds(30),
        _ body: (PostgresPool, Server) async throws -> T
    ) async throws -> T {
        let database = try TestDatabase(size: size, statementTimeout: statementTimeout)
        defer { database.drop() }
        return try await body(database.pool, database.server)
    }

    /// A database made for one test, and a pool of connections to it.
    private struct TestDatabase {
        let pool: PostgresPool
        let server: Server
        let name: String
        let admin: PostgresPool

        init(size: Int, statementTimeout: Duration?) throws {
            let shared = try TestPostgres.server()
            name = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
            admin = PostgresPool(location: shared.location, password: shared.password, size: 1)
            do {
                try admin.withSession { [name] in try $0.executeScript("CREATE DATABASE \(name)") }
            } catch {
                admin.close()
                throw error
            }
            var location = shared.location
            location.database = name
            server = Server(location: location, password: shared.password)
            pool = PostgresPool(
                location: location, password: shared.password, size: size, statementTimeout: statementTimeout,
                connectTimeout: .seconds(10))
        }

        func drop() {
            pool.close()
            _ = try? admin.withSession { [name] in try $0.executeScript("DROP DATABASE IF EXISTS \(name) WITH (FORCE)") }
            admin.close()
        }
    }

    /// A cluster of the caller's own, for a test that restarts the server:
    /// started with `tools/postgres start`, stopped and removed when `body`
    /// returns.
    public static func withPrivateCluster<T>(_ body: (PrivateCluster) throws -> T) throws -> T {
        let lines = try run(script, ["start"]).split(separator: "\n").map(String.init)
        guard lines.count == 3 else {
            throw TestPostgresError("tools/postgres start printed \(lines.count) lines, not 3")
        }
        defer { _ = try? run(script, ["stop", lines[2]]) }
        let cluster = PrivateCluster(
            server: Server(
                location: try PostgresLocation(parsing: lines[0]),
                password: try PostgresPassword.load(file: lines[1], environment: [:])),
            directory: lines[2])
        return try body(cluster)
    }

    /// A cluster that one test started for itself.
    public struct PrivateCluster: Sendable {
        public let server: Server
        let directory: String

        /// Stops the server (fast: open sessions are terminated) and starts it
        /// again on the same port.
        public func restart() throws {
            _ = try TestPostgres.run(TestPostgres.script, ["restart", directory])
        }

        /// Stops the server (fast: open sessions are terminated) and keeps
        /// its directory, for a test of a database that stays away for a
        /// while; ``start()`` brings it back on the same port. The cluster
        /// is still removed when `withPrivateCluster`'s body returns.
        public func stop() throws {
            try pgCtl("--mode=fast --wait --silent stop")
        }

        /// Starts a server that ``stop()`` stopped, on the same port.
        public func start() throws {
            try pgCtl(#"--log="$1/server.log" --wait --silent --options="-p $(cat "$1/port")" start"#)
        }

        /// `pg_ctl` on this cluster, run as `tools/postgres restart` runs it
        /// (the newest PostgreSQL installed, as the postgres user when we are
        /// root), with its output and the server's away from our pipe: the
        /// server it starts must not hold the pipe open.
        private func pgCtl(_ arguments: String) throws {
            let script = """
                set -e
                bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
                if [ "$(id -u)" -eq 0 ]; then owner="runuser -u postgres --"; else owner=""; fi
                $owner "$bin/pg_ctl" --pgdata="$1/data" \(arguments) </dev/null >/dev/null 2>&1
                """
            _ = try TestPostgres.run("/bin/sh", ["-c", script, "sh", directory])
        }
    }

    /// tools/postgres, found from this file: Tests/PostgresTestSupport/TestPostgres.swift.
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("tools/postgres").path

    private static let shared: Result<Server, any Error> = Result {
        let environment = ProcessInfo.processInfo.environment
        if let url = environment["SIGHTLINE_TEST_POSTGRES_URL"], !url.isEmpty {
            return Server(
                location: try PostgresLocation(parsing: url),
                password: try PostgresPassword.load(file: nil, environment: environment))
        }
        return try startCluster()
    }

    /// The directory of the cluster this process started, for the exit handler.
    nonisolated(unsafe) private static var clusterDirectory: String?

    private static func startCluster() throws -> Server {
        // The server outlives the script and would keep every descriptor it
        // inherits open: a pipe another thread of this process made for its
        // own child (Foundation's `Process` in `CLIRunner`) would then never
        // reach its end, and that thread would wait for ever. The script
        // closes all but the standard three before it starts the server.
        let closeInherited = #"for fd in /proc/$$/fd/*; do fd=${fd##*/}; [ "$fd" -gt 2 ] && eval "exec $fd>&-"; done 2>/dev/null; exec "$0" start"#
        let lines = try run("/bin/bash", ["-c", closeInherited, script]).split(separator: "\n").map(String.init)
        guard lines.count == 3 else {
            throw TestPostgresError("tools/postgres start printed \(lines.count) lines, not 3")
        }
        clusterDirectory = lines[2]
        atexit {
            guard let directory = TestPostgres.clusterDirectory else { return }
            _ = try? TestPostgres.run(TestPostgres.script, ["stop", directory])
        }
        return Server(
            location: try PostgresLocation(parsing: lines[0]),
            password: try PostgresPassword.load(file: lines[1], environment: [:]))
    }

    /// Held while `run` makes a pipe and spawns the child that writes to it.
    private static let spawning = NSLock()

    /// Runs `executable` and returns its standard output; its standard error
    /// goes to the test's. Spawned and reaped directly: Foundation's `Process`
    /// on Linux can miss the exit of a child that itself starts daemons, and
    /// then waits for ever.
    static func run(_ executable: String, _ arguments: [String]) throws -> String {
        var pipe: [Int32] = [0, 0]
        // The pipe is close-on-exec, and made and handed over under a lock,
        // so that a server another test starts meanwhile does not inherit it
        // and keep it open: its reader would wait for ever. The child's
        // standard output, a dup2 of it, stays open.
        spawning.lock()
        var locked = true
        defer { if locked { spawning.unlock() } }
        guard Glibc.pipe(&pipe) == 0 else { throw TestPostgresError("pipe failed (errno \(errno))") }
        _ = fcntl(pipe[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(pipe[1], F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipe[1], 1)
        posix_spawn_file_actions_addclose(&actions, pipe[0])
        posix_spawn_file_actions_addclose(&actions, pipe[1])
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        close(pipe[1])
        spawning.unlock()
        locked = false
        defer { close(pipe[0]) }
        guard spawned == 0 else { throw TestPostgresError("cannot run \(executable) (error \(spawned))") }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(pipe[0], $0.baseAddress, $0.count) }
            if count > 0 {
                output += chunk[0..<count]
            } else if count == 0 || errno != EINTR {
                break
            }
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        // The exit status, as WEXITSTATUS reads it (a macro Swift cannot call).
        let exited = status & 0x7f == 0
        let code = (status >> 8) & 0xff
        guard exited && code == 0 else {
            throw TestPostgresError("\(executable) \(arguments.joined(separator: " ")) failed (wait status \(status))")
        }
        return String(decoding: output, as: UTF8.self)
    }
}

struct TestPostgresError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
