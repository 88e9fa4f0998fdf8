import Foundation
import IndexModel
import Testing

/// Every replay command a run prints reproduces it: run as printed, it gives
/// the same digest.
@Suite struct ReplayTests {
    /// The arguments of a printed `sightline …` command.
    private func arguments(of command: String) throws -> [String] {
        let words = command.split(separator: " ").map(String.init)
        try #require(words.first == "sightline", "\(command)")
        return Array(words.dropFirst())
    }

    private func digestAndReplay(_ arguments: [String]) throws -> (digest: JSONValue?, replay: String) {
        let run = try CLIRunner.run(arguments + ["--json"])
        #expect(run.status == 0, "\(arguments): \(run.stderr)")
        let report = try JSONReader.parse(run.stdout)
        let replay = try #require(report["replay"]?.stringValue, "\(arguments) printed no replay command")
        return (report["digest"], replay)
    }

    @Test func aSimulationsPrintedReplayGivesItsDigest() throws {
        let first = try digestAndReplay(["simulate", "--seed", "5", "--devices", "3", "--events-per-device", "20",
                                         "--faults", "heavy", "--threshold", "2"])
        let again = try digestAndReplay(try arguments(of: first.replay))
        #expect(first.digest != nil && again.digest == first.digest && again.replay == first.replay)
    }

    @Test func aDrillsPrintedReplayIsADrillAndGivesItsDigest() throws {
        let first = try digestAndReplay(["drill", "restore", "--side", "cloud", "--seed", "2", "--devices", "3",
                                         "--events-per-device", "20", "--cut-back", "1.5"])
        #expect(first.replay.hasPrefix("sightline drill restore --side cloud --seed 2") && first.replay.contains("--cut-back 1.5"))
        let again = try digestAndReplay(try arguments(of: first.replay))
        #expect(first.digest != nil && again.digest == first.digest && again.replay == first.replay)
    }

    @Test func aDrillKeptWithOutWritesItsReportAndManifest() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("drill-out-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let run = try CLIRunner.run(["drill", "restore", "--side", "device", "--seed", "3", "--devices", "3",
                                     "--events-per-device", "20", "--out", directory.path, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let printed = try JSONReader.parse(run.stdout)
        let report = try JSONReader.parse(String(contentsOf: directory.appendingPathComponent("report.json"), encoding: .utf8))
        let manifest = try JSONReader.parse(String(contentsOf: directory.appendingPathComponent("run.json"), encoding: .utf8))
        #expect(report["digest"] == printed["digest"] && report["replay"] == printed["replay"])
        #expect(manifest["command"] == .string("drill") && manifest["digest"] == printed["digest"] && manifest["replay"] == printed["replay"])
        let html = try String(contentsOf: directory.appendingPathComponent("report.html"), encoding: .utf8)
        #expect(html.hasPrefix("<!doctype html>"))
        // The restored device's store is found through the manifest.
        let stats = try CLIRunner.run(["journal", "stats", "--run", directory.path, "--device", "0"])
        #expect(stats.status == 0, "\(stats.stderr)")
        // Its replay runs the stores in files too, and gives its digest.
        let replay = try #require(printed["replay"]?.stringValue)
        #expect(replay.hasSuffix(" --stores files"))
        let again = try digestAndReplay(try arguments(of: replay))
        #expect(again.digest == printed["digest"] && again.replay == replay)
    }

    /// A run kept with `--out` has its device stores in files, and a restore
    /// journals its backup's SHA-256, whose bytes differ between a store in
    /// memory and one in a file: the printed replay says `--stores files`,
    /// and gives the kept run's digest.
    @Test func aKeptRunsPrintedReplayRunsItsStoresInFilesAndGivesItsDigest() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kept-replay-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let arguments = ["simulate", "--seed", "1", "--devices", "6", "--events-per-device", "60", "--faults", "heavy"]
        let kept = try digestAndReplay(arguments + ["--out", directory.path])
        #expect(kept.replay == "sightline " + arguments.joined(separator: " ") + " --stores files")
        let manifest = try JSONReader.parse(String(contentsOf: directory.appendingPathComponent("run.json"), encoding: .utf8))
        #expect(manifest["replay"]?.stringValue == kept.replay && manifest["digest"] == kept.digest)
        let again = try digestAndReplay(try self.arguments(of: kept.replay))
        #expect(kept.digest != nil && again.digest == kept.digest && again.replay == kept.replay)
        // The same run in memory restores the same devices from backups of
        // other bytes, so its digest is another.
        let inMemory = try digestAndReplay(arguments)
        #expect(inMemory.digest != kept.digest)
        let refused = try CLIRunner.run(arguments + ["--out", directory.path + "-2", "--stores", "memory"])
        #expect(refused.status == 64 && refused.stderr.contains("--stores memory"))
    }
}
