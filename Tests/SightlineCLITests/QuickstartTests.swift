import Foundation
import Testing

/// `docs/QUICKSTART.md` works as written: its `sh` blocks, run in order as
/// one script (so each step sees what the ones before it made), with the
/// built `sightline` first on `PATH`.
@Suite struct QuickstartTests {
    static let document = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/QUICKSTART.md")

    /// The bodies of the blocks fenced as `sh`.
    static func commands(in text: String) -> [String] {
        var blocks: [String] = []
        var current: [String]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```sh" {
                current = []
            } else if current != nil, line == "```" {
                blocks.append(current!.joined(separator: "\n"))
                current = nil
            } else if current != nil {
                current!.append(String(line))
            }
        }
        return blocks
    }

    @Test func everyCommandOfTheQuickStartRunsAsWritten() throws {
        let text = try String(contentsOf: Self.document, encoding: .utf8)
        let blocks = Self.commands(in: text)
        #expect(blocks.count >= 8, "the quick start has \(blocks.count) command blocks")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("quickstart-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // Each block announces itself on stdout, so a failure names its block.
        let script = "set -euo pipefail\n" + blocks.enumerated().map { index, block in
            "echo '### block \(index + 1)'\n" + block
        }.joined(separator: "\n")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", script]
        process.currentDirectoryURL = directory
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = CLIRunner.binary.deletingLastPathComponent().path + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        process.environment = environment
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Read both pipes while the script runs, so that neither fills.
        let group = DispatchGroup()
        nonisolated(unsafe) var stdout = Data()
        nonisolated(unsafe) var stderr = Data()
        DispatchQueue.global().async(group: group) { stdout = out.fileHandleForReading.readDataToEndOfFile() }
        DispatchQueue.global().async(group: group) { stderr = err.fileHandleForReading.readDataToEndOfFile() }
        process.waitUntilExit()
        group.wait()
        let printed = String(decoding: stdout, as: UTF8.self)
        let lastBlock = printed.components(separatedBy: "\n").last { $0.hasPrefix("### block") } ?? "before the first block"
        #expect(process.terminationStatus == 0, "stopped in \(lastBlock): \(String(decoding: stderr, as: UTF8.self))")
        // What the text says the commands show.
        #expect(printed.contains(": public\n") && printed.contains(": not public\n"), "\(printed.suffix(2_000))")
        #expect(printed.contains("exit status 1"), "the damaged backup fails its check")
        let digests = printed.components(separatedBy: "\n").compactMap { line -> String? in
            // The summary's `digest` line and run.json's `"digest"` member.
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("digest ") || trimmed.hasPrefix(#""digest""#),
                  let range = line.range(of: #"[0-9a-f]{64}"#, options: .regularExpression) else { return nil }
            return String(line[range])
        }
        // The run's, the replay's, run.json's, then the sabotaged run's and the drill's.
        #expect(digests.count == 5 && Set(digests.prefix(3)).count == 1, "the replay's digest is the run's: \(digests)")
        #expect(printed.contains("invariant public-index failed") || printed.contains(#""passed": false"#))
    }
}
