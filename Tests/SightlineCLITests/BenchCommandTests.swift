import Foundation
import IndexModel
import Testing

@Suite struct BenchCommandTests {
    /// A small run: the figures are not checked (a test is no place for timing),
    /// but both workloads must run on both sides, over the same number of events,
    /// and report their rates, ratio and target.
    @Test func linearReportsEachParserAndTheQueryAtTwoSizes() throws {
        // Small sizes keep the command working; what they measure is `bench linear`'s to say at full size.
        let result = try CLIRunner.run(["bench", "linear", "--size", "200", "--factor", "2", "--rounds", "1", "--json"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let cases = try #require(try JSONReader.parse(result.stdout)["cases"]?.array)
        #expect(cases.count == 5)
        func number(_ value: JSONValue?) -> Double? {
            switch value {
            case .integer(let integer)?: Double(integer)
            case .double(let double)?: double
            default: nil
            }
        }
        for entry in cases {
            #expect(entry["largerSize"]?.integer == 2 * (entry["baselineSize"]?.integer ?? 0), "\(entry)")
            #expect((number(entry["baselineSeconds"]) ?? -1) >= 0 && number(entry["target"]) == 3)
        }
        #expect(number(cases.last?["nanosecondsPerUnit"]) != nil)
    }

    @Test func appendReportsBothWorkloadsAgainstTheRawBaseline() throws {
        let directory = try temporaryDirectory()
        let result = try CLIRunner.run(["bench", "append", "--events", "1000", "--rounds", "1", "--json",
                                        "--dir", directory.path])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let report = try JSONReader.parse(result.stdout)
        guard case .object(let object) = report, case .array(let workloads)? = object["workloads"] else {
            Issue.record("no workloads in \(result.stdout)")
            return
        }
        let names: [String] = workloads.compactMap { workload in
            guard case .object(let fields) = workload else { return nil }
            return fields["name"]?.stringValue
        }
        #expect(names == ["activity-engagement", "item-index-fts"])
        for case .object(let fields) in workloads {
            #expect(fields["events"] == .integer(1000))
            for side in ["sightline", "raw"] {
                guard case .object(let figures)? = fields[side], case .integer(let rate)? = figures["eventsPerSecond"] else {
                    Issue.record("\(side) has no rate")
                    continue
                }
                #expect(rate > 0)
            }
            guard let ratio = number(fields["ratio"]), let target = number(fields["target"]),
                  case .bool(let meetsTarget)? = fields["meetsTarget"] else {
                Issue.record("no ratio, target or verdict in \(fields)")
                continue
            }
            #expect(ratio > 0)
            #expect(meetsTarget == (ratio >= target))
            // The store's time to make its text searchable is part of each
            // round, so the store without it runs closer to the baseline.
            guard case .object(let store)? = fields["sightline"], case .array(let rounds)? = store["seconds"],
                  case .array(let searchable)? = store["searchableSeconds"],
                  case .object(let baseline)? = fields["raw"], case .array(let baselineRounds)? = baseline["seconds"],
                  let withoutIndex = number(fields["ratioWithoutSearchIndex"]) else {
                Issue.record("no split of the store's rounds in \(fields)")
                continue
            }
            #expect(searchable.count == rounds.count)
            for (whole, part) in zip(rounds.compactMap(number), searchable.compactMap(number)) {
                #expect(part > 0 && part < whole, "searchable \(part) s of \(whole) s")
            }
            #expect(withoutIndex > ratio)
            // With one round the bound is that round's: the baseline's time
            // against the store's less its fold.
            if let whole = rounds.first.flatMap(number), let part = searchable.first.flatMap(number),
               let base = baselineRounds.first.flatMap(number) {
                #expect(abs(withoutIndex - base / (whole - part)) < 0.001, "\(withoutIndex) against \(base) / (\(whole) − \(part))")
            }
        }
        // The stores it made are removed; the directory given is left empty.
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(left.isEmpty)
    }

    /// A small run: every query kind is timed on both sides and reported with
    /// percentiles, and the verdict agrees with the figures.
    @Test func queryReportsPercentilesForEveryKindBesideNaiveFTS5() throws {
        let directory = try temporaryDirectory()
        let result = try CLIRunner.run(["bench", "query", "--items", "2000", "--queries", "20", "--json", "--dir", directory.path])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let report = try JSONReader.parse(result.stdout)
        #expect(report["items"] == .integer(2000))
        let kinds = try #require(report["kinds"]?.array)
        #expect(kinds.map { $0["kind"] } == [.string("prefix"), .string("single-term"), .string("two-term")])
        var worst = 0.0
        for kind in kinds {
            for side in ["sightline", "naive"] {
                let p50 = try #require(number(kind[side]?["p50Ms"]))
                let p99 = try #require(number(kind[side]?["p99Ms"]))
                #expect(p50 > 0 && p50 <= p99)
                if side == "sightline" { worst = max(worst, p99) }
            }
        }
        // Only the popular words make full pages; a run where none did would test nothing.
        #expect(kinds.contains { ($0["fullPages"]?.integer ?? 0) > 0 })
        let target = try #require(number(report["targetP99Ms"]))
        #expect(report["meetsTarget"] == .bool(worst <= target))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
        let bad = try CLIRunner.run(["bench", "query", "--items", "5"])
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("--items must be between 1000 and 5000000 (got 5)"))
    }

    /// `--keep` leaves the store and naive FTS5's table in `--dir` and the next
    /// run reuses them, asking the same queries without building anything.
    @Test func queryKeepsItsStoreAndReusesIt() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let arguments = ["bench", "query", "--items", "1000", "--queries", "10", "--json", "--keep", "--dir", directory.path]
        let first = try CLIRunner.run(arguments)
        #expect(first.status == 0, "stderr: \(first.stderr)")
        let kept = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(kept.contains("query-1000-seed1.sqlite") && kept.contains("query-1000-seed1-fts5.sqlite"), "\(kept)")
        let second = try CLIRunner.run(arguments)
        #expect(second.status == 0, "stderr: \(second.stderr)")
        let examples = { (text: String) in try JSONReader.parse(text)["kinds"]?.array?.map { $0["examples"] } }
        #expect(try examples(first.stdout) == examples(second.stdout))
        let slowest = try #require(try JSONReader.parse(second.stdout)["kinds"]?.array?.first?["slowest"]?.array)
        #expect(slowest.count == 3)
        let withoutDirectory = try CLIRunner.run(["bench", "query", "--keep"])
        #expect(withoutDirectory.status == 64)
        #expect(withoutDirectory.stderr.contains("--keep needs --dir"))
    }

