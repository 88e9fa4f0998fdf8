import Foundation
import GRDB
import IndexModel
import PostgresTestSupport
import Testing

/// `sightline trace`: one timeline across a run's device stores and its
/// cloud, driven as a process over a real run folder.
@Suite struct TraceCommandTests {
    /// Twelve devices under heavy faults: restores, withdrawals, content
    /// agreement, and hashes on both sides of K.
    static let arguments = ["simulate", "--seed", "3", "--devices", "12", "--events-per-device", "60", "--faults", "heavy"]

    /// The run every test reads (none writes to it), made once.
    static let run: Result<URL, TraceTestError> = {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("trace-\(UUID().uuidString)")
        do {
            let result = try CLIRunner.run(arguments + ["--out", directory.path])
            guard result.status == 0 else { return .failure(TraceTestError("the run failed: \(result.stderr)")) }
            return .success(directory)
        } catch {
            return .failure(TraceTestError("the run did not start: \(error)"))
        }
    }()

    struct TraceTestError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    private func folder() throws -> String { try Self.run.get().path }

    /// Every public hash the run's cloud log names (crawled pages' hashes
    /// aside), with the device ids of the rows that carry it.
    private func loggedHashes() throws -> [String: Set<String>] {
        let rows = try CLIRunner.json(["journal", "export", "--run", folder(), "--json"])
        var hashes: [String: Set<String>] = [:]
        for case .object(let row) in rows.objectValue?["rows"]?.array ?? rows.array ?? [] {
            for case .object(let message) in row["messages"]?.array ?? [] {
                if message["kind"] != .string("page"), let hash = message["hash"]?.stringValue,
                   let device = row["device"]?.stringValue {
                    hashes[hash, default: []].insert(device)
                }
            }
        }
        return hashes
    }

    private func steps(_ trace: JSONValue) -> [JSONObject] {
        (trace.objectValue?["steps"]?.array ?? []).compactMap(\.objectValue)
    }

    @Test func everyHashOfARunFoldsFromTheLogToWhatTheCloudsProjectionsHold() throws {
        let hashes = try loggedHashes()
        #expect(hashes.count >= 10, "the run's log names \(hashes.count) hashes")
        var published = 0
        for hash in hashes.keys.sorted() {
            let result = try CLIRunner.run(["trace", hash, "--run", folder(), "--json"])
            // A fold that differs from the projections is a problem, exit 1.
            #expect(result.status == 0, "\(hash): \(result.stderr)")
            let trace = try JSONReader.parse(result.stdout)
            #expect(trace.objectValue?["problems"]?.array == [])
            let verdicts = trace.objectValue?["verdicts"]?.array ?? []
            #expect(verdicts.count == 1 && verdicts.first?.objectValue?["hash"]?.stringValue == hash)
            let times = steps(trace).compactMap { $0["time"]?.stringValue }
            #expect(times == times.sorted(), "\(hash): the timeline is in time order")
            let decisions = steps(trace).flatMap { $0["decisions"]?.array ?? [] }.compactMap { $0.objectValue?["kind"]?.stringValue }
            if verdicts.first?.objectValue?["public"] == .bool(true) {
                published += 1
                #expect(decisions.contains("reachedK") && decisions.contains("published"), "\(hash): \(decisions)")
            } else {
                #expect(!decisions.contains("published") || decisions.contains("unpublished"), "\(hash): \(decisions)")
            }
        }
        #expect(published >= 1, "the run publishes at least one entry")
    }

