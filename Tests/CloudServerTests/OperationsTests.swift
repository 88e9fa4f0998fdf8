import CloudCore
import CloudPostgres
@testable import CloudServer
import CloudSQLite
import DeviceStore
import Foundation
import IndexModel
import Logging
import PostgresTestSupport
import ScratchDirectory
import ServerTestSupport
import Synchronization
import SyncHTTP
import SyncWire
import Testing

/// What an operator watches a served cloud with: `/metrics` as Prometheus's
/// own checker reads it, the access log, the admin status page, and the
/// alerting rules and dashboard of `docs/operations/`, checked against
/// the metrics a server really serves.
@Suite(.serialized) struct OperationsTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let operations = repository.appendingPathComponent("docs/operations")

    /// A scrape's families: each name with its `# TYPE`, whether it has a
    /// `# HELP`, and its samples (name with labels, as written → value).
    struct Scrape {
        var types: [String: String] = [:]
        var helped: Set<String> = []
        var samples: [String: Double] = [:]

        init(_ text: String) throws {
            for line in text.split(separator: "\n") {
                let words = line.split(separator: " ", maxSplits: 3)
                if line.hasPrefix("# TYPE "), words.count == 4 {
                    types[String(words[2])] = String(words[3])
                } else if line.hasPrefix("# HELP "), words.count == 4 {
                    helped.insert(String(words[2]))
                } else if !line.hasPrefix("#") {
                    guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                        throw TransportError("not a Prometheus sample: \(line)")
                    }
                    samples[String(line[..<space])] = value
                }
            }
        }

        /// The samples of family `name` (a histogram's `_bucket`, `_sum` and `_count` included).
        func of(_ name: String) -> [String: Double] {
            samples.filter { sample in
                let base = sample.key.prefix { $0 != "{" }
                return base == name || (types[name] == "histogram" && ["_bucket", "_sum", "_count"].contains { base == name + $0 })
            }
        }
    }

    /// Runs `promtool` with `arguments` and `input` on its standard input;
    /// fails the test when Debian's `prometheus` package (tools/install-deps) is missing.
    static func promtool(_ arguments: [String], input: String? = nil,
                         in directory: URL? = nil) throws -> (status: Int32, output: String) {
        let path = ["/usr/bin/promtool", "/usr/local/bin/promtool"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let path else {
            throw TransportError("promtool is not installed: tools/install-deps installs Debian's prometheus package, which has it")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        let output = Pipe()
        let stdin = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = input == nil ? FileHandle.nullDevice : stdin
        try process.run()
        if let input {
            stdin.fileHandleForWriting.write(Data(input.utf8))
            try stdin.fileHandleForWriting.close()
        }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    @Test func aFreshServersMetricsPassPromtoolWithEveryCounterAtZero() async throws {
        let server = try await RunningServer.start(threshold: 2)
        defer { Task { await server.stop() } }
        let metrics = try await server.admin("/metrics")
        #expect(metrics.status == 200)
        let check = try Self.promtool(["check", "metrics"], input: metrics.body)
        #expect(check.status == 0 && check.output.isEmpty, "promtool check metrics: \(check.output)")

        let scrape = try Scrape(metrics.body)
        // Every family has its help, and every counter its series before any event.
        #expect(Set(scrape.types.keys) == scrape.helped)
        for (name, type) in scrape.types where type == "counter" {
            #expect(!scrape.of(name).isEmpty, "\(name) has no series")
        }
        for code in WireError.Code.allCases {
            #expect(scrape.samples[#"sightline_frames_rejected_total{reason="\#(code.name)"}"#] == 0)
        }
        for reason in ServerMetrics.enrolmentRefusalReasons {
            #expect(scrape.samples[#"sightline_enrolments_refused_total{reason="\#(reason)"}"#] == 0)
        }
        for reason in ServerMetrics.searchRefusalReasons {
            #expect(scrape.samples[#"sightline_searches_refused_total{reason="\#(reason)"}"#] == 0)
        }
        #expect(scrape.samples[#"sightline_http_requests_total{listener="public",route="/v1/sync",status_class="4xx"}"#] == 0)
        #expect(scrape.samples["sightline_frames_accepted_total"] == 0)
        // The build, the store and the process.
        #expect(scrape.samples.contains { $0.key.hasPrefix("sightline_build_info{") && $0.key.contains(#"wire_version="\#(UploadFrame.version)""#) && $0.value == 1 })
        #expect(scrape.samples["sightline_store_up"] == 1)
        #expect(scrape.samples["sightline_threshold"] == 2)
        #expect(scrape.samples["sightline_apps"] == 1)
        #expect(scrape.samples[#"sightline_log_rows{app="\#(RunningServer.app)"}"#] == 0)
        #expect(scrape.samples[#"sightline_enrolled_devices{app="\#(RunningServer.app)"}"#] == 0)
        #expect(scrape.types["process_cpu_seconds_total"] == "counter")
        #expect((scrape.samples["process_resident_memory_bytes"] ?? 0) > 1_048_576)
        let started = try #require(scrape.samples["process_start_time_seconds"])
        #expect(abs(started - Date().timeIntervalSince1970) < 24 * 3600)
        let open = try #require(scrape.samples["process_open_fds"])
        #expect(open > 3 && open <= (scrape.samples["process_max_fds"] ?? 0))
        // No periodic snapshots, so no snapshot age; no pool on SQLite.
        #expect(scrape.types["sightline_snapshot_age_seconds"] == nil && scrape.types["sightline_db_pool_connections"] == nil)
    }

    @Test func theStoreFiguresAndRequestCountsFollowRealSyncs() async throws {
        let server = try await RunningServer.start(threshold: 2)
        defer { Task { await server.stop() } }
        try await ObservabilityTests.publishRecipe(on: server, seeds: 81...82)
        #expect(try await server.request("/v1/sync", body: Array("not a frame".utf8)).status == 400)
        #expect(try await server.request("/nowhere").status == 404)
        let scrape = try Scrape(try await server.admin("/metrics").body)
        let heads = try server.cloud.logHeads()
        #expect(scrape.samples[#"sightline_log_rows{app="\#(RunningServer.app)"}"#] == Double(heads.first?.rows ?? -1))
        #expect(scrape.samples[#"sightline_public_items{app="\#(RunningServer.app)"}"#] == Double(try server.cloud.publicItemCount()))
        #expect(scrape.samples[#"sightline_public_items{app="\#(RunningServer.app)"}"#] == 1)
        #expect(scrape.samples[#"sightline_enrolled_devices{app="\#(RunningServer.app)"}"#] == 2)
        #expect(scrape.samples["sightline_enrolments_accepted_total"] == 2)
        let syncs = try #require(scrape.samples[#"sightline_http_requests_total{listener="public",route="/v1/sync",status_class="2xx"}"#])
        let frames = (scrape.samples["sightline_frames_accepted_total"] ?? 0) + (scrape.samples["sightline_frames_duplicate_total"] ?? 0)
        #expect(syncs == frames && syncs > 0)
        #expect(scrape.samples[#"sightline_http_requests_total{listener="public",route="/v1/sync",status_class="4xx"}"#] == 1)
        #expect(scrape.samples[#"sightline_http_requests_total{listener="public",route="unmatched",status_class="4xx"}"#] == 1)
        #expect(scrape.samples[#"sightline_http_request_duration_seconds_count{listener="public",route="/v1/sync"}"#] == syncs + 1)
    }

    /// The age counts from the newest snapshot in the folder when the
    /// server starts (a restart does not reset it), then from each one
    /// written; without a schedule nothing is reported as late.
    @Test func theSnapshotAgeCountsFromTheLastGoodSnapshot() async throws {
        let directory = try ScratchDirectory.make("sightline-snapshot-age")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await RunningServer.start(threshold: 2)
        defer { Task { await server.stop() } }
        let old = Date().timeIntervalSince1970 - 600
        try Data().write(to: directory.appendingPathComponent("cloud-\(Int64(old * 1000)).snap"))
        try Data().write(to: directory.appendingPathComponent("cloud-12.snap.partial"))
        server.server.snapshotStatus.schedule(every: 60, into: directory.path)
        var scrape = try Scrape(try await server.admin("/metrics").body)
        #expect(scrape.samples["sightline_snapshot_interval_seconds"] == 60)
        let age = try #require(scrape.samples["sightline_snapshot_age_seconds"])
        #expect(age >= 599 && age < 660)
        #expect(abs((scrape.samples["sightline_snapshot_last_success_timestamp_seconds"] ?? 0) - old) < 0.01)

        let snapshots = PeriodicSnapshots(cloud: server.cloud, directory: directory.path, kept: 2, key: nil,
                                          logger: Logger(label: "test"), status: server.server.snapshotStatus)
        #expect(await snapshots.takeSnapshot() != nil)
        scrape = try Scrape(try await server.admin("/metrics").body)
        #expect((scrape.samples["sightline_snapshot_age_seconds"] ?? .infinity) < 30)
        #expect(scrape.samples[#"sightline_snapshots_total{outcome="written"}"#] == 1)
        #expect(scrape.samples[#"sightline_snapshots_total{outcome="failed"}"#] == 0)

        let page = try await server.admin("/")
        #expect(page.status == 200 && page.body.contains("every 1 min 0 s into \(directory.path)"))
        #expect(page.body.contains("last good snapshot cloud-"))
    }

    /// A snapshot that cannot be written is counted as failed and moves no age.
    @Test func aFailedSnapshotIsCountedAndTheAgeGoesOn() async throws {
        let directory = try ScratchDirectory.make("sightline-snapshot-fails")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await RunningServer.start(threshold: 2)
        defer { Task { await server.stop() } }
        // A file where the snapshot folder should be.
        let blocked = directory.appendingPathComponent("snapshots")
        try Data("not a folder".utf8).write(to: blocked)
        server.server.snapshotStatus.schedule(every: 60, into: blocked.path)
        let snapshots = PeriodicSnapshots(cloud: server.cloud, directory: blocked.path, kept: 2, key: nil,
                                          logger: Logger(label: "test"), status: server.server.snapshotStatus)
        #expect(await snapshots.takeSnapshot() == nil)
        let scrape = try Scrape(try await server.admin("/metrics").body)
        #expect(scrape.samples[#"sightline_snapshots_total{outcome="failed"}"#] == 1)
        #expect(scrape.samples["sightline_snapshot_last_success_timestamp_seconds"] == 0)
    }

    @Test func everyRequestLogsOneAccessLineWithNumbersAndNoSearchText() async throws {
        let captured = ObservabilityTests.Captured()
        var logger = Logger(label: "sightline.cloud") { label in
            JSONLogHandler(label: label, sink: JSONLogHandler.Sink { line in captured.lines.withLock { $0.append(line) } })
        }
        logger.logLevel = .info
        let server = try await RunningServer.start(threshold: 2, logger: logger)
        defer { Task { await server.stop() } }
        let answers = [
            try await server.exchange("/healthz"),
            try await server.exchange("/v1/sync", body: Array("not a frame".utf8)),
            try await server.exchange("/v1/apps/\(RunningServer.app)/public?q=confidential-words"),
            try await server.exchange("/nowhere"),
        ]
        let lines = captured.objects.filter { $0["message"] == .string("request") }
        #expect(lines.count == answers.count)
        for (answer, route) in zip(answers, ["/healthz", "/v1/sync", "/v1/apps/{app}/public", "unmatched"]) {
            let line = try #require(lines.first { $0["request"] == answer.requestID.map(JSONValue.string) })
            #expect(line["level"] == .string("info") && line["listener"] == .string("public") && line["route"] == .string(route))
            #expect(line["status"] == .integer(Int64(answer.status)))
            #expect(line["bytes"] == .integer(Int64(answer.body.utf8.count)))
            // A JSON number: a whole number of milliseconds reads back as an integer.
            let milliseconds: Double
            switch line["durationMs"] {
            case .double(let value)?: milliseconds = value
            case .integer(let value)?: milliseconds = Double(value)
            default:
                Issue.record("durationMs is not a number: \(line)")
                continue
            }
            #expect(milliseconds >= 0 && milliseconds < 10_000)
            #expect(line["address"] == .string("127.0.0.1"))
        }
        #expect(lines.first { $0["route"] == .string("/v1/sync") }?["requestBytes"] == .integer(11))
        #expect(captured.lines.withLock { $0 }.allSatisfy { !$0.contains("confidential-words") })
    }

    @Test func theAdminStatusPageNamesTheBuildStoreAppsAndLinks() async throws {
        let server = try await RunningServer.start(threshold: 2)
        defer { Task { await server.stop() } }
        try await ObservabilityTests.publishRecipe(on: server, seeds: 91...92)
        let page = try await server.admin("/")
        #expect(page.status == 200)
        let rows = try server.cloud.logHeads().first?.rows ?? -1
        for text in ["<title>Sightline cloud</title>", "wire version \(UploadFrame.version)", "K = 2 live votes",
                     "<tr><td>\(RunningServer.app)</td><td>\(rows)</td><td>1</td><td>2</td></tr>",
                     "periodic snapshots are off", #"<a href="/metrics">"#, #"<a href="/v1/stats">"#] {
            #expect(page.body.contains(text), "the status page lacks \(text)")
        }
        #expect(!page.body.contains("<script"))
        let metrics = try await server.admin("/metrics")
        #expect(try Scrape(metrics.body).samples[#"sightline_http_requests_total{listener="admin",route="/",status_class="2xx"}"#] == 1)
    }

    @Test func theStatusPageEscapesWhatTheStoreHolds() {
        let page = StatusPage(build: BuildInfo(version: "v<1>", labels: []), store: "/tmp/a&b<c>.sqlite", threshold: 3, agreement: 2,
                              apps: [AppFigures(app: AppID("<img src=x>"), logRows: 1, publicItems: 2, devices: 3)],
                              snapshot: (nil, nil, nil, nil), uptime: 5)
        #expect(page.html.contains("/tmp/a&amp;b&lt;c&gt;.sqlite") && page.html.contains("&lt;img src=x&gt;") && page.html.contains("v&lt;1&gt;"))
        #expect(!page.html.contains("<img") && !page.html.contains("a&b"))
    }

    /// The rules load and their unit tests pass in Prometheus's own
    /// checker, and the rules and the dashboard name only metrics a served
    /// cloud serves (on SQLite, and on PostgreSQL for the pool's).
    @Test func theOperationsRulesAndDashboardPassPromtoolAndNameOnlyServedMetrics() async throws {
        let rules = try Self.promtool(["check", "rules", "alerts.yml"], in: Self.operations)
        #expect(rules.status == 0, "promtool check rules: \(rules.output)")
        let unitTests = try Self.promtool(["test", "rules", "alerts-test.yml"], in: Self.operations)
        #expect(unitTests.status == 0, "promtool test rules: \(unitTests.output)")

        var served = try await Self.servedFamilies(over: nil)
        let database = try TestDatabase()
        let postgres = try PostgresCloud(at: database.location, password: database.password,
                                         options: PostgresCloudOptions(store: CloudOptions(threshold: 2), poolSize: 2))
        defer { postgres.close() }
        try postgres.registerApp(RunningServer.app, enrolmentSecret: RunningServer.secret, maximumDevices: nil)
        let postgresFamilies = try await Self.servedFamilies(over: postgres)
        #expect(postgresFamilies.contains("sightline_db_pool_connections") && postgresFamilies.contains("sightline_db_pool_max_connections"))
        served.formUnion(postgresFamilies)

        let dashboard = try Data(contentsOf: Self.operations.appendingPathComponent("sightline-dashboard.json"))
        let expressions = Self.expressions(in: try JSONReader.parse([UInt8](dashboard)))
        #expect(expressions.count >= 20)
        let alerts = try String(contentsOf: Self.operations.appendingPathComponent("alerts.yml"), encoding: .utf8)
        var named: Set<String> = []
        for text in expressions + [alerts] {
            for match in text.matches(of: /\b(?:sightline|process)_[a-z_]+/) {
                named.insert(String(match.output))
            }
        }
        #expect(named.count >= 15)
        for name in named.sorted() {
            let family = ["_bucket", "_sum", "_count"].first { name.hasSuffix($0) && served.contains(String(name.dropLast($0.count))) }
                .map { String(name.dropLast($0.count)) } ?? name
            #expect(served.contains(family), "docs/operations names \(name), which no served cloud exposes")
        }
    }

    /// The families a served cloud's `/metrics` has, with periodic snapshots scheduled.
    static func servedFamilies(over store: (any CloudStore)?) async throws -> Set<String> {
        let directory = try ScratchDirectory.make("sightline-operations")
        defer { try? FileManager.default.removeItem(at: directory) }
        let text: String
        if let store {
            let server = CloudServer(cloud: store, configuration: CloudServerConfiguration(port: 0))
            server.snapshotStatus.schedule(every: 60, into: directory.path)
            let (ports, continuation) = AsyncStream<Int>.makeStream()
            let admin = server.adminApplication(port: 0) { continuation.yield($0) }
            let task = Task { try await admin.run() }
            defer { task.cancel() }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { throw TransportError("the admin listener did not start") }
            text = try await RunningServer.get("http://127.0.0.1:\(port)/metrics").body
        } else {
            let server = try await RunningServer.start(threshold: 2)
            defer { Task { await server.stop() } }
            server.server.snapshotStatus.schedule(every: 60, into: directory.path)
            text = try await server.admin("/metrics").body
        }
        let check = try promtool(["check", "metrics"], input: text)
        #expect(check.status == 0, "promtool check metrics: \(check.output)")
        return Set(try Scrape(text).types.keys)
    }

    /// Every `expr` in a Grafana dashboard, its panels' targets and its variables' queries.
    static func expressions(in value: JSONValue) -> [String] {
        switch value {
        case .object(let object):
            var found: [String] = []
            for (key, member) in object.members.map({ ($0.key, $0.value) }) {
                if key == "expr", case .string(let text) = member { found.append(text) }
                if key == "query", case .string(let text) = member, text.contains("(") { found.append(text) }
                found += expressions(in: member)
            }
            return found
        case .array(let elements):
            return elements.flatMap(expressions)
        default:
            return []
        }
    }
}
