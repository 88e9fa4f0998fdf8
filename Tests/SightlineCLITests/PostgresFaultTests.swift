import CloudPostgres
import Foundation
import IndexModel
import PostgresTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `cloud serve` on PostgreSQL when the database is not what it should be:
/// unreachable, refusing, missing, newer, slow, or gone while serving.
@Suite(.serialized) struct PostgresFaultTests {
    /// A database lost while serving: the frame in flight and those sent
    /// while it is away are answered 503 `unavailable`; once it is back the
    /// same server process serves again, and everything is acknowledged.
    @Test func aServerOutlivesItsDatabaseGoingAwayAndComingBack() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try TestPostgres.withPrivateCluster { cluster in
            let environment = ["PGPASSWORD": cluster.server.password ?? ""]
            let url = cluster.server.location.description
            let fleet = try DeviceFleet(in: directory, count: 1)
            let store = fleet.store(0)
            let server = try ServeProcess.start(db: url, threshold: 1, secret: fleet.secret, environment: environment,
                                                in: directory)
            defer { server.child.stop() }
            func sync(attempts: Int) throws -> CLIRunner.Result {
                try Child.run(["sync", "--db", store, "--cloud", server.url, "--enrolment-secret-file", fleet.secret.path,
                               "--attempts", String(attempts), "--json"], in: directory)
            }
            try fleet.apply(round: 1)
            #expect(try sync(attempts: 1).status == 0)
            try fleet.apply(round: 2)

            // A frame in flight when the database stops: held on the app's
            // row by a session of the test, then cut off by the shutdown.
            let pool = PostgresPool(location: cluster.server.location, password: cluster.server.password, size: 2,
                                    statementTimeout: nil, connectTimeout: .seconds(2))
            defer { pool.close() }
            var inFlight: CLIRunner.Result?
            do {
                try pool.withSession { session in
                    try session.transaction {
                        try session.query("SELECT 1 FROM sightline.apps WHERE app = $1 FOR UPDATE", [.text(DeviceFleet.app)])
                        let child = try Child(["sync", "--db", store, "--cloud", server.url, "--attempts", "1", "--json"],
                                              in: directory)
                        let start = ContinuousClock.now
                        while try lockWaiters(pool) == 0 && ContinuousClock.now - start < .seconds(20) {
                            Thread.sleep(forTimeInterval: 0.02)
                        }
                        try cluster.stop()
                        inFlight = child.wait()
                    }
                }
                Issue.record("the test's transaction committed on a stopped server")
            } catch let failure as PostgresFailure where failure.code == .connectionLost {
                // The test's own session went with the server, as the server's did.
            }
            let cut = try #require(inFlight)
            #expect(cut.status == 4 && cut.stderr.contains("answered 503") && cut.stderr.contains(#""error":"unavailable""#),
                    "\(cut.stderr)")

