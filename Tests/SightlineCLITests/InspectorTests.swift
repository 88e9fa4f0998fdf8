import Foundation
import IndexModel
import Testing

/// `sightline inspect RUN_DIR`, opened in a real browser as a user would:
/// each page of a real run's folder at 1400 and 800 pixels, the timeline's
/// zoom, the fleet's sorting and filter, and a trace followed from the
/// search box.
@Suite(.serialized, .enabled(if: BrowserCheck.unavailable == nil, "needs Chromium: tools/install-deps installs it"))
struct InspectorTests {
    /// A kept heavy run, made once for the suite.
    static let run: Result<URL, any Error> = Result {
        let directory = try temporaryDirectory().appendingPathComponent("run")
        let result = try CLIRunner.run(["simulate", "--seed", "3", "--devices", "12", "--events-per-device", "80", "--faults", "heavy",
                                        "--out", directory.path, "--quiet"])
        guard result.status == 0 else { throw ServeFailure("the run failed: \(result.stderr)") }
        return directory
    }

    /// Starts the inspector on a free port and returns its base URL.
    static func inspect(_ folder: URL, in directory: URL) throws -> (child: Child, url: String) {
        let child = try Child(["inspect", folder.path], in: directory)
        return (child, try child.waitForError(/inspecting .* on (http:\/\/127\.0\.0\.1:\d+)/))
    }

    @Test func everyPageOfARunReadsWholeAtBothWidthsAndATraceFollowsFromTheSearchBox() throws {
        let folder = try Self.run.get()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (child, url) = try Self.inspect(folder, in: directory)
        defer { child.stop() }
        let report = try JSONReader.parse([UInt8](try Data(contentsOf: folder.appendingPathComponent("report.json"))))
        guard case .object(let faults)? = report["faults"] else {
            Issue.record("no faults in report.json")
            return
        }
        var steps: [JSONObject] = []
        for width in [1400, 800] {
            let size: JSONObject = ["width": .integer(Int64(width))]
            func open(_ path: String) -> JSONObject { size.merging(["open": .string(url + path)]) }
            // The run: its verdict, and a timeline row with the count of every fault kind.
            steps += [open("/"), ["expectText": .string("All ")], ["expectText": .string("invariants held")],
                      ["waitFor": .string("#timeline svg")]]
            for member in faults.members {
                guard case .integer(let count) = member.value, count > 0 else { continue }
                steps.append(["expectText": .string("\(member.key) (\(count))")])
            }
            steps += [["click": .string(".zoom-in")], ["expectText": .string("showing ")], ["click": .string(".zoom-reset")]]
            steps += BrowserCheck.whole
            // The fleet: twelve devices, sorted by restores, filtered to those with any.
            steps += [open("/fleet"), ["waitFor": .string("tbody tr")], ["expectSelector": .string("tbody tr"), "count": .integer(12)],
                      ["click": .string("th[data-column=restores]")], ["expectText": .string("restores ▼")],
                      ["fill": .array([.string(".filter"), .string("number=5")])], ["expectSelector": .string("tbody tr"), "count": .integer(1)],
                      ["expectText": .string("devices 1–1 of 1 (of 12)")]]
            steps += BrowserCheck.whole
            // A device, the cloud.
            steps += [open("/devices/5"), ["expectText": .string("Device 5")], ["expectText": .string("What the cloud holds of it")],
                      ["expectText": .string("Journal: ")], ["expectText": .string("frames the cloud logged from it")],
                      ["expectText": .string("Messages the cloud logged from it (acknowledged)")],
                      ["expectSelector": .string("svg"), "atLeast": .integer(2)]]
            steps += BrowserCheck.whole
            steps += [open("/cloud"), ["expectText": .string("Log rows by app")], ["expectText": .string("Popularity in com.sightline.sim")],
                      ["expectText": .string("Public index over virtual time")]]
            steps += BrowserCheck.whole
            // A trace from the search box: the verdict in counts, then the steps.
            steps += [open("/"), ["fill": .array([.string("input[name=q]"), .string("pub-3")])],
                      ["press": .array([.string("input[name=q]"), .string("Enter")])], ["waitFor": .string("p.trace")],
                      ["expectText": .string("identifier pub-3: ")], ["expectText": .string("Why it is public or not")],
                      ["expectSelector": .string("table.steps tr"), "atLeast": .integer(10)]]
            steps += BrowserCheck.whole
        }
        let checked = try BrowserCheck.run(steps)
        #expect(checked.status == 0, "the inspector in the browser:\n\(checked.failures)")
    }

