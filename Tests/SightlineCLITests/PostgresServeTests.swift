import CloudPostgres
import Foundation
import IndexModel
import PostgresTestSupport
import Testing

/// Several `sightline cloud serve` processes on one PostgreSQL database,
/// devices syncing to them with `sightline sync`, each compared with a
/// SQLite cloud fed twins of the same device stores (`DeviceFleet`).
@Suite(.serialized) struct PostgresServeTests {
    static let publicTitles = ["Baked Potato Chips", "Lemon Sorbet", "Pea Pesto", "Roasted Carrots"]

    /// Two servers, devices alternating between them round by round. In the
    /// third round two devices are acknowledged by the first server, then
    /// the others' frames are held mid-transaction (a lock on the app's row)
    /// and that server is killed with SIGKILL; everything then goes to the
    /// second server, and nothing acknowledged is missing.
    @Test func twoServersMatchASQLiteCloudThoughOneIsKilledMidTransaction() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try TestDatabase()
        let environment = ["PGPASSWORD": database.password ?? ""]
        let fleet = try DeviceFleet(in: directory, count: 6)
        let starting = try (0..<2).map { _ in
            try ServeProcess.starting(db: database.url, threshold: DeviceFleet.threshold, secret: fleet.secret,
                                      environment: environment, in: directory)
        }
        defer { for server in starting { server.child.stop() } }
        let servers = try starting.map { try $0.listening() }

