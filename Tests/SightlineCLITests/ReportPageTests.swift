import Foundation
import IndexModel
import Testing

/// `report.html` as a reader sees it in a browser, at 1400 and 800 pixels.
@Suite(.enabled(if: BrowserCheck.unavailable == nil, "needs Chromium: tools/install-deps installs it"))
struct ReportPageTests {
    /// A sabotaged run under heavy faults: its failures come first, the
    /// timeline has a row with the count of every fault kind that
    /// happened, and no label or chart is cut at either width.
    @Test func aFailedRunsReportShowsItsFailuresFirstAndEveryFaultKindWhole() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let out = directory.appendingPathComponent("run")
        let run = try CLIRunner.run(["simulate", "--seed", "1", "--devices", "30", "--events-per-device", "120", "--faults", "heavy",
                                     "--sabotage", "threshold", "--out", out.path, "--quiet"])
        #expect(run.status == 1, "\(run.stderr)")
        let report = try JSONReader.parse([UInt8](try Data(contentsOf: out.appendingPathComponent("report.json"))))
        guard case .object(let faults)? = report["faults"] else {
            Issue.record("no faults in report.json")
            return
        }
        let page = out.appendingPathComponent("report.html").absoluteString
        var steps: [JSONObject] = []
        for width in [1400, 800] {
            steps += [["open": .string(page), "width": .integer(Int64(width))],
                      ["expectText": .string("invariants failed")], ["expectText": .string("public-index")],
                      ["expectText": .string("virtual seconds")], ["expectSelector": .string("svg"), "atLeast": .integer(5)]]
            for member in faults.members {
                guard case .integer(let count) = member.value, count > 0 else { continue }
                steps.append(["expectText": .string("\(member.key) (\(count))")])
            }
            steps += BrowserCheck.whole
        }
        let checked = try BrowserCheck.run(steps)
        #expect(checked.status == 0, "report.html in the browser:\n\(checked.failures)")
        // The failure is named before the timeline.
        let html = try String(contentsOf: out.appendingPathComponent("report.html"), encoding: .utf8)
        let failure = try #require(html.range(of: "<code>public-index</code>"))
        let timeline = try #require(html.range(of: "<h2>Timeline</h2>"))
        #expect(failure.lowerBound < timeline.lowerBound)
    }
}