    @Test func anActivityIsJoinedToItsPublicHashFromEachDeviceToTheCloud() throws {
        let trace = try CLIRunner.json(["trace", "pub-3", "--run", folder(), "--json"])
        let all = steps(trace)
        let recorded = all.filter { $0["event"] == .string("activityRecorded") }
        #expect(!recorded.isEmpty)
        let hashes = Set(recorded.compactMap { $0["hash"]?.stringValue })
        #expect(hashes.count == 1, "one public hash for one activity on every device: \(hashes)")
        let cloud = all.filter { $0["at"] == .string("cloud") }
        #expect(!cloud.isEmpty && cloud.allSatisfy { $0["hash"]?.stringValue.map(hashes.contains) == true })
        // Every vote the cloud logged from a device never restored comes from
        // one whose journal recorded the activity (a restore takes the
        // journal back to a backup, which may predate it).
        let manifest = try JSONReader.parse(String(contentsOfFile: folder() + "/run.json", encoding: .utf8))
        let neverRestored = Set((manifest.objectValue?["devices"]?.array ?? []).compactMap(\.objectValue)
            .filter { $0["replacedStores"]?.array?.isEmpty == true }.compactMap { $0["id"]?.stringValue })
        let recorders = Set(recorded.compactMap { $0["device"]?.stringValue })
        var checked = 0
        for vote in cloud where vote["event"] == .string("vote") {
            guard let device = vote["log"]?.objectValue?["device"]?.stringValue, neverRestored.contains(device) else { continue }
            checked += 1
            #expect(recorders.contains(device), "\(vote)")
        }
        #expect(checked >= 1)
        // The text names the same hash and each device by its number in the run.
        let text = try CLIRunner.run(["trace", "pub-3", "--run", folder()])
        #expect(text.status == 0 && text.stdout.contains("cloud ← device ") && text.stdout.contains(String(hashes.first!.prefix(16))))
    }

