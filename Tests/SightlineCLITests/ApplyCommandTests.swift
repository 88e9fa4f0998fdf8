import DeviceStore
import Foundation
import IndexModel
import Testing

@Suite struct ApplyCommandTests {
    let good = [
        #"{"op":"index","index":"photos","items":[{"id":"1","title":"Haleakala Sunrise","keywords":["maui"]}]}"#,
        #"{"op":"index","index":"photos","items":[{"id":"2","title":"Road to Hana"}]}"#,
    ]

    /// Applies `good` then `bad` then one more good line; expects the run to stop
    /// at the bad line with `line 3: <expected>` and exit status 2, with the first
    /// two lines committed and nothing after.
    func expectStop(at bad: String, message expected: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let directory = try temporaryDirectory()
        let ops = directory.appendingPathComponent("ops.jsonl")
        let db = directory.appendingPathComponent("d.sqlite").path
        try write(good + [bad, #"{"op":"delete","index":"photos","ids":["1"]}"#], to: ops)
        let result = try CLIRunner.run(["device", "apply", "--db", db, ops.path])
        #expect(result.status == 2, sourceLocation: sourceLocation)
        #expect(result.stderr.contains("line 3: \(expected)"), "stderr: \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stdoutLines.count == 2, sourceLocation: sourceLocation)
        let store = try DeviceStore(at: .file(db), options: StoreOptions(readOnly: true))
        #expect(try store.items(in: "photos").map(\.uniqueIdentifier) == ["1", "2"], sourceLocation: sourceLocation)
        #expect(try store.journalHead().seq == Seq(2), sourceLocation: sourceLocation)
    }

    @Test func malformedJSONStopsWithTheColumn() throws {
        try expectStop(at: #"{"op":"index","index":"photos" "items":[]}"#, message: "column 32: expected ',' or '}'")
    }

    @Test func unknownOperationStops() throws {
        try expectStop(at: #"{"op":"reindex","index":"photos"}"#, message: "op: unknown operation \"reindex\"")
    }

    @Test func wrongTypeNamesTheField() throws {
        try expectStop(at: #"{"op":"index","index":"photos","items":[{"id":"3","title":42}]}"#,
                       message: "items[0].title: must be a string, found a number")
    }

    @Test func unknownFieldIsRefused() throws {
        try expectStop(at: #"{"op":"index","index":"photos","items":[{"id":"3","colour":"red"}]}"#,
                       message: "items[0].colour: unknown field")
    }

    @Test func oversizedStringIsRefused() throws {
        let huge = String(repeating: "a", count: Limits.textBytes + 1)
        try expectStop(at: #"{"op":"index","index":"photos","items":[{"id":"3","description":"\#(huge)"}]}"#,
                       message: "items[0].contentDescription: is \(Limits.textBytes + 1) bytes; the limit is \(Limits.textBytes)")
    }

    @Test func duplicateIdentifiersInOneCallAreRefused() throws {
        try expectStop(at: #"{"op":"index","index":"photos","items":[{"id":"3"},{"id":"4"},{"id":"3"}]}"#,
                       message: "items[2].id: duplicate identifier \"3\" (also at items[0])")
    }

    @Test func badDateIsRefused() throws {
        try expectStop(at: #"{"op":"index","index":"photos","items":[{"id":"3","expires":"2027-02-30T00:00:00Z"}]}"#,
                       message: "items[0].expires: is not an ISO 8601 date-time")
    }

    @Test func invalidUTF8IsRefusedWithItsColumn() throws {
        let directory = try temporaryDirectory()
        let ops = directory.appendingPathComponent("ops.jsonl")
        let db = directory.appendingPathComponent("d.sqlite").path
        var bytes = Data((good.joined(separator: "\n") + "\n").utf8)
        bytes.append(Data(#"{"op":"shown","ref":"a"#.utf8))
        bytes.append(contentsOf: [0xC3, 0x28])
        bytes.append(Data("\"}\n".utf8))
        try bytes.write(to: ops)
        let result = try CLIRunner.run(["device", "apply", "--db", db, ops.path])
        #expect(result.status == 2)
        #expect(result.stderr.contains("line 3: column 23: invalid UTF-8"), "stderr: \(result.stderr)")
    }

    @Test func conflictingBatchStopsAndCommitsNothingOfIt() throws {
        try expectStop(at: #"{"op":"batch","index":"photos","clientState":"AQ==","expectedClientState":"Ag==","ops":[{"op":"deleteAll"}]}"#,
                       message: "batch: batch for index \"photos\" expected client state")
    }

    @Test func advanceClockWithoutASimulatedClockIsRefused() throws {
        try expectStop(at: #"{"op":"advanceClock","to":"2027-01-01T00:00:00Z"}"#, message: "advanceClock: advanceClock needs a simulated clock")
    }

    @Test func fromLineResumesAfterAFix() throws {
        let directory = try temporaryDirectory()
        let ops = directory.appendingPathComponent("ops.jsonl")
        let db = directory.appendingPathComponent("d.sqlite").path
        try write(good + [#"{"op":"delete","index":"photos","ids":["1"]}"#], to: ops)
        let result = try CLIRunner.run(["device", "apply", "--db", db, "--from-line", "2", "--json", ops.path])
        #expect(result.status == 0)
        let lines = try result.stdoutLines.map { try JSONReader.parse($0) }
        #expect(lines.map { $0["line"]?.integer } == [2, 3])
        let store = try DeviceStore(at: .file(db), options: StoreOptions(readOnly: true))
        #expect(try store.items(in: "photos").map(\.uniqueIdentifier) == ["2"])
    }

    @Test func readsOperationsFromStandardInput() throws {
        let db = try temporaryDirectory().appendingPathComponent("d.sqlite").path
        let result = try CLIRunner.run(["device", "apply", "--db", db, "-"], stdin: Data(good.joined(separator: "\n").utf8))
        #expect(result.status == 0)
        #expect(result.stdoutLines == ["line 1: index photos: 1 indexed (seq 1)", "line 2: index photos: 1 indexed (seq 2)"])
    }

    @Test func theExampleOperationsApplyAndSearch() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let db = try temporaryDirectory().appendingPathComponent("d.sqlite").path
        let apply = try CLIRunner.run(["device", "apply", "--db", db, "--clock", "2026-11-22T00:00:00Z",
                                       root.appendingPathComponent("docs/examples/photos.jsonl").path])
        #expect(apply.status == 0, "\(apply.stderr)")
        let search = try CLIRunner.json(["device", "search", "--db", db, "--json", "potato"])
        #expect(search["results"]?.array?.count == 1)
        let napa = try CLIRunner.json(["device", "search", "--db", db, "--json", "napa"])
        #expect(napa["results"]?.array?.first?["title"] == .string("Napa vineyards"))
        #expect(napa["results"]?.array?.first?["explanation"] == nil)

        // --explain: the parts of each score, in words and in JSON, adding up to the score.
        let explained = try CLIRunner.json(["device", "search", "--db", db, "--json", "--explain", "napa"])
        let first = try #require(explained["results"]?.array?.first)
        let explanation = try #require(first["explanation"])
        let words = try #require(explanation["words"]?.array)
        #expect(words.map { $0["matched"] } == [.string("napa")])
        #expect(words.first?["prefix"] == .bool(true))
        #expect(explanation["score"] == first["score"])
        let text = try CLIRunner.run(["device", "search", "--db", db, "--explain", "napa"])
        #expect(text.status == 0)
        #expect(text.stdout.contains("#1 Napa vineyards: score "))
        #expect(text.stdout.contains("\"napa…\" matched \"napa\": relevance "))
        #expect(text.stdout.contains("multiplier ") && text.stdout.contains("tie-break "))
    }
}