    @Test func appendRefusesTooFewEvents() throws {
        let result = try CLIRunner.run(["bench", "append", "--events", "10"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--events must be between 1000 and 10000000 (got 10)"))
    }

    @Test func appendRefusesAnUnknownWorkload() throws {
        let result = try CLIRunner.run(["bench", "append", "--workload", "sync"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--workload must be one of activity-engagement, item-index-fts (got 'sync')"))
    }
}

/// A JSON number whether it was written with a fraction or not.
func number(_ value: JSONValue?) -> Double? {
    switch value {
    case .double(let number)?: number
    case .integer(let number)?: Double(number)
    default: nil
    }
}

@Suite struct SyncBenchCommandTests {
    /// A small run over real HTTP: every message the devices made reaches the
    /// cloud, and both baselines are measured in the same run.
    @Test func syncSendsEveryMessageAndMeasuresBothBaselines() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try CLIRunner.run(["bench", "sync", "--devices", "3", "--calls", "1000", "--json", "--dir", directory.path])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let report = try JSONReader.parse(result.stdout)
        guard let messages = report["messages"]?.integer, let wire = report["wireBytes"]?.integer,
              let json = report["jsonDeflateBytes"]?.integer, let frames = report["frames"]?.integer else {
            Issue.record("missing figures in \(result.stdout)")
            return
        }
        #expect(messages > 1000 && frames >= 3)
        #expect(wire > 0 && json > 0)
        #expect(number(report["messagesPerSecond"]).map { $0 > 0 } == true)
        #expect(number(report["rawMessagesPerSecond"]).map { $0 > 0 } == true)
    }

    @Test func rebuildReplaysTheLogToTheSameDigest() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try CLIRunner.run(["bench", "rebuild", "--devices", "3", "--calls", "1000", "--json", "--dir", directory.path])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let report = try JSONReader.parse(result.stdout)
        #expect(report["digestUnchanged"] == .bool(true))
        #expect((report["messages"]?.integer ?? 0) > 1000)
    }
    /// A small local-DP run: its estimates are near the truth (the figures
    /// are the estimator's, not a timing), the assignments it saves are the
    /// devices', and a sketch that cannot be is refused.
    @Test func ldpReportsTheSketchsErrorsAndSavesTheDevicesItems() throws {
        let directory = try temporaryDirectory()
        let assignments = directory.appendingPathComponent("items.txt").path
        let result = try CLIRunner.run(["bench", "ldp", "--devices", "5000", "--items", "100", "--k", "32", "--m", "128",
                                        "--save-assignments", assignments, "--json"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let report = try JSONReader.parse(result.stdout)
        guard case .object(let fields) = report, case .double(let error)? = fields["meanAbsoluteError"],
              case .double(let cost)? = fields["reportMicroseconds"] else {
            Issue.record("no figures in \(result.stdout)")
            return
        }
        // One report's standard deviation is about 0.66 here, so 5,000
        // reports spread an estimate by about 47.
        #expect(error > 0 && error < 150 && cost > 0, "\(result.stdout)")
        let saved = try String(contentsOfFile: assignments, encoding: .utf8).split(separator: "\n")
        #expect(saved.count == 5000 && saved.allSatisfy { Int($0).map { (0..<100).contains($0) } == true })
        let bad = try CLIRunner.run(["bench", "ldp", "--m", "100"])
        #expect(bad.status == 64 && bad.stderr.contains("power of two"), "\(bad.stderr)")
    }
}
