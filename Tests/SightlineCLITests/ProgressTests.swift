import Foundation
import Testing

/// Long commands say how far they are on stderr: a line every
/// `--progress-every` seconds when stderr is not a terminal, a bar on a
/// terminal, nothing with `--quiet`; stdout is the command's answer either way.
@Suite struct ProgressTests {
    /// Lines of the form `calls: 42% 1,234/3,000 calls, 2 s, about 3 s left`.
    static func progressLines(_ stderr: String, phase: String) -> [(percent: Int, done: Int)] {
        stderr.split(separator: "\n").compactMap { line in
            guard let match = line.firstMatch(of: /^(\w+): (\d+)% ([\d,]+)\/([\d,]+) \w+, \d+ (s|min)/), match.output.1 == phase else {
                return nil
            }
            return (Int(match.output.2) ?? -1, Int(match.output.3.replacingOccurrences(of: ",", with: "")) ?? -1)
        }
    }

    @Test func aSimulationSaysItsCallsAsItMakesThemWhenStderrIsNotATerminal() throws {
        let run = try CLIRunner.run(["simulate", "--seed", "2", "--devices", "40", "--events-per-device", "150", "--faults", "light",
                                     "--progress-every", "0.2", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = Self.progressLines(run.stderr, phase: "calls")
        #expect(lines.count >= 2, "no progress lines in: \(run.stderr)")
        // The work done only grows, and is counted in calls of the run's 6,000.
        #expect(zip(lines, lines.dropFirst()).allSatisfy { $0.done <= $1.done && $0.percent <= $1.percent })
        #expect(lines.allSatisfy { $0.done <= 6_000 })
        #expect(run.stderr.contains("/6,000 calls"))
        // The answer on stdout is the JSON report alone.
        #expect(run.stdout.hasPrefix("{") && !run.stdout.contains("calls:"))

        let quiet = try CLIRunner.run(["simulate", "--seed", "2", "--devices", "40", "--events-per-device", "150", "--faults", "light",
                                       "--progress-every", "0.2", "--quiet", "--json"])
        #expect(quiet.status == 0 && Self.progressLines(quiet.stderr, phase: "calls").isEmpty)
        // Progress changes nothing of the run.
        #expect(Self.digest(run.stdout) != nil && Self.digest(quiet.stdout) == Self.digest(run.stdout))
    }

    /// The `digest` member of a JSON report.
    static func digest(_ json: String) -> String? {
        json.firstMatch(of: /"digest" *: *"([0-9a-f]+)"/).map { String($0.output.1) }
    }

    @Test func aCampaignSaysItsSeedsDone() throws {
        let run = try CLIRunner.run(["simulate", "--seeds", "1-6", "--devices", "12", "--events-per-device", "100", "--faults", "light",
                                     "--progress-every", "0.2"])
        #expect(run.status == 0 || run.status == 1, "\(run.stderr)")
        let lines = Self.progressLines(run.stderr, phase: "seeds")
        #expect(!lines.isEmpty, "no progress lines in: \(run.stderr)")
        #expect(lines.allSatisfy { $0.done <= 6 })
    }

    @Test func aBadProgressIntervalIsAUsageError() throws {
        let run = try CLIRunner.run(["simulate", "--seed", "1", "--progress-every", "0"])
        #expect(run.status == 64 && run.stderr.contains("--progress-every must be between 0.1 and 86400 seconds"))
    }

    /// On a terminal (`script` gives the command one) the bar is redrawn in
    /// place and wiped before the summary.
    @Test func onATerminalABarIsDrawnInPlaceAndWipedBeforeTheSummary() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else {
            Issue.record("util-linux's script is missing: tools/install-deps installs util-linux")
            return
        }
        let command = [CLIRunner.binary.path, "simulate", "--seed", "3", "--devices", "40", "--events-per-device", "150"]
            .map { "'\($0)'" }.joined(separator: " ")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        process.arguments = ["-qefc", command, "/dev/null"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
        #expect(text.contains("\r\u{1B}[K[#") || text.contains("\r\u{1B}[K[."), "no bar in: \(text.debugDescription)")
        #expect(text.contains("% ") && text.contains(" calls, "))
        // The last bar is wiped: the summary table's first row starts right after the wipe.
        #expect(text.contains("\r\u{1B}[Kseed "), "the bar is not wiped before the summary: \(text.debugDescription)")
    }
}
