import Foundation
import IndexModel
import Testing

@Suite struct SimulateCommandTests {
    @Test func aSimulationPrintsItsSeedAndPassesAndTheSameSeedReplaysToTheSameDigest() throws {
        let arguments = ["simulate", "--seed", "7", "--devices", "4", "--events-per-device", "20", "--faults", "heavy",
                         "--threshold", "3", "--json"]
        let first = try CLIRunner.run(arguments)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.contains("seed=7"))
        let report = try CLIRunner.json(arguments)
        #expect(report["passed"] == .bool(true))
        let replay = try CLIRunner.json(arguments)
        #expect(report["digest"]?.stringValue != nil && report["digest"] == replay["digest"])
        // The calls on a second thread (the default here, on two cores) or on one: the same run.
        let serial = try CLIRunner.json(arguments + ["--serial"])
        #expect(serial["digest"] == report["digest"])
    }

    @Test func outKeepsTheStoresAndTheReportAndTheJournalToolsReadThem() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sim-out-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let run = try CLIRunner.run(["simulate", "--seed", "3", "--devices", "3", "--events-per-device", "15",
                                     "--out", directory.path])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("pass") && run.stdout.contains("counts-exact"))
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("report.json").path))
        let html = try String(contentsOf: directory.appendingPathComponent("report.html"), encoding: .utf8)
        #expect(html.hasPrefix("<!doctype html>") && html.components(separatedBy: "<svg").count == 5, "four charts")
        #expect(html.contains("counts-exact") && html.contains("sightline simulate --seed 3") && !html.contains("<script"))
        let cloud = try CLIRunner.run(["journal", "verify", "--db", directory.appendingPathComponent("cloud.sqlite").path])
        #expect(cloud.status == 0, "\(cloud.stderr)")
        let device = try CLIRunner.run(["journal", "verify", "--db", directory.appendingPathComponent("device-0.sqlite").path])
        #expect(device.status == 0, "\(device.stderr)")
        let again = try CLIRunner.run(["simulate", "--seed", "3", "--devices", "3", "--out", directory.path])
        #expect(again.status == 64 && again.stderr.contains("not empty"), "an --out that holds a run is not overwritten")
    }

    /// The same workload, faults on the wire and checks, against a real
    /// `cloud serve` over HTTP; the checks read the served store at the end.
    @Test func aSimulationAgainstAServedCloudPassesTheSameChecks() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try servedCloud(directory, threshold: 2, extra: ["--rate", "100000"])
        defer {
            server.process.terminate()
            server.process.waitUntilExit()
        }
        let arguments = ["simulate", "--cloud", server.url, "--cloud-store", directory.appendingPathComponent("cloud.sqlite").path,
                         "--app", "com.example.app", "--enrolment-secret-file", directory.appendingPathComponent("secret").path,
                         "--threshold", "2", "--devices", "4", "--events-per-device", "20", "--faults", "heavy", "--seed", "5",
                         "--json"]
        let run = try CLIRunner.run(arguments)
        #expect(run.status == 0, "\(run.stderr)")
        let report = try JSONReader.parse(run.stdout)
        #expect(report["passed"] == .bool(true) && report["cloud"] == .string(server.url))
        #expect(report["faults"]?["cloudCrash"] == .integer(0), "the served cloud's crashes are not the simulator's to cause")
        // Not replayable, and it says so; its command reruns the run against
        // a fresh served cloud, with every option the run had.
        #expect(report["replayable"] == .bool(false) && report["replayNote"]?.stringValue?.hasPrefix("not replayable") == true)
        let store = directory.appendingPathComponent("cloud.sqlite").path
        let secret = directory.appendingPathComponent("secret").path
        #expect(report["replay"]?.stringValue == """
            sightline simulate --seed 5 --devices 4 --events-per-device 20 --faults heavy --threshold 2 --cloud \(server.url) \
            --cloud-store \(store) --app com.example.app --enrolment-secret-file \(secret)
            """)
        let stats = try CLIRunner.json(["cloud", "stats", "--db", directory.appendingPathComponent("cloud.sqlite").path, "--json"])
        guard case .integer(let enrolled)? = stats["devices"] else { Issue.record("no device count: \(stats)"); return }
        #expect(enrolled >= 4, "the devices (and any hostile one) enrolled over HTTP")

        let again = try CLIRunner.run(arguments)
        #expect(again.status != 0 && again.stderr.contains("already has"), "a store with devices the oracle did not make is refused")
        let noStore = try CLIRunner.run(["simulate", "--cloud", server.url])
        #expect(noStore.status == 64 && noStore.stderr.contains("--cloud-store"))
    }

    @Test func aRestoreDrillReportsRPOAndRTOAndNoDoubleCounts() throws {
        let run = try CLIRunner.run(["drill", "restore", "--side", "cloud", "--devices", "4", "--seed", "2", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let report = try JSONReader.parse(run.stdout)
        #expect(report["passed"] == .bool(true) && report["doubleCounts"] == .integer(0))
        #expect(report["rpo"]?["messagesLost"] == .integer(0) && report["rto"]?["virtualSeconds"] != nil)
        let device = try CLIRunner.run(["drill", "restore", "--side", "device", "--devices", "4", "--seed", "2"])
        #expect(device.status == 0 && device.stdout.contains("RPO") && device.stdout.contains("journal events lost"))
        let bad = try CLIRunner.run(["drill", "restore", "--side", "phone"])
        #expect(bad.status == 64 && bad.stderr.contains("phone"))
    }

    @Test func badOptionsAreUsageErrorsThatSayWhy() throws {
        let profile = try CLIRunner.run(["simulate", "--faults", "chaos"])
        #expect(profile.status == 64 && profile.stderr.contains("chaos"))
        let devices = try CLIRunner.run(["simulate", "--devices", "0"])
        #expect(devices.status == 1 && devices.stderr.contains("--devices must be between 1"))
        let seeds = try CLIRunner.run(["simulate", "--seeds", "9-3"])
        #expect(seeds.status == 64 && seeds.stderr.contains("FIRST-LAST"))
        let both = try CLIRunner.run(["simulate", "--seeds", "1-3", "--seed", "2"])
        #expect(both.status == 64 && both.stderr.contains("neither --seed nor --out"))
        let serial = try CLIRunner.run(["simulate", "--seeds", "1-3", "--serial"])
        #expect(serial.status == 64 && serial.stderr.contains("does not take --serial"))
    }

    /// A profile is judged on the faults it can inject: with none, every
    /// seed passing is a pass, and the campaign says before it runs what it
    /// cannot inject.
    @Test func aCampaignIsJudgedOnlyOnTheFaultsItsProfileCanInject() throws {
        let arguments = ["simulate", "--seeds", "1-6", "--devices", "3", "--events-per-device", "10", "--faults", "none"]
        let run = try CLIRunner.run(arguments + ["--json"])
        let report = try JSONReader.parse(run.stdout)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(report["seeds"] == .string("1-6") && report["failures"]?.array?.isEmpty == true && report["passed"] == .bool(true))
        #expect(report["cannotInject"]?.array?.count == 15 && report["neverInjected"]?.array?.isEmpty == true)
        #expect(report["pathsJudged"] == .bool(false) && report["neverReached"]?.array?.isEmpty == false)
        #expect(run.stderr.contains("the none profile cannot inject requestLost"), "\(run.stderr)")
        let text = try CLIRunner.run(arguments)
        #expect(text.status == 0 && text.stdout.contains("verdict    pass") && text.stderr.contains("(not judged)"), "\(text.stdout)")
    }

    /// Its verdict and its counts agree: every seed passing and a fault the
    /// profile injects never happening is a failure, and says so first.
    @Test func aCampaignThatNeverInjectedAFaultItCouldSaysSoInItsVerdict() throws {
        let arguments = ["simulate", "--seeds", "1-2", "--devices", "2", "--events-per-device", "8", "--faults", "light"]
        let run = try CLIRunner.run(arguments + ["--json"])
        let report = try JSONReader.parse(run.stdout)
        let light: Set<String> = ["requestLost", "replyLost", "duplicated", "delayed", "partition", "deviceCrash"]
        let never = Set((report["neverInjected"]?.array ?? []).compactMap(\.stringValue))
        #expect(run.status == 1 && report["passed"] == .bool(false) && report["failures"]?.array?.isEmpty == true, "\(run.stdout)")
        #expect(!never.isEmpty && never.isSubset(of: light), "\(never)")
        let cannot = Set((report["cannotInject"]?.array ?? []).compactMap(\.stringValue))
        #expect(cannot.count == 9 && cannot.isDisjoint(with: light), "\(cannot)")
        let text = try CLIRunner.run(arguments)
        #expect(text.status == 1 && text.stdout.contains("verdict    fail: \(never.count) fault kind(s) never injected"), "\(text.stdout)")
        #expect(text.stdout.contains("2 passed, 0 failed"))
    }
}