    /// What a page is given is shown as text, never run; a device the run
    /// does not have is a 404 that names the devices it has; a target that
    /// is not one says what a target is.
    @Test func whatAPageIsGivenIsShownAsTextAndBadAddressesSayWhy() throws {
        let folder = try Self.run.get()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (child, url) = try Self.inspect(folder, in: directory)
        defer { child.stop() }
        let hostile = "<script>document.title='owned'</script>"
        let checked = try BrowserCheck.run([
            ["open": .string(url + "/trace?q=" + hostile.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)],
            ["expectText": .string("identifier \(hostile)")], ["expectSelector": .string("main script"), "count": .integer(0)],
            ["expectNoConsoleErrors": .bool(true)],
            ["open": .string(url + "/trace?q=hash:abc")], ["expectText": .string("is not a public hash: 64 hexadecimal digits")],
            ["open": .string(url + "/trace?q=device:99")], ["expectText": .string("the run has no device 99")],
        ])
        #expect(checked.status == 0, "\(checked.failures)")
        let missing = try BrowserCheck.run([["open": .string(url + "/devices/99")]])
        #expect(missing.status == 1 && missing.failures.contains("404"), "\(missing.failures)")
    }

    /// A report.json someone edited (numbers no device has, times that are
    /// text, lists that are not lists) is shown as far as it reads, and no
    /// page fails: nothing in the folder can stop the inspector.
    @Test func anEditedReportIsShownAsFarAsItReads() throws {
        let folder = try Self.run.get()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let copy = directory.appendingPathComponent("edited")
        try FileManager.default.copyItem(at: folder, to: copy)
        let path = copy.appendingPathComponent("report.json")
        guard case .object(var report) = try JSONReader.parse([UInt8](try Data(contentsOf: path))) else {
            Issue.record("report.json is not an object")
            return
        }
        report["restores"] = .array([.object(["device": .double(1e300), "atSeconds": .string("later")])])
        report["events"] = .array([.object(["kind": .integer(3)]), .object(["kind": .string("deviceCrash"), "atSeconds": .string("x")]),
                                   .string("not an event")])
        report["devices"] = .string("nope")
        report["invariants"] = .integer(5)
        report["timeline"] = .array([.object(["atSeconds": .double(-1e308), "cloudUp": .string("yes")])])
        try Data(JSONWriter.compact(.object(report)).utf8).write(to: path)
        let (child, url) = try Self.inspect(copy, in: directory)
        defer { child.stop() }
        let checked = try BrowserCheck.run([
            ["open": .string(url + "/")], ["expectText": .string("Run, seed 3")], ["expectNoConsoleErrors": .bool(true)],
            ["open": .string(url + "/fleet")], ["waitFor": .string("tbody tr")], ["expectNoConsoleErrors": .bool(true)],
            ["open": .string(url + "/devices/2")], ["expectText": .string("Device 2")],
            ["open": .string(url + "/cloud")], ["expectText": .string("Log rows by app")],
        ])
        #expect(checked.status == 0, "\(checked.failures)")
        #expect(child.process.isRunning)
    }

    @Test func aFolderThatIsNoRunIsRefused() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try CLIRunner.run(["inspect", directory.appendingPathComponent("nothing").path])
        #expect(result.status == 3 && result.stderr.contains("run.json"), "\(result.stderr)")
    }
}

extension JSONObject {
    func merging(_ other: JSONObject) -> JSONObject {
        var merged = self
        for member in other.members { merged[member.key] = member.value }
        return merged
    }
}
