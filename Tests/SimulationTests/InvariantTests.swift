import CloudCore
import CloudSQLite
import IndexModel
@testable import Simulation
import SyncWire
import Testing

/// A passing run, as the invariants see it, and its cloud log as every
/// device's messages.
private func passingRun() throws -> (run: FinishedRun, log: [DeviceID: HeldLog]) {
    let simulator = try Simulator(options: SimulationOptions(devices: 5, eventsPerDevice: 40, seed: 4, faults: .light, threshold: 3))
    let report = try simulator.run()
    guard report.passed, let run = simulator.lastRun else {
        throw SimulationError("the base run failed: \(report.failures.map { "\($0.name): \($0.detail)" })")
    }
    return (run, try wholeLog(simulator))
}

/// Every device's messages in the run's cloud log (the crawler's left out),
/// held at once as the run's checks never do.
private func wholeLog(_ simulator: Simulator) throws -> [DeviceID: HeldLog] {
    let cloud = try #require(simulator.cloud)
    var log: [DeviceID: HeldLog] = [:]
    try cloud.scanLogByDevice(app: simulator.options.app) { record in
        if !CrawlerRule.isReserved(record.device) { log[record.device, default: [:]][record.epoch, default: []] += RunEvidence.Held.new(in: record) }
        return true
    }
    return log
}

/// A device with messages the cloud holds in its current epoch, and that epoch.
private func deviceWithHeldMessages(_ evidence: RunEvidence, _ log: [DeviceID: HeldLog]) throws -> (name: DeviceID, epoch: Epoch) {
    let device = try #require(evidence.devices.first { log[$0.name]?[$0.epoch]?.isEmpty == false })
    return (device.name, device.epoch)
}

/// Each invariant, and a change to a passing run's evidence or cloud log
/// that it must catch: the run as a cloud or device that broke it would
/// have left it.
private var breakers: [(name: String, breakIt: (inout RunEvidence, inout [DeviceID: HeldLog]) throws -> Void)] { [
    ("converged", { evidence, _ in evidence.converged = false }),
    ("cloud-log-dense", { evidence, log in
        let (name, epoch) = try deviceWithHeldMessages(evidence, log)
        log[name]![epoch]!.removeFirst()
    }),
    ("acknowledged-not-lost", { evidence, log in
        let (name, epoch) = try deviceWithHeldMessages(evidence, log)
        log[name]![epoch]!.removeLast()
    }),
    ("messages-match-calls", { evidence, log in
        let (name, epoch) = try deviceWithHeldMessages(evidence, log)
        let last = try #require(log[name]?[epoch]?.last { if case .content = $0.message { false } else { true } })
        let next = (log[name]![epoch]!.last?.seq ?? .beforeFirst).next
        log[name]![epoch]!.append(RunEvidence.Held(seq: next, message: last.message, day: last.day))
    }),
    ("counts-exact", { evidence, _ in
        let counted = try #require(evidence.counts.firstIndex { (try? $0.get()) != nil })
        evidence.counts[counted] = .success(nil)
    }),
    ("public-index", { evidence, _ in
        #expect(evidence.counts.contains { (try? $0.get())?.isPublic == true }, "the base run made nothing public")
        evidence.threshold = 1_000
    }),
    ("sybil-never-public", { evidence, _ in evidence.threshold = 0 }),
    ("hostile-contained", { evidence, _ in
        let other = evidence.catalogue.entry(evidence.hostileTarget.number + 1)
        evidence.hostileMessages.append(RunEvidence.Held(seq: .first, message: .vote(other.hash, Simulator.hostileToken), day: 0))
    }),
    ("no-private-leak", { evidence, _ in evidence.counters.leaks = 1 }),
    ("journals-verify", { evidence, _ in evidence.cloudJournalProblems = ["cloud log: row 7's hash does not chain"] }),
    ("device-index-matches-calls", { evidence, _ in evidence.deviceChecks[2].indexProblems = ["device 2 index items: lacks a"] }),
    ("no-deleted-item-returned", { evidence, _ in
        evidence.deviceChecks[1].returnedProblems = ["device 1 index items holds a, which the app deleted"]
    }),
    ("search-matches-calls", { evidence, _ in evidence.findings.append("device 3's search for 'a' returned a deleted item") }),
    ("projections-equal-rebuild", { evidence, _ in
        evidence.cloudRebuildProblems = ["the cloud's projections differ from a rebuild of its log"]
    }),
    ("epochs-never-reused", { evidence, _ in evidence.findings.append("device 0 moved its epoch 1 to 2, which it had already used") }),
    ("privacy-budget", { evidence, _ in evidence.deviceChecks[0].budgetProblems = ["device 0 spent ε 12 on day 20414, above its 8"] }),
    ("votes-match-devices", { evidence, _ in
        // Device 0 forgets, or gains, a vote for entry 0 that the cloud's count disagrees with.
        let hash = evidence.catalogue.entry(0).hash
        if evidence.deviceChecks[0].votes.remove(hash) == nil { evidence.deviceChecks[0].votes.insert(hash) }
    }),
    ("withdrawn-content-purged", { evidence, _ in evidence.unpurgedContent = .success(1) }),
] }

