import Foundation
import IndexModel
import Testing

@Suite struct GrepCommandTests {
    /// Item 42 is created, updated in a batch, deleted with its domain, and
    /// created again; an activity related to it is recorded and shown.
    func makeStore() throws -> String {
        let directory = try temporaryDirectory()
        let ops = directory.appendingPathComponent("ops.jsonl")
        try write([
            #"{"op":"index","index":"photos","items":[{"id":"42","domain":"album-1","title":"Answer"},{"id":"7","title":"Seven"}]}"#,
            #"{"op":"batch","index":"photos","clientState":"AQI=","ops":[{"op":"update","index":"photos","items":[{"id":"42","title":"The answer","keywords":["life"]}]}]}"#,
            #"{"op":"deleteDomains","index":"photos","domains":["album-1"]}"#,
            #"{"op":"index","index":"photos","items":[{"id":"42","title":"Answer again"}]}"#,
            #"{"op":"activity","type":"view","title":"Viewing 42","searchable":true,"related":"42"}"#,
            #"{"op":"shown","ref":"42"}"#,
        ], to: ops)
        let db = directory.appendingPathComponent("d.sqlite").path
        let applied = try CLIRunner.run(["device", "apply", "--db", db, "--clock", "2026-11-22T00:00:00Z", ops.path])
        #expect(applied.status == 0, "\(applied.stderr)")
        return db
    }

