import Foundation
import Testing

/// `simulate --memory-budget SIZE` and `--workload day` on the command line.
@Suite struct MemoryBudgetCommandTests {
    @Test func aBudgetOutsideItsRangeOrWithoutAKnownUnitIsAUsageError() throws {
        for bad in ["12", "0.5M", "1.2.3G", "-5G", "5T", "G", "2G ", "99999999999999999999G", "2 G", "nanG"] {
            let run = try CLIRunner.run(["simulate", "--seed", "1", "--memory-budget", bad])
            #expect(run.status == 64 && run.stderr.contains("--memory-budget"), "\(bad): \(run.status) \(run.stderr)")
        }
    }

    /// A small budget puts stores to sleep, says so, and changes nothing of the run.
    @Test func aSmallBudgetSleepsStoresAndKeepsTheDigest() throws {
        let arguments = ["simulate", "--seed", "4", "--devices", "40", "--events-per-device", "20", "--faults", "light", "--quiet", "--json"]
        let awake = try CLIRunner.run(arguments)
        let asleep = try CLIRunner.run(arguments + ["--memory-budget", "1m"])
        #expect(awake.status == 0 && asleep.status == 0, "\(asleep.stderr)")
        #expect(ProgressTests.digest(asleep.stdout) != nil && ProgressTests.digest(asleep.stdout) == ProgressTests.digest(awake.stdout))
        let sleeps = asleep.stdout.firstMatch(of: /"sleeps" *: *([0-9]+)/).flatMap { Int($0.output.1) } ?? 0
        #expect(sleeps > 0, "no sleeps in \(asleep.stdout.prefix(400))")
        let day = try CLIRunner.run(["simulate", "--seed", "4", "--devices", "20", "--workload", "day", "--quiet"])
        #expect(day.status == 0 && day.stdout.contains("--workload day"), "\(day.stderr)")
        #expect(try CLIRunner.run(["simulate", "--workload", "week"]).status == 64)
    }
}