@Suite struct InvariantTests {
    @Test func aPassingRunPassesEveryInvariant() throws {
        let (run, _) = try passingRun()
        for result in run.results { #expect(result.passed, "\(result.name): \(result.detail)") }
    }

    @Test func everyInvariantHasAWayToBreakItHere() {
        #expect(breakers.map(\.name) == Invariant.all.map(\.name))
    }

    @Test(arguments: breakers.map(\.name))
    func eachInvariantCatchesTheRunThatBreaksIt(name: String) throws {
        let (run, whole) = try passingRun()
        var log = whole
        let invariant = try #require(Invariant.all.first { $0.name == name })
        let breakIt = try #require(breakers.first { $0.name == name }).breakIt
        // The whole log read afresh passes as the run's own reading did.
        #expect(invariant.result(FinishedRun(run.evidence, log: log)) == invariant.result(run))
        var evidence = run.evidence
        try breakIt(&evidence, &log)
        let broken = invariant.result(FinishedRun(evidence, log: log))
        #expect(!broken.passed, "\(name) passed a run that breaks it: \(broken.detail)")
    }

    /// A failed invariant lists every problem it found in `report.json`
    /// (and `--json`) and in the HTML report, where failures come first;
    /// its detail, the short form stderr prints, names the first.
    @Test func aFailedInvariantShowsEveryProblemInTheReports() throws {
        let simulator = try Simulator(options: SimulationOptions(devices: 5, eventsPerDevice: 40, seed: 4, faults: .light, threshold: 3))
        let base = try simulator.run()
        let run = try #require(simulator.lastRun)
        var evidence = run.evidence
        let problems = (1...12).map { "device 2 index items: lacks item-\($0) <\($0)>" }
        evidence.deviceChecks[2].indexProblems = problems
        let results = FinishedRun(evidence, matching: run.matching).results
        let report = SimulationReport(simulator: simulator, invariants: results, converged: base.converged, wall: .seconds(1))
        let failed = try #require(report.failures.first)
        #expect(report.failures.count == 1 && failed.name == "device-index-matches-calls")
        #expect(failed.problems == problems && failed.detail == "\(problems[0]) (and 11 more)")
        guard case .object(let document) = report.jsonValue, case .array(let invariants)? = document["invariants"] else {
            Issue.record("report.json has no invariants")
            return
        }
        let entries = invariants.compactMap { value -> JSONObject? in if case .object(let entry) = value { entry } else { nil } }
        let entry = try #require(entries.first { $0["name"] == JSONValue.string(failed.name) })
        #expect(entry["problems"] == JSONValue.array(problems.map { JSONValue.string($0) }) && entry["passed"] == JSONValue.bool(false))
        #expect(entries.count == invariants.count
                && entries.allSatisfy { $0["passed"] == JSONValue.bool(false) || $0["problems"] == JSONValue.array([]) })
        let html = report.html
        for problem in problems { #expect(html.contains(problem.replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;"))) }
        let firstFail = try #require(html.range(of: "FAIL</td>")).lowerBound
        let firstPass = try #require(html.range(of: ">pass</td>")).lowerBound
        #expect(firstFail < firstPass, "the failed invariant comes first")
    }

    /// The operator's crawl is part of public-index: a cloud that lost a
    /// page, recorded one from a device, or showed a page-backed entry with
    /// a device's text fails it.
    @Test func publicIndexCatchesACloudThatLostOrForgedACrawledPage() throws {
        // Busier than `passingRun`, so that entries with a page become public.
        let simulator = try Simulator(options: SimulationOptions(devices: 12, eventsPerDevice: 120, seed: 3, faults: .light, threshold: 3))
        let report = try simulator.run()
        let run = try #require(simulator.lastRun)
        #expect(report.passed, "\(report.failures.map(\.detail))")
        let invariant = try #require(Invariant.all.first { $0.name == "public-index" })
        var lost = run.evidence
        lost.pages = .success(Array(lost.crawled.dropFirst()))
        #expect(!invariant.result(FinishedRun(lost, matching: run.matching)).passed)
        var forged = run.evidence
        forged.crawlerMessages.append(.vote(forged.catalogue.entry(0).hash, Simulator.hostileToken))
        #expect(!invariant.result(FinishedRun(forged, matching: run.matching)).passed)
        var devicesText = run.evidence
        let shown = devicesText.crawled.compactMap { page -> (Int, HashEntry)? in
            guard let number = devicesText.catalogue.entry(url: page.url), case .success(let entry?) = devicesText.counts[number],
                  entry.isPublic else { return nil }
            return (number, entry)
        }
        guard let (number, entry) = shown.first else {
            Issue.record("the base run made no entry with a crawled page public")
            return
        }
        let content = devicesText.catalogue.entry(number).content
        devicesText.counts[number] = .success(HashEntry(app: entry.app, key: entry.key, hash: entry.hash, liveVotes: entry.liveVotes,
                                                        voters: entry.voters, popularity: entry.popularity, content: content,
                                                        isWanted: false))
        #expect(!invariant.result(FinishedRun(devicesText, matching: run.matching)).passed)
    }

    /// The oracle's cloud follows the semantics: a vote counts once per
    /// device while live, and signals count only from a live voter.
    @Test func theOraclesCloudCountsSignalsOnlyFromLiveVoters() {
        var model = CloudModel()
        let a = DeviceID("a")
        model.apply(.view(0), device: a, day: 1)
        model.apply(.vote(0), device: a, day: 1)
        model.apply(.vote(0), device: a, day: 1)
        model.apply(.view(0), device: a, day: 1)
        model.apply(.withdraw(0), device: a, day: 1)
        model.apply(.engaged(0), device: a, day: 1)
        let entry = model.entries[0]
        #expect(entry?.live.isEmpty == true && entry?.everVoted == [a])
        #expect(entry?.popularity == Popularity(views: 1))
    }

    /// Under private popularity the devices' reports are checked too: the
    /// cloud counts exactly what the oracle's cloud counts of them, each
    /// device's ledger is what its calls imply, and the report says how far
    /// the estimates are from the reports counted.
    @Test func aPrivatePopularityRunChecksTheReportsAndTheBudgets() throws {
        var options = SimulationOptions(devices: 6, eventsPerDevice: 60, seed: 4, faults: .light, threshold: 3)
        options.popularity = try PrivatePopularity(epsilonThousandths: 4_000, dailyBudgetThousandths: 8_000, hashes: 64, buckets: 1024)
        let simulator = try Simulator(options: options)
        let report = try simulator.run()
        #expect(report.passed, "\(report.failures.map { "\($0.name): \($0.detail)" })")
        let run = try #require(simulator.lastRun)
        #expect(run.matching.model.reportsCounted > 0 && run.evidence.cloudReports == run.matching.model.reportsCounted)
        let accuracy = try #require(report.popularity)
        #expect(accuracy.reports == run.matching.model.reportsCounted && accuracy.items == options.catalogueSize + 1)
        #expect(accuracy.meanAbsoluteError > 0 && accuracy.topMaxError >= accuracy.meanAbsoluteError, "fewer than 100 entries: the largest error is at least the mean")
        #expect(run.evidence.devices.contains { !$0.model.spent.isEmpty }, "some device reported")
        var counted = run.evidence
        counted.cloudReports = (counted.cloudReports ?? 0) + 1
        #expect(!Invariant.countsExact.result(FinishedRun(counted, matching: run.matching)).passed, "a report counted once too often")
        guard case .object(let json) = report.jsonValue, case .object(let popularity)? = json["popularity"] else {
            Issue.record("no popularity in the report's JSON")
            return
        }
        #expect(popularity["mode"] == .string("ldp") && popularity["meanAbsoluteError"] == .double(accuracy.meanAbsoluteError)
                && popularity["topMaxError"] == .double(accuracy.topMaxError))
        let again = try Simulator(options: options).run()
        #expect(again.digest == report.digest && again.popularity == report.popularity, "the same seed, the same run")
    }
}
