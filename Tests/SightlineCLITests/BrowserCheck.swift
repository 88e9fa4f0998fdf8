import Foundation
import IndexModel

/// Pages opened in a real browser: `tools/browser-check` runs a script of
/// steps in Debian's Chromium through Playwright and answers with what it found.
enum BrowserCheck {
    static let tool = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("tools/browser-check")

    struct Result {
        /// 0 every check passed, 1 one failed, 2 the browser could not start, 64 a malformed script.
        let status: Int32
        let report: JSONValue
        let stderr: String

        /// What failed, for a test's message.
        var failures: String {
            guard case .array(let failures)? = report["failures"] else { return "\(report) \(stderr)" }
            return failures.map { JSONWriter.compact($0) }.joined(separator: "\n")
        }
    }

    /// Why the browser cannot start here, or nil when it can: checked once
    /// per test process, so that page tests are skipped with the reason only
    /// where there is no browser.
    static let unavailable: String? = {
        guard let result = try? run([["open": .string("about:blank")]]) else { return "tools/browser-check could not be run" }
        return result.status == 2 ? result.stderr.trimmingCharacters(in: .whitespacesAndNewlines) : nil
    }()

    static func run(_ steps: [JSONObject]) throws -> Result {
        let script = FileManager.default.temporaryDirectory.appendingPathComponent("sightline-browser-\(UUID().uuidString).json")
        try Data(JSONWriter.compact(.array(steps.map(JSONValue.object))).utf8).write(to: script)
        defer { try? FileManager.default.removeItem(at: script) }
        let run = try CLIRunner.run([script.path], executable: tool)
        let report = (try? JSONReader.parse(run.stdout)) ?? .string(run.stdout)
        return Result(status: run.status, report: report, stderr: run.stderr)
    }

    /// The checks every page gets: nothing cut, nothing wider than the
    /// window, no script error.
    static let whole: [JSONObject] = [
        ["expectNoCutText": .string("body")], ["expectNoHorizontalScroll": .bool(true)], ["expectNoConsoleErrors": .bool(true)],
    ]
}
