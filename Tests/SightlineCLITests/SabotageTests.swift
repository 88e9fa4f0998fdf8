import Foundation
import IndexModel
import Testing

/// `simulate --sabotage RULE`: the embedded cloud breaks one rule, and the
/// run fails the way a real failure would, shown in full and replayable.
@Suite struct SabotageTests {
    /// Each rule, the invariant it breaks, and faults under which a run
    /// fails it: purging needs a cloud backup that makes content purgeable,
    /// which heavy faults take.
    static let runs: [(rule: String, breaks: String, faults: String)] = [
        ("threshold", "public-index", "light"), ("withdrawals", "counts-exact", "light"), ("purge", "withdrawn-content-purged", "heavy"),
    ]

    private func arguments(_ rule: String, faults: String) -> [String] {
        ["simulate", "--seed", "1", "--devices", "12", "--events-per-device", "80", "--faults", faults, "--sabotage", rule]
    }

    @Test(arguments: SabotageTests.runs)
    func aSabotagedRunFailsTheInvariantItBreaksInFullAndItsReplayFailsAlike(run: (rule: String, breaks: String, faults: String)) throws {
        let (rule, breaks, faults) = run
        let result = try CLIRunner.run(arguments(rule, faults: faults) + ["--json"])
        #expect(result.status == 1, "\(rule): \(result.stderr)")
        #expect(result.stderr.contains("invariant \(breaks) failed (seed=1)"), "\(result.stderr)")
        let report = try JSONReader.parse(result.stdout)
        #expect(report["passed"] == .bool(false))
        #expect(report["sabotage"]?["rule"] == .string(rule) && report["sabotage"]?["breaks"] == .string(breaks))
        let broken = report["invariants"]?.array?.first { $0["name"] == .string(breaks) }
        #expect(broken?["passed"] == .bool(false) && (broken?["problems"]?.array?.isEmpty == false), "\(String(describing: broken))")
        // The printed replay names the sabotage, and fails to the same digest.
        let replay = try #require(report["replay"]?.stringValue)
        #expect(replay.hasSuffix("--sabotage \(rule)"))
        let again = try CLIRunner.run(Array(replay.split(separator: " ").dropFirst().map(String.init)) + ["--json"])
        #expect(again.status == 1)
        #expect(try JSONReader.parse(again.stdout)["digest"] == report["digest"])
        // The text names the sabotage beside the run's options.
        let text = try CLIRunner.run(arguments(rule, faults: faults))
        #expect(text.stdout.contains("sabotage") && text.stdout.contains("FAIL") && text.stdout.contains(breaks))
    }

    @Test func aCampaignsFailingSeedReplaysToTheDigestTheCampaignReported() throws {
        let campaign = try CLIRunner.run(["simulate", "--seeds", "1-3", "--devices", "8", "--events-per-device", "60",
                                          "--faults", "light", "--sabotage", "threshold", "--json"])
        #expect(campaign.status == 1)
        let report = try JSONReader.parse(campaign.stdout)
        let failures = report["failures"]?.array ?? []
        #expect(!failures.isEmpty, "\(campaign.stdout)")
        for failure in failures {
            let replay = try #require(failure["replay"]?.stringValue)
            #expect(replay.contains("--sabotage threshold") && replay.contains("--seed \(failure["seed"]?.stringValue ?? "?")"))
            let again = try CLIRunner.run(Array(replay.split(separator: " ").dropFirst().map(String.init)) + ["--json"])
            #expect(again.status == 1)
            #expect(try JSONReader.parse(again.stdout)["digest"] == failure["digest"], "\(replay)")
        }
    }

    @Test func aSabotageTheRunCannotHaveIsAUsageError() throws {
        let lowK = try CLIRunner.run(["simulate", "--threshold", "1", "--sabotage", "threshold", "--devices", "2"])
        #expect(lowK.status == 64 && lowK.stderr.contains("--threshold 2 or more"), "\(lowK.stderr)")
        let unknown = try CLIRunner.run(["simulate", "--sabotage", "everything", "--devices", "2"])
        #expect(unknown.status == 64)
        let served = try CLIRunner.run(["simulate", "--sabotage", "purge", "--cloud", "http://127.0.0.1:9", "--cloud-store", "x"])
        #expect(served.status == 64 && served.stderr.contains("embedded cloud"), "\(served.stderr)")
    }
}