    /// `--device N` keeps one device's side of the story: its own steps and
    /// the cloud's rows from it, nobody else's.
    @Test func aTraceNarrowedToOneDeviceKeepsOnlyThatDevicesSteps() throws {
        let whole = steps(try CLIRunner.json(["trace", "pub-3", "--run", folder(), "--json"]))
        let voters = Set(whole.filter { $0["event"] == .string("vote") }.compactMap { $0["log"]?.objectValue?["label"]?.stringValue })
        let label = try #require(voters.sorted().first, "someone voted for pub-3")
        let number = String(label.dropFirst("device ".count))
        let narrowed = steps(try CLIRunner.json(["trace", "pub-3", "--run", folder(), "--device", number, "--json"]))
        #expect(!narrowed.isEmpty && narrowed.count < whole.count)
        #expect(narrowed.allSatisfy { $0["label"] == .string(label) || $0["log"]?.objectValue?["label"] == .string(label) },
                "\(narrowed)")
        #expect(narrowed.contains { $0["event"] == .string("vote") })
        let alone = try CLIRunner.run(["trace", "pub-3", "--db", folder() + "/cloud.sqlite", "--device", number])
        #expect(alone.status == 64 && alone.stderr.contains("--device goes with --run"))
    }

    @Test func whyNotPublicGivesReasonsInCountsAndNeverNamesADevice() throws {
        let manifest = try JSONReader.parse(String(contentsOfFile: folder() + "/run.json", encoding: .utf8))
        let ids = (manifest.objectValue?["devices"]?.array ?? []).compactMap { $0.objectValue?["id"]?.stringValue }
        var below = 0
        for hash in try loggedHashes().keys.sorted() {
            let result = try CLIRunner.run(["trace", hash, "--run", folder(), "--why-not-public"])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.hasPrefix(hash), "\(result.stdout)")
            #expect(!ids.contains { result.stdout.contains($0) } && !result.stdout.contains("device "), "\(result.stdout)")
            if result.stdout.contains("not public") {
                below += 1
                #expect(result.stdout.contains("live vote") || result.stdout.contains("no vote"), "\(result.stdout)")
            }
        }
        #expect(below >= 1)
        let privateOnly = try CLIRunner.run(["trace", "private-1", "--run", folder(), "--why-not-public"])
        #expect(privateOnly.status == 0 && privateOnly.stdout.contains("private"), "\(privateOnly.stdout)")
    }

    @Test func aDeviceTraceShowsEveryFrameTheCloudAcceptedFromItAndItsCursor() throws {
        let manifest = try JSONReader.parse(String(contentsOfFile: folder() + "/run.json", encoding: .utf8))
        guard let device = manifest.objectValue?["devices"]?.array?.dropFirst(3).first?.objectValue,
              let id = device["id"]?.stringValue else {
            Issue.record("run.json has no device 3")
            return
        }
        let export = try CLIRunner.json(["journal", "export", "--run", folder(), "--json"])
        let rows = (export.objectValue?["rows"]?.array ?? export.array ?? []).compactMap(\.objectValue)
        let logged = rows.filter { $0["device"] == .string(id) }.compactMap { $0["seq"] }
        for selector in ["device:3", "device:" + id] {
            let trace = try CLIRunner.json(["trace", selector, "--run", folder(), "--json"])
            let frames = steps(trace).filter { $0["event"] == .string("frame") }
            #expect(frames.compactMap { $0["log"]?.objectValue?["row"] } == logged, "\(selector)")
            #expect(steps(trace).contains { $0["event"] == .string("syncCursor") && $0["label"] == .string("device 3") })
            #expect(steps(trace).contains { $0["event"] == .string("cloudPosition") })
        }
    }

    @Test func badTargetsAndStoreChoicesAreUsageErrors() throws {
        let run = try folder()
        for arguments in [["trace", "hash:zz", "--run", run], ["trace", "pub-3"], ["trace", "", "--run", run],
                          ["trace", "pub-3", "--run", run, "--db", run + "/cloud.sqlite"],
                          ["trace", "pub-3", "--db", run + "/cloud.sqlite", "--db", run + "/cloud.sqlite"],
                          ["trace", "pub-3", "--run", run + "/nowhere"]] {
            let result = try CLIRunner.run(arguments)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
        }
        let missing = try CLIRunner.run(["trace", "pub-3", "--db", run + "/no-such-device.sqlite"])
        #expect(missing.status == 3, "\(missing.stderr)")
        let nothing = try CLIRunner.run(["trace", "never-mentioned", "--run", run])
        #expect(nothing.status == 0 && nothing.stdout.contains("nothing in the"), "\(nothing.stdout)")
    }

    @Test func aTraceOfARunOnPostgreSQLIsTheTraceOfTheSameRunOnSQLite() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("trace-pg-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try TestPostgres.withDatabase { _, server in
            let environment = ["PGPASSWORD": server.password ?? ""]
            let run = try Child.run(Self.arguments + ["--cloud-db", server.location.description, "--out", directory.path],
                                    environment: environment, in: FileManager.default.temporaryDirectory, timeout: .seconds(300))
            #expect(run.status == 0, "\(run.stderr)")
            for target in ["pub-3", "device:3"] {
                let onPostgres = try Child.json(["trace", target, "--run", directory.path, "--json"], environment: environment,
                                                in: FileManager.default.temporaryDirectory)
                let onSQLite = try CLIRunner.json(["trace", target, "--run", folder(), "--json"])
                // The same seed makes the same run: the same steps, but where
                // the device trace says what the cloud holds, which is read now.
                func comparable(_ trace: JSONValue) -> [JSONObject] { steps(trace).filter { $0["event"] != .string("cloudPosition") } }
                #expect(!comparable(onSQLite).isEmpty && comparable(onPostgres) == comparable(onSQLite), "\(target)")
                #expect(onPostgres.objectValue?["verdicts"] == onSQLite.objectValue?["verdicts"])
            }
        }
    }

    @Test func aCloudWhoseProjectionsDifferFromItsLogMakesTheTraceSaySoAndExit1() throws {
        let source = try Self.run.get()
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("trace-edited-\(UUID().uuidString)")
        try FileManager.default.copyItem(at: source, to: copy)
        defer { try? FileManager.default.removeItem(at: copy) }
        guard let (hash, _) = try loggedHashes().first else {
            Issue.record("the run's log names no hash")
            return
        }
        // One vote more in every projection row than the log holds.
        try DatabaseQueue(path: copy.appendingPathComponent("cloud.sqlite").path).write { db in
            try db.execute(sql: "UPDATE hashes SET live_votes = live_votes + 1")
        }
        let result = try CLIRunner.run(["trace", hash, "--db", copy.appendingPathComponent("cloud.sqlite").path])
        #expect(result.status == 1)
        #expect(result.stderr.contains("the projections hold") && result.stderr.contains("journal verify"), "\(result.stderr)")
    }
}

private extension JSONValue {
    var objectValue: JSONObject? {
        if case .object(let object) = self { return object }
        return nil
    }
}