    @Test func grepAnswersWhatDeletedAnItemWhenAndInWhichCall() throws {
        let db = try makeStore()
        let json = try CLIRunner.json(["journal", "grep", "--db", db, "--json", #"kind == "itemDeleted" && id == "42""#])
        let events = try #require(json["events"]?.array)
        #expect(events.count == 1)
        #expect(events.first?["event"]?["cause"] == .string("domain"))
        #expect(events.first?["event"]?["domain"] == .string("album-1"))
        #expect(events.first?["call"]?.integer == 3)
        #expect(json["query"] == .string(#"kind == "itemDeleted" && id == "42""#))
    }

    /// On a cloud store, grep asks about each message of the log: the same
    /// messages `journal export` lists, with the row's fields.
    @Test func grepOnACloudStoreMatchesTheLogsMessagesAsExportListsThem() throws {
        let run = try TraceCommandTests.run.get().path
        let export = try CLIRunner.json(["journal", "export", "--run", run, "--json"])
        var votes: [String: Int] = [:]
        for row in export["rows"]?.array ?? [] {
            for message in row["messages"]?.array ?? [] where message["kind"] == .string("vote") {
                votes[message["hash"]?.stringValue ?? "", default: 0] += 1
            }
        }
        let (hash, count) = try #require(votes.max { $0.value < $1.value })
        let query = #"kind == "vote" && hash == ""# + hash + #"""#
        let found = try CLIRunner.json(["journal", "grep", "--run", run, "--json", query])
        let messages = try #require(found["messages"]?.array)
        #expect(messages.count == count)
        #expect(messages.allSatisfy { $0["kind"] == .string("vote") && $0["hash"] == .string(hash) && $0["row"]?.integer != nil })
        let text = try CLIRunner.run(["journal", "grep", "--run", run, "--limit", "1", query])
        #expect(text.status == 0 && text.stdout.split(separator: "\n").count == 1 && text.stdout.contains("vote  \(hash)"))

        let misspelt = try CLIRunner.run(["journal", "grep", "--run", run, #"kidn == "vote""#])
        #expect(misspelt.status == 2 && misspelt.stderr.contains("did you mean kind?") && misspelt.stderr.contains("^"))
        let explain = try CLIRunner.run(["journal", "grep", "--run", run, "--explain", "pub-3"])
        #expect(explain.status == 2 && explain.stderr.contains("sightline trace"))
    }

    /// A field no event has is a misspelling: an error with a caret under it
    /// and a suggestion (exit 2), not a query that silently matches nothing.
    /// A custom attribute some event carries is a field like any other.
    @Test func aFieldNoEventHasIsAnErrorWithACaretAndACustomAttributeIsAField() throws {
        let db = try makeStore()
        let directory = URL(fileURLWithPath: db).deletingLastPathComponent()
        let ops = directory.appendingPathComponent("custom.jsonl")
        try write([#"{"op":"index","index":"photos","items":[{"id":"9","title":"Nine","attributes":{"mood":"calm"}}]}"#], to: ops)
        let applied = try CLIRunner.run(["device", "apply", "--db", db, "--clock", "2026-11-23T00:00:00Z", ops.path])
        #expect(applied.status == 0, "\(applied.stderr)")

        let misspelt = try CLIRunner.run(["journal", "grep", "--db", db, #"kind == "itemDeleted" && kidn == "x""#])
        #expect(misspelt.status == 2 && misspelt.stdout.isEmpty)
        let lines = misspelt.stderr.split(separator: "\n").map(String.init)
        #expect(lines.first?.contains("column 26") == true && lines.first?.contains("no event in this journal has a field kidn") == true
                && lines.first?.contains("did you mean kind?") == true, "\(misspelt.stderr)")
        // The caret stands under the misspelt name.
        let shown = try #require(lines.dropFirst().first), caret = try #require(lines.dropFirst(2).first)
        let column = caret.count - 1
        #expect(caret.hasSuffix("^") && Array(shown)[column...].starts(with: "kidn"), "\(misspelt.stderr)")
        let swapped = try CLIRunner.run(["journal", "grep", "--db", db, #"tilte == "x""#])
        #expect(swapped.status == 2 && swapped.stderr.contains("did you mean title?"), "\(swapped.stderr)")

        let custom = try CLIRunner.json(["journal", "grep", "--db", db, "--json", #"mood == "calm""#])
        #expect(custom["events"]?.array?.count == 1)
        let absent = try CLIRunner.run(["journal", "grep", "--db", db, #"moody == "calm""#])
        #expect(absent.status == 2 && absent.stderr.contains("did you mean mood?"), "\(absent.stderr)")
    }

    /// A query that would do more work than `--budget` allows stops with
    /// "query too expensive" and exit status 2, in `journal grep` and in
    /// `device query`; within the budget the same query runs.
    @Test func aQueryPastItsBudgetExitsTwoSayingItIsTooExpensive() throws {
        let db = try makeStore()
        let query = (0..<20).map { _ in #"** == "*a*n*s*w*e*r*z*"cd"# }.joined(separator: " || ")
        for command in [["journal", "grep"], ["device", "query"]] {
            let refused = try CLIRunner.run(command + ["--db", db, "--budget", "100", query])
            #expect(refused.status == 2, "\(command): \(refused.stderr)")
            #expect(refused.stderr.contains("query too expensive"), "\(command): \(refused.stderr)")
            #expect(refused.stdout.isEmpty, "\(command): \(refused.stdout)")
            let allowed = try CLIRunner.run(command + ["--db", db, query])
            #expect(allowed.status == 0, "\(command): \(allowed.stderr)")
        }
    }

    @Test func grepSeesBatchesClientStatesAndTheEventsAttributes() throws {
        let db = try makeStore()
        let batch = try CLIRunner.json(["journal", "grep", "--db", db, "--json", #"clientState == "AQI=" && kind == "itemUpdated""#])
        #expect(batch["events"]?.array?.count == 1)
        #expect(batch["events"]?.array?.first?["batch"]?["index"] == .string("photos"))
        let titled = try CLIRunner.json(["journal", "grep", "--db", db, "--json", #"title == "*answer*"c"#])
        #expect(titled["events"]?.array?.map { $0["seq"]?.integer } == [1, 3, 6])
        let related = try CLIRunner.json(["journal", "grep", "--db", db, "--json", #"related == "42" || keywords == "life""#])
        #expect(related["events"]?.array?.count == 2)
        let recent = try CLIRunner.run(["journal", "grep", "--db", db, "--clock", "2026-11-23T12:00:00Z", "time < $time.yesterday"])
        #expect(recent.status == 0)
        #expect(recent.stdoutLines.isEmpty, "\(recent.stdout)")
        let limited = try CLIRunner.run(["journal", "grep", "--db", db, "--limit", "2"])
        #expect(limited.stdoutLines.count == 2)
    }

    @Test func explainPrintsTheWholeHistoryOfAnIdentifier() throws {
        let db = try makeStore()
        let json = try CLIRunner.json(["journal", "grep", "--db", db, "--explain", "42", "--json"])
        let changes = json["history"]?.array?.map { $0["change"] }
        #expect(changes == [
            .string("created"), .string("updated title, keywords"), .string("deleted with domain album-1"),
            .string("created"), .string("activity view|Viewing 42 (related) became current"), .string("shown as a result"),
        ] || changes?.count == 6)
        #expect(json["history"]?.array?[1]["batch"]?["clientState"] == .string("AQI="))
        let text = try CLIRunner.run(["journal", "grep", "--db", db, "--explain", "42"])
        #expect(text.status == 0)
        #expect(text.stdout.contains("deleted with domain album-1"))
        #expect(text.stdout.contains("(batch, client state AQI=)"))
        let never = try CLIRunner.run(["journal", "grep", "--db", db, "--explain", "nope"])
        #expect(never.stdout.contains("never mentions nope"))
    }

    @Test func aBadQueryIsShownWithACaretAndExitsTwo() throws {
        let db = try makeStore()
        let result = try CLIRunner.run(["journal", "grep", "--db", db, #"kind == "itemDeleted" &&"#])
        #expect(result.status == 2)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.first == "invalid query at column 25: expected a predicate such as title == \"Paris\"; the query ends here")
        #expect(lines.last?.hasSuffix("^") == true)
        #expect(result.stdout.isEmpty)
        let both = try CLIRunner.run(["journal", "grep", "--db", db, "--explain", "42", "kind == \"x\""])
        #expect(both.status == 64)
        #expect(both.stderr.contains("either a query or --explain"))
        let device = try CLIRunner.run(["device", "query", "--db", db, "title == "])
        #expect(device.status == 2)
        #expect(device.stderr.contains("column 10: expected a value after =="))
    }

    @Test func deviceQueryPrintsFetchedAttributes() throws {
        let db = try makeStore()
        let json = try CLIRunner.json(["device", "query", "--db", db, "--json", "--fetch", "title,domainIdentifier",
                                       #"title == "*"c"#])
        #expect(json["count"]?.integer == 2)
        let items = try #require(json["items"]?.array)
        #expect(items.map { $0["id"] } == [.string("42"), .string("7")])
        #expect(items.first?["attributes"]?["title"] == .string("Answer again"))
        let text = try CLIRunner.run(["device", "query", "--db", db, #"title == "seven"c"#, "--fetch", "title"])
        #expect(text.stdoutLines == ["index   id  title", "photos  7   Seven"])
        let none = try CLIRunner.run(["device", "query", "--db", db, #"title == "nothing""#])
        #expect(none.stdoutLines == ["no items"])
    }
}