            // Frames sent while the database is away.
            let start = ContinuousClock.now
            let away = try sync(attempts: 1)
            let waited = ContinuousClock.now - start
            #expect(away.status == 4 && away.stderr.contains("answered 503") && away.stderr.contains(#""error":"unavailable""#),
                    "\(away.stderr)")
            #expect(server.child.process.isRunning)
            // At once, not after the connect timeout (10 seconds): the sync
            // gives up after one attempt, so its run is the answer's time.
            #expect(waited < .seconds(5))

            try cluster.start()
            let back = try sync(attempts: 6)
            #expect(back.status == 0, "\(back.stderr)")
            let report = try JSONReader.parse(back.stdout)
            #expect(report["pending"]?.integer == 0 && report["failure"] == .null, "\(report)")
            #expect(server.child.process.isRunning)
            #expect(server.child.errorText.components(separatedBy: "listening on").count == 2, "one start only")
            print("PostgresFaultTests: a sync while the database was away was answered in \(waited)")

            // What the device sent in both rounds is held and counted once:
            // the same as a SQLite cloud fed its twin.
            let sqlite = directory.appendingPathComponent("reference.sqlite").path
            let reference = try ServeProcess.start(db: sqlite, threshold: 1, secret: fleet.secret, in: directory)
            defer { reference.child.stop() }
            try fleet.syncTwins(to: reference.url)
            let expected = try CloudComparison(db: sqlite, in: directory)
            #expect(try CloudComparison(db: url, environment: environment, in: directory) == expected)
            #expect(expected.titles == ["Baked Potato Chips", "Lemon Sorbet", "Roasted Carrots"])
            let verify = try Child.run(["journal", "verify", "--db", url], environment: environment, in: directory)
            #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
        }
    }

    /// `--statement-timeout`: an ingest that waits longer than it on a lock
    /// is cancelled and answered 503, its connection freed; the device's
    /// next attempt succeeds.
    @Test func aStatementPastTheTimeoutIsAnsweredUnavailable() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try TestDatabase()
        let fleet = try DeviceFleet(in: directory, count: 1)
        let server = try ServeProcess.start(db: database.url, threshold: 1, secret: fleet.secret,
                                            environment: ["PGPASSWORD": database.password ?? ""], in: directory,
                                            extra: ["--statement-timeout", "1"])
        defer { server.child.stop() }
        func sync(attempts: Int) throws -> CLIRunner.Result {
            try Child.run(["sync", "--db", fleet.store(0), "--cloud", server.url, "--enrolment-secret-file", fleet.secret.path,
                           "--attempts", String(attempts)], in: directory)
        }
        try fleet.apply(round: 1)
        #expect(try sync(attempts: 1).status == 0)
        try fleet.apply(round: 2)
        let pool = PostgresPool(location: database.location, password: database.password, size: 1, statementTimeout: nil)
        defer { pool.close() }
        let held = try pool.withSession { session in
            try session.transaction {
                try session.query("SELECT 1 FROM sightline.apps WHERE app = $1 FOR UPDATE", [.text(DeviceFleet.app)])
                let start = ContinuousClock.now
                let result = try sync(attempts: 1)
                return (result, ContinuousClock.now - start)
            }
        }
        #expect(held.0.status == 4 && held.0.stderr.contains("answered 503") && held.0.stderr.contains("statement timeout"),
                "\(held.0.stderr)")
        #expect(held.1 < .seconds(8))
        let after = try sync(attempts: 3)
        #expect(after.status == 0 && after.stdout.contains(", 0 pending"), "\(after.stdout)\(after.stderr)")
    }

    // MARK: - Errors at the start

    @Test func anUnreachableDatabaseIsExit3NamingTheURLWithoutThePassword() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = "postgres://sightline@127.0.0.1:\(try freePort())/sightline"
        let password = "a-password-that-must-not-show-42"
        for command in [["cloud", "serve", "--port", "0"], ["cloud", "stats"]] {
            let start = ContinuousClock.now
            let result = try Child.run(command + ["--db", url, "--connect-timeout", "1"], environment: ["PGPASSWORD": password],
                                       in: directory)
            #expect(result.status == 3 && result.stderr.contains("error: cannot connect to PostgreSQL at \(url): Connection refused"), "\(result.stderr)")
            #expect(!result.stderr.contains(password) && !result.stdout.contains(password))
            #expect(ContinuousClock.now - start < .seconds(8))
        }
    }

    @Test func aWrongPasswordIsExit3SayingTheLoginWasRefused() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try TestDatabase()
        let result = try Child.run(["cloud", "serve", "--db", database.url, "--port", "0"],
                                   environment: ["PGPASSWORD": "not-the-password-at-all"], in: directory)
        #expect(result.status == 3 && result.stderr.contains("PostgreSQL at \(database.url) refused the login")
                && result.stderr.contains("PGPASSWORD"), "\(result.stderr)")
        #expect(!result.stderr.contains("not-the-password-at-all"))
    }

    @Test func aMissingDatabaseIsExit3SayingToCreateIt() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try TestPostgres.server()
        var location = server.location
        location.database = "t_missing_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let result = try Child.run(["cloud", "serve", "--db", location.description, "--port", "0"],
                                   environment: ["PGPASSWORD": server.password ?? ""], in: directory)
        #expect(result.status == 3 && result.stderr.contains("\"\(location.database)\" does not exist")
                && result.stderr.contains("createdb"), "\(result.stderr)")
    }

    @Test func aStoreOfANewerFormatIsRefusedSayingSo() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try TestDatabase()
        let store = try PostgresCloud(at: database.location, password: database.password)
        store.close()
        let pool = PostgresPool(location: database.location, password: database.password, size: 1)
        _ = try pool.withSession { try $0.query("UPDATE sightline.cloud_meta SET value = '11' WHERE key = 'format_version'") }
        pool.close()
        for command in [["cloud", "serve", "--port", "0"], ["cloud", "stats"], ["journal", "verify"]] {
            let result = try Child.run(command + ["--db", database.url], environment: ["PGPASSWORD": database.password ?? ""],
                                       in: directory)
            #expect(result.status == 3 && result.stderr.contains(
                "the cloud store in \(database.url) has format version 11, newer than this build's 10: use a newer sightline"),
                    "\(command): \(result.stderr)")
        }
    }

    @Test func aPasswordInTheURLIsRefusedBeforeAnythingIsOpened() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try Child.run(["cloud", "serve", "--db", "postgres://sightline:hunter2hunter2@127.0.0.1:5432/sightline",
                                    "--port", "0"], in: directory)
        #expect(result.status == 64 && result.stderr.contains("holds a password")
                && result.stderr.contains("PGPASSWORD or give a password file"), "\(result.stderr)")
        #expect(!result.stderr.contains("hunter2hunter2"))
    }
}