        for round in 1...DeviceFleet.rounds {
            try fleet.apply(round: round)
            guard round == DeviceFleet.rounds else {
                _ = try fleet.sync(fleet.devices.map(fleet.store), to: fleet.devices.map { servers[($0 + round) % 2].url })
                continue
            }
            let (killed, survivor) = (servers[0], servers[1])
            _ = try fleet.sync([fleet.store(0), fleet.store(1)], to: [killed.url, killed.url])
            let failed = try syncsKilledMidTransaction(fleet: fleet, devices: Array(2..<fleet.count), server: killed,
                                                       database: database)
            for result in failed {
                #expect(result.status == 4, "a sync to the killed server: \(result.stdout)\(result.stderr)")
            }
            #expect(!killed.child.process.isRunning)
            _ = try fleet.sync(fleet.devices.map(fleet.store), to: Array(repeating: survivor.url, count: fleet.count))
        }
        for _ in 0..<2 {
            for report in try fleet.sync(fleet.devices.map(fleet.store), to: Array(repeating: servers[1].url, count: fleet.count)) {
                #expect(report["pending"]?.integer == 0 && report["failure"] == .null, "\(report)")
            }
        }
        try expectSameAsSQLite(fleet: fleet, database: database, environment: environment, in: directory)
    }

    /// Three servers, every device syncing in each round at once to another
    /// server than in the last. A device's reply is lost after the first
    /// server committed its frame (`LostReplyRelay`): sent again to a second
    /// server, the frame is a duplicate, acknowledged and not appended. A
    /// stale copy of a device that sends other messages under positions the
    /// cloud holds is caught as equivocation on a third server.
    @Test func threeServersMatchASQLiteCloudWithRetriesAndEquivocationAcrossServers() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try TestDatabase()
        let environment = ["PGPASSWORD": database.password ?? ""]
        let fleet = try DeviceFleet(in: directory, count: 6)
        let starting = try (0..<3).map { _ in
            try ServeProcess.starting(db: database.url, threshold: DeviceFleet.threshold, secret: fleet.secret,
                                      environment: environment, in: directory)
        }
        defer { for server in starting { server.child.stop() } }
        let servers = try starting.map { try $0.listening() }
        func server(_ device: Int, _ round: Int) -> String { servers[(device + round) % 3].url }
        func port(_ url: String) -> Int { Int(url.split(separator: ":").last ?? "") ?? 0 }
        func logRows() throws -> Int64? {
            try Child.json(["cloud", "stats", "--db", database.url, "--json"], environment: environment, in: directory)["logRows"]?
                .integer
        }

        let stale = directory.appendingPathComponent("stale5.sqlite").path
        for round in 1...DeviceFleet.rounds {
            if round == 2 { try DeviceFleet.copyStore(fleet.store(5), to: stale) }
            try fleet.apply(round: round)
            var others = Array(fleet.devices)
            if round == 2 {
                // Device 0's first frame is committed by one server and its
                // reply lost; the device sends it again, to another server.
                let relay = try LostReplyRelay(first: port(servers[0].url), second: port(servers[1].url))
                defer { relay.close() }
                let before = try logRows()
                let retried = try fleet.sync([fleet.store(0)], to: ["http://127.0.0.1:\(relay.port)"])
                #expect(relay.droppedAReply)
                #expect(retried.first?["retries"]?.integer == 1 && retried.first?["pending"]?.integer == 0, "\(retried)")
                // `frames` counts the frame sent twice twice; the cloud log
                // holds it once, appended by the first server.
                let frames = retried.first?["frames"]?.integer ?? 0
                let after = try logRows()
                #expect(after == (before ?? 0) + frames - 1, "log rows \(before ?? -1) then \(after ?? -1), \(frames) frames sent")
                others.removeFirst()
            }
            _ = try fleet.sync(others.map(fleet.store), to: others.map { server($0, round) })
            if round == 2 {
                // The stale copy of device 5 makes other calls at the
                // positions round 2 used.
                let other = directory.appendingPathComponent("stale-ops.jsonl")
                try write([#"{"op":"engage","ref":"\#(DeviceFleet.recipes[3].url)"}"#], to: other)
                #expect(try Child.run(["device", "apply", "--db", stale, other.path], in: directory).status == 0)
                let refused = try Child.run(["sync", "--db", stale, "--cloud", server(6, round)], in: directory)
                #expect(refused.status == 4 && refused.stderr.contains("equivocation"), "\(refused.stderr)")
            }
        }
        for round in 1...2 {
            for report in try fleet.sync(fleet.devices.map(fleet.store), to: fleet.devices.map { server($0, round) }) {
                #expect(report["pending"]?.integer == 0 && report["failure"] == .null, "\(report)")
            }
        }
        let stats = try Child.json(["cloud", "stats", "--db", database.url, "--json"], environment: environment, in: directory)
        #expect(stats["equivocations"]?.integer == 1)
        try expectSameAsSQLite(fleet: fleet, database: database, environment: environment, in: directory)
    }

    // MARK: - Helpers

    /// Syncs `devices` to `server` at once while a session of the test holds
    /// the app's row, so that the server's ingest transactions wait inside,
    /// past the device's lock; kills the server with SIGKILL once one waits
    /// (two, where the server runs two at once), and returns what each
    /// sync reported.
    private func syncsKilledMidTransaction(fleet: DeviceFleet, devices: [Int], server: ServeProcess,
                                           database: TestDatabase) throws -> [CLIRunner.Result] {
        let pool = PostgresPool(location: database.location, password: database.password, size: 2, statementTimeout: nil)
        defer { pool.close() }
        return try pool.withSession { session in
            try session.transaction {
                try session.query("SELECT 1 FROM sightline.apps WHERE app = $1 FOR UPDATE", [.text(DeviceFleet.app)])
                // One attempt each, and a short timeout: a request to a dead
                // server fails only when its timeout runs out (the HTTP
                // client keeps trying to connect until then).
                let syncs = try devices.map { device in
                    try Child(["sync", "--db", fleet.store(device), "--cloud", server.url, "--enrolment-secret-file", fleet.secret.path,
                               "--attempts", "1", "--timeout", "2"], in: fleet.directory)
                }
                let start = ContinuousClock.now
                var waiting = 0
                while ContinuousClock.now - start < .seconds(20) {
                    waiting = try lockWaiters(pool)
                    if waiting >= 2 || (waiting >= 1 && ContinuousClock.now - start > .seconds(3)) { break }
                    Thread.sleep(forTimeInterval: 0.02)
                }
                #expect(waiting >= 1, "no ingest transaction waited on the app's row")
                print("PostgresServeTests: the server was killed with \(waiting) ingest transactions waiting on the app's row")
                server.child.crash()
                return syncs.map { $0.wait() }
            }
        }
    }

    /// Feeds the twins to a SQLite `cloud serve` and expects the same totals
    /// and public index as the PostgreSQL store's, and both stores to verify.
    private func expectSameAsSQLite(fleet: DeviceFleet, database: TestDatabase, environment: [String: String],
                                    in directory: URL, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let sqlite = directory.appendingPathComponent("reference.sqlite").path
        let reference = try ServeProcess.start(db: sqlite, threshold: DeviceFleet.threshold, secret: fleet.secret, in: directory)
        defer { reference.child.stop() }
        try fleet.syncTwins(to: reference.url)
        let expected = try CloudComparison(db: sqlite, in: directory, sourceLocation: sourceLocation)
        let found = try CloudComparison(db: database.url, environment: environment, in: directory, sourceLocation: sourceLocation)
        #expect(found == expected, sourceLocation: sourceLocation)
        #expect(expected.titles == PostgresServeTests.publicTitles, sourceLocation: sourceLocation)
        #expect(expected.totals["devices"]?.integer == Int64(fleet.count) && expected.totals["wanted"]?.integer == 0,
                sourceLocation: sourceLocation)
        for (store, environment) in [(sqlite, [:]), (database.url, environment)] {
            let verify = try Child.run(["journal", "verify", "--db", store], environment: environment, in: directory)
            #expect(verify.status == 0 && verify.stdout.contains("projections equal a rebuild"), "\(verify.stdout)\(verify.stderr)",
                    sourceLocation: sourceLocation)
        }
    }
}
