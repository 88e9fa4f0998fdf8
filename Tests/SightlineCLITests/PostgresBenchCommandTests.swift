import CloudPostgres
import Foundation
import IndexModel
import PostgresTestSupport
import Testing

/// The PostgreSQL benchmarks at tiny sizes, so that their paths keep
/// working: the figures are not judged (a test is no place for timing), but
/// each run must measure both sides, report a JSON document whose verdicts
/// agree with its figures, and drop the databases it made.
///
/// Serialized: each test checks that no benchmark database is left on the
/// shared server, which another benchmark running at the same time would
/// have made.
@Suite(.serialized) struct PostgresBenchCommandTests {
    @Test func syncOnPostgresMeasuresEndToEndAgainstCopyOfTheSameRowsAndOfTheMessages() throws {
        let server = try BenchServer()
        let result = try CLIRunner.run(["bench", "sync", "--db", server.url, "--password-file", server.passwordFile,
                                        "--devices", "3", "--calls", "1000", "--json", "--dir", server.directory.path])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let report = try JSONReader.parse(result.stdout)
        #expect(report["backend"] == .string("postgres"))
        #expect(report["servers"] == .integer(1))
        let messages = try #require(report["messages"]?.integer)
        let logRows = try #require(report["logRows"]?.integer)
        #expect(messages > 1000 && logRows >= 3)
        let rate = try #require(number(report["messagesPerSecond"]))
        let copyRate = try #require(number(report["copyMessagesPerSecond"]))
        let ratio = try #require(number(report["ratio"]))
        #expect(rate > 0 && copyRate > 0)
        #expect(abs(ratio - rate / copyRate) < 0.01)
        // The baseline copies the rows the run left in the log and the projections: at least a log row a frame.
        #expect((report["copiedRows"]?.integer ?? 0) > logRows)
        let messageRowsRate = try #require(number(report["messageRowsCopyMessagesPerSecond"]))
        let messageRowsRatio = try #require(number(report["messageRowsRatio"]))
        #expect(messageRowsRate > 0)
        #expect(abs(messageRowsRatio - rate / messageRowsRate) < 0.01)
        #expect(report["meetsRateTarget"] == .bool(rate >= 100_000))
        #expect(report["meetsRatioTarget"] == .bool(ratio >= 0.5))
        #expect(try server.leftDatabases().isEmpty)
    }

    @Test func syncSpreadsItsDevicesOverSeveralServers() throws {
        let server = try BenchServer()
        let result = try CLIRunner.run(["bench", "sync", "--db", server.url, "--password-file", server.passwordFile,
                                        "--servers", "2", "--devices", "3", "--calls", "1000", "--json",
                                        "--dir", server.directory.path])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let report = try JSONReader.parse(result.stdout)
        #expect(report["servers"] == .integer(2))
        #expect((report["messages"]?.integer ?? 0) > 1000)
        #expect(try server.leftDatabases().isEmpty)
    }

    /// Each request to the next server: every frame after a device's
    /// first names a dictionary the other server made, which it makes
    /// again from the log, so no frame goes twice.
    @Test func syncWithEachRequestToTheNextServerSendsNoFrameTwice() throws {
        let server = try BenchServer()
        let result = try CLIRunner.run(["bench", "sync", "--db", server.url, "--password-file", server.passwordFile,
                                        "--servers", "2", "--spread", "frame", "--devices", "2", "--calls", "10000", "--json",
                                        "--dir", server.directory.path])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let report = try JSONReader.parse(result.stdout)
        #expect(report["spread"] == .string("frame") && report["servers"] == .integer(2))
        let frames = try #require(report["frames"]?.integer)
        #expect(frames >= 4, "at least two frames a device, so that some name a dictionary")
        #expect(report["dictionaryResets"] == .integer(0) && report["retries"] == .integer(0))
        #expect(try server.leftDatabases().isEmpty)
    }

    @Test func rebuildOnPostgresReplaysTheLogToTheSameDigest() throws {
        let server = try BenchServer()
        let result = try CLIRunner.run(["bench", "rebuild", "--db", server.url, "--password-file", server.passwordFile,
                                        "--devices", "3", "--calls", "1000", "--json"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let report = try JSONReader.parse(result.stdout)
        #expect(report["backend"] == .string("postgres"))
        #expect(report["digestUnchanged"] == .bool(true))
        #expect((report["messages"]?.integer ?? 0) > 1000)
        #expect(number(report["messagesPerSecond"]).map { $0 > 0 } == true)
        #expect(number(report["rawMessagesPerSecond"]).map { $0 > 0 } == true)
        #expect(try server.leftDatabases().isEmpty)
    }

    @Test func serversAndAPathAreRefusedWithoutAPostgresURL() throws {
        for option in [["--servers", "2"], ["--spread", "frame"]] {
            let refused = try CLIRunner.run(["bench", "sync"] + option)
            #expect(refused.status == 64)
            #expect(refused.stderr.contains("--servers and --spread need --db"), "\(refused.stderr)")
        }
        let path = try CLIRunner.run(["bench", "rebuild", "--db", "/tmp/cloud.sqlite"])
        #expect(path.status == 64)
        #expect(path.stderr.contains("--db takes a postgres:// URL"))
    }
}

/// The test server's URL and a password file for it, as a user would give them.
private struct BenchServer {
    let server: TestPostgres.Server
    let directory: URL
    let passwordFile: String

    init() throws {
        server = try TestPostgres.server()
        directory = try temporaryDirectory()
        passwordFile = directory.appendingPathComponent("password").path
        guard FileManager.default.createFile(atPath: passwordFile, contents: Data(((server.password ?? "") + "\n").utf8),
                                             attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown)
        }
    }

    var url: String { server.location.description }

    /// The benchmark databases on the server.
    func leftDatabases() throws -> [String] {
        let pool = PostgresPool(location: server.location, password: server.password, size: 1)
        defer { pool.close() }
        return try pool.withSession { session in
            try session.query("SELECT datname::text FROM pg_database WHERE datname LIKE 'sightline\\_bench\\_%'").map { try $0[0].text }
        }
    }
}
