import DeviceStore
import Foundation
import GRDB
import IndexModel
import Testing
import Workloads

@Suite struct JournalCommandTests {
    /// `tail --follow` prints the last rows, then each row a writer commits
    /// after them, as it comes, until stopped.
    @Test func tailFollowPrintsWhatAnotherProcessAppendsAsItComes() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = directory.appendingPathComponent("first.jsonl"), second = directory.appendingPathComponent("second.jsonl")
        try write([#"{"op":"index","index":"notes","items":[{"id":"before","title":"Before"}]}"#], to: first)
        try write([#"{"op":"index","index":"notes","items":[{"id":"after","title":"After"}]}"#], to: second)
        let db = directory.appendingPathComponent("d.sqlite").path
        #expect(try CLIRunner.run(["device", "apply", "--db", db, "--clock", "2026-11-22T00:00:00Z", first.path]).status == 0)
        let follower = try Child(["journal", "tail", "--db", db, "-f", "--interval", "0.05"], in: directory)
        defer { follower.stop() }
        func waitFor(_ text: String) {
            let deadline = ContinuousClock.now + .seconds(20)
            while !follower.outputText.contains(text) && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.02) }
        }
        waitFor("notes/before")
        #expect(follower.outputText.contains("notes/before") && !follower.outputText.contains("notes/after"))
        #expect(try CLIRunner.run(["device", "apply", "--db", db, "--clock", "2026-11-22T00:00:01Z", second.path]).status == 0)
        waitFor("notes/after")
        let lines = follower.outputText.split(separator: "\n").map(String.init)
        #expect(lines.count == 2 && lines[1].hasPrefix("seq 2") && lines[1].contains("notes/after"), "\(lines)")
        #expect(follower.process.isRunning)
        let bad = try CLIRunner.run(["journal", "tail", "--db", db, "-f", "--interval", "0"])
        #expect(bad.status == 64)
    }

    /// `show` reads as text, a field a line, and `--json` is an object with
    /// a named array for one seq as for several; a recorded public activity
    /// carries the public hash the cloud knows it by, in show, tail and grep.
    @Test func showPrintsReadableFieldsAndItsJSONIsAnObjectWithEventsAndPublicActivitiesCarryTheirHash() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let ops = directory.appendingPathComponent("ops.jsonl")
        try write([
            #"{"op":"activity","type":"com.example.view","title":"Harbour","url":"https://example.com/h","searchable":true,"public":true}"#,
            #"{"op":"index","index":"notes","items":[{"id":"n1","title":"Note"}]}"#,
        ], to: ops)
        let db = directory.appendingPathComponent("d.sqlite").path
        let applied = try CLIRunner.run(["device", "apply", "--db", db, "--clock", "2026-11-22T00:00:00Z", ops.path])
        #expect(applied.status == 0, "\(applied.stderr)")

        let one = try CLIRunner.json(["journal", "show", "--db", db, "1", "--json"])
        let events = try #require(one["events"]?.array)
        #expect(events.count == 1 && events[0]["seq"]?.integer == 1)
        let hash = try #require(events[0]["publicHash"]?.stringValue)
        #expect(hash.count == 64 && events[0]["hash"]?.stringValue != hash)
        #expect(try CLIRunner.json(["journal", "show", "--db", db, "1", "--to", "2", "--json"])["events"]?.array?.count == 2)

        let text = try CLIRunner.run(["journal", "show", "--db", db, "1"])
        let lines = text.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("seq 1  epoch 1  call 1") == true && lines.first?.contains("activityRecorded") == true)
        #expect(lines.contains("  activity.title: Harbour") && lines.contains("  public hash: \(hash)"), "\(text.stdout)")
        #expect(!text.stdout.contains("{"), "show prints text, not JSON")

        let grep = try CLIRunner.json(["journal", "grep", "--db", db, "--json", #"kind == "activityRecorded""#])
        #expect(grep["events"]?.array?.first?["publicHash"]?.stringValue == hash)
        let tail = try CLIRunner.json(["journal", "tail", "--db", db, "--json"])
        #expect(tail["events"]?.array?.first?["publicHash"]?.stringValue == hash)
        #expect(tail["events"]?.array?.last?["publicHash"] == nil, "an item is not a public activity")
    }

    /// A store made by the CLI from a seeded workload of `count` calls.
    func makeStore(count: Int, seed: UInt64 = 1) throws -> String {
        let directory = try temporaryDirectory()
        let ops = directory.appendingPathComponent("ops.jsonl")
        var workload = SyntheticWorkload(seed: seed)
        try write((0..<count).map { _ in workload.nextOperation().unconditional.jsonLine }, to: ops)
        let db = directory.appendingPathComponent("d.sqlite").path
        let result = try CLIRunner.run(["device", "apply", "--db", db, ops.path])
        #expect(result.status == 0, "\(result.stderr)")
        return db
    }

    @Test func readOnlyCommandsRefuseAMissingStoreAndCreateNothing() throws {
        let path = try temporaryDirectory().appendingPathComponent("missing.sqlite").path
        for command in ["stats", "tail", "verify", "export", "grep"] {
            let result = try CLIRunner.run(["journal", command, "--db", path])
            #expect(result.status == 3, "\(command)")
            #expect(result.stderr.contains("no store at \(path)"), "\(command): \(result.stderr)")
        }
        #expect(try CLIRunner.run(["device", "search", "--db", path, "x"]).status == 3)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    /// The user's path through a purge: nothing goes before a backup; after
    /// `device snapshot` the deleted note's rows are purged, `journal show`
    /// and `export` say so, and the journal still verifies.
    @Test func purgeWaitsForASnapshotThenPurgesAndShowAndExportSayWhatWent() throws {
        let directory = try temporaryDirectory()
        let ops = directory.appendingPathComponent("ops.jsonl")
        try write([
            #"{"op":"index","index":"notes","items":[{"id":"n1","title":"a birthday present for Sam"},{"id":"n2","title":"kept"}]}"#,
            #"{"op":"delete","index":"notes","ids":["n1"]}"#,
        ], to: ops)
        let db = directory.appendingPathComponent("d.sqlite").path
        #expect(try CLIRunner.run(["device", "apply", "--db", db, ops.path]).status == 0)

        let early = try CLIRunner.run(["journal", "purge", "--db", db])
        #expect(early.status == 0 && early.stdout.contains("purged 0 events"), "\(early.stdout)")
        #expect(early.stdout.contains("1 deleted item waits for a backup"), "\(early.stdout)")
        #expect(try CLIRunner.run(["device", "snapshot", "--db", db, "--out", directory.appendingPathComponent("b.slsnap").path]).status == 0)
        let dry = try CLIRunner.json(["journal", "purge", "--db", db, "--dry-run", "--json"])
        #expect(dry["purgedSeqs"] == .array([.integer(1)]) && dry["backedUpThrough"]?.integer == 3)
        let purged = try CLIRunner.run(["journal", "purge", "--db", db])
        #expect(purged.status == 0 && purged.stdout.contains("purged 1 event of 1 deleted item") && purged.stdout.contains("notes/n1"),
                "\(purged.stdout)")

        let shown = try CLIRunner.run(["journal", "show", "--db", db, "1"])
        #expect(shown.stdout.contains("(payload purged)") || shown.stdout.contains("\"purged\""), "\(shown.stdout)")
        let exported = try CLIRunner.run(["journal", "export", "--db", db])
        let first = exported.stdout.split(separator: "\n").first.map(String.init) ?? ""
        #expect(first.contains("\"purged\":true") && first.contains("purgedPayloadSHA256") && !first.contains("birthday"), "\(first)")
        #expect(!exported.stdout.contains("birthday"))
        #expect(try CLIRunner.run(["journal", "verify", "--db", db]).status == 0)
        #expect(try CLIRunner.json(["journal", "stats", "--db", db, "--json"])["purgedEvents"]?.integer == 1)
        #expect(try Data(contentsOf: URL(fileURLWithPath: db)).range(of: Data("birthday".utf8)) == nil)
    }

    /// A purge of many items names the first ten and says how many more
    /// went, so that its line stays readable; `--json` lists every one.
    @Test func aLongPurgeNamesTenItemsAndCountsTheRest() throws {
        let directory = try temporaryDirectory()
        let ops = directory.appendingPathComponent("ops.jsonl")
        let ids = (1...12).map { String(format: "n%02d", $0) }
        try write([
            #"{"op":"index","index":"notes","items":["# + ids.map { #"{"id":"\#($0)","title":"note \#($0)"}"# }.joined(separator: ",") + "]}",
            #"{"op":"delete","index":"notes","ids":["# + ids.map { "\"\($0)\"" }.joined(separator: ",") + "]}",
        ], to: ops)
        let db = directory.appendingPathComponent("d.sqlite").path
        #expect(try CLIRunner.run(["device", "apply", "--db", db, ops.path]).status == 0)
        #expect(try CLIRunner.run(["device", "snapshot", "--db", db, "--out", directory.appendingPathComponent("b.slsnap").path]).status == 0)
        let all = try CLIRunner.json(["journal", "purge", "--db", db, "--dry-run", "--json"])
        #expect(all["items"]?.array?.count == 12, "\(all)")
        let purged = try CLIRunner.run(["journal", "purge", "--db", db])
        let named = ids.prefix(10).map { "notes/\($0)" }.joined(separator: ", ")
        #expect(purged.status == 0 && purged.stdout.contains("of 12 deleted items ("), "\(purged.stdout)")
        #expect(purged.stdout.contains(": \(named) and 2 more (--json lists them all)"), "\(purged.stdout)")
        #expect(!purged.stdout.contains("notes/n11") && !purged.stdout.contains("notes/n12"), "\(purged.stdout)")
    }

    /// A private activity deleted and backed up: its recording, its
    /// deletion and the engagement with its URL keep pseudonyms only.
    @Test func purgeTakesADeletedActivityAndTheEngagementWithItsURL() throws {
        let directory = try temporaryDirectory()
        let ops = directory.appendingPathComponent("ops.jsonl")
        let url = "https://clinic.example/appointments/42"
        try write([
            #"{"op":"activity","type":"com.example.health/appointment","title":"Oncology follow-up","url":"\#(url)","searchable":true}"#,
            #"{"op":"engage","ref":"\#(url)"}"#,
            #"{"op":"deleteAllActivities"}"#,
        ], to: ops)
        let db = directory.appendingPathComponent("d.sqlite").path
        #expect(try CLIRunner.run(["device", "apply", "--db", db, ops.path]).status == 0)
        let early = try CLIRunner.json(["journal", "purge", "--db", db, "--json"])
        #expect(early["activitiesWaiting"]?.array?.first?["waitsFor"] == .string("backup"), "\(early)")
        #expect(try CLIRunner.run(["device", "snapshot", "--db", db, "--out", directory.appendingPathComponent("b.slsnap").path]).status == 0)
        let purged = try CLIRunner.run(["journal", "purge", "--db", db])
        #expect(purged.status == 0 && purged.stdout.contains("purged the content of 1 deleted activity and the reference of 1 engagement event"),
                "\(purged.stdout)")
        #expect(purged.stdout.contains("purged 3 events of 0 deleted items and 1 deleted activity ("), "\(purged.stdout)")
        let exported = try CLIRunner.run(["journal", "export", "--db", db])
        #expect(exported.status == 0 && exported.stdout.contains("activityPurged") && !exported.stdout.contains("clinic.example")
                && !exported.stdout.contains("Oncology"), "\(exported.stdout)")
        #expect(try CLIRunner.run(["journal", "verify", "--db", db]).status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: db)).range(of: Data("Oncology".utf8)) == nil)
    }

    @Test func anAutomaticPurgeRunsAfterTheNextSnapshot() throws {
        let directory = try temporaryDirectory()
        let ops = directory.appendingPathComponent("ops.jsonl")
        try write([
            #"{"op":"index","index":"notes","items":[{"id":"n1","title":"a birthday present for Sam"}]}"#,
            #"{"op":"delete","index":"notes","ids":["n1"]}"#,
        ], to: ops)
        let db = directory.appendingPathComponent("d.sqlite").path
        #expect(try CLIRunner.run(["device", "apply", "--db", db, ops.path]).status == 0)
        let set = try CLIRunner.run(["journal", "purge", "--db", db, "--auto", "0s"])
        #expect(set.status == 0 && set.stderr.contains("automatic purge: on, after 0s"), "\(set.stderr)")
        #expect(set.stdout.contains("waits for a backup"), "\(set.stdout)")
        let snapshot = try CLIRunner.run(["device", "snapshot", "--db", db, "--out", directory.appendingPathComponent("b.slsnap").path])
        #expect(snapshot.status == 0 && snapshot.stderr.contains("automatic purge: purged 1 event(s) of 1 deleted item(s)"),
                "\(snapshot.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: db)).range(of: Data("birthday".utf8)) == nil)
        #expect(try CLIRunner.run(["journal", "purge", "--db", db, "--auto", "off"]).stderr.contains("automatic purge: off"))
        for bad in ["7", "7w", "-1d", "99999999999999d", "off7"] {
            let result = try CLIRunner.run(["journal", "purge", "--db", db, "--auto=\(bad)"])
            #expect(result.status == 64 && result.stderr.contains("--auto takes a delay"), "\(bad): \(result.stderr)")
        }
    }

    @Test func purgeRefusesAMissingStoreAndCreatesNothing() throws {
        let directory = try temporaryDirectory()
        let missing = directory.appendingPathComponent("missing.sqlite").path
        #expect(try CLIRunner.run(["journal", "purge", "--db", missing]).status == 3)
        #expect(!FileManager.default.fileExists(atPath: missing))
    }

    @Test func verifyPassesOnAGoodStoreAndNamesTheFirstBadSeqOtherwise() throws {
        let db = try makeStore(count: 200)
        let good = try CLIRunner.json(["journal", "verify", "--db", db, "--json"])
        #expect(good["valid"] == .bool(true))
        #expect(good["projectionDigest"] == good["rebuiltDigest"])

        try DatabaseQueue(path: db).write { db in
            try db.execute(sql: "UPDATE event_journal SET time = time + 1 WHERE seq = 57")
        }
        let result = try CLIRunner.run(["journal", "verify", "--db", db])
        #expect(result.status == 1)
        #expect(result.stderr.contains("first bad seq 57"), "\(result.stderr)")
        let json = try CLIRunner.json(["journal", "verify", "--db", db, "--json"])
        #expect(json["firstBadSeq"]?.integer == 57)
        #expect(json["verifiedRows"]?.integer == 56)
    }

    /// A row edited to hold a negative epoch is refused where the journal
    /// is read, naming the row and the value, by every tool that reads it:
    /// nothing traps and nothing prints a number no store wrote.
    @Test func exportAndStatsRefuseARowWithANegativeEpochByName() throws {
        let db = try makeStore(count: 20)
        try DatabaseQueue(path: db).write { db in
            try db.execute(sql: "UPDATE event_journal SET epoch = -1 WHERE seq = 5")
        }
        for command in [["journal", "export", "--db", db], ["journal", "stats", "--db", db, "--json"], ["journal", "verify", "--db", db]] {
            let result = try CLIRunner.run(command)
            #expect(result.status != 0 && result.status != 132, "\(command[1]): \(result.status)")
            #expect(result.stderr.contains("seq 5: epoch is -1"), "\(command[1]): \(result.stderr)")
        }
    }

    @Test func verifyDetectsProjectionsThatDisagreeWithTheJournal() throws {
        let db = try makeStore(count: 100)
        try DatabaseQueue(path: db).write { db in
            try db.execute(sql: "UPDATE engagement SET shown = shown + 1 WHERE rowid = (SELECT min(rowid) FROM engagement)")
        }
        let result = try CLIRunner.run(["journal", "verify", "--db", db])
        #expect(result.status == 1)
        #expect(result.stderr.contains("projections differ from a rebuild"), "\(result.stderr)")
    }

    @Test func inspectionDoesNotModifyTheStore() throws {
        let db = try makeStore(count: 50)
        let before = try Data(contentsOf: URL(fileURLWithPath: db))
        for command in [["stats"], ["tail"], ["verify"], ["export"], ["grep", "kind == \"itemIndexed\""], ["grep", "--explain", "1"], ["show", "1"]] {
            _ = try CLIRunner.run(["journal"] + command + ["--db", db])
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: db)) == before)
    }

    /// A torn or rotten page in the middle of the journal's B-tree: the tools read
    /// every row before it and say where they stopped.
    @Test func statsExportAndVerifyReadWhatTheyCanOfADamagedStore() throws {
        let db = try makeStore(count: 3000, seed: 4)
        let full = try CLIRunner.json(["journal", "stats", "--db", db, "--json"])
        let total = try #require(full["events"]?.integer)
        let (pageSize, leaves) = try DatabaseQueue(path: db).read { db in
            (try Int.fetchOne(db, sql: "PRAGMA page_size")!,
             try Int.fetchAll(db, sql: "SELECT pageno FROM dbstat WHERE name = 'event_journal' AND pagetype = 'leaf' ORDER BY pageno"))
        }
        #expect(leaves.count > 10)
        let damaged = leaves[leaves.count / 2]
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: db))
        try handle.seek(toOffset: UInt64((damaged - 1) * pageSize))
        handle.write(Data(repeating: 0xA5, count: pageSize))
        try handle.close()

        let stats = try CLIRunner.run(["journal", "stats", "--db", db, "--json"])
        #expect(stats.status == 1)
        let json = try JSONReader.parse(stats.stdout)
        #expect(json["complete"] == .bool(false))
        let read = try #require(json["events"]?.integer)
        #expect(read > 0 && read < total)
        #expect(stats.stderr.contains("stopped after seq \(read)"), "\(stats.stderr)")

        let export = try CLIRunner.run(["journal", "export", "--db", db])
        #expect(export.status == 1)
        #expect(export.stdoutLines.count == Int(read))
        #expect(export.stderr.contains("stopped after seq \(read)"))

        let verify = try CLIRunner.run(["journal", "verify", "--db", db])
        #expect(verify.status == 1)
        #expect(verify.stderr.contains("first bad seq \(read + 1)"), "\(verify.stderr)")
    }

    @Test func tailShowsTheLastEvents() throws {
        let db = try makeStore(count: 40)
        let head = try #require(try CLIRunner.json(["journal", "stats", "--db", db, "--json"])["headSeq"]?.integer)
        let tail = try CLIRunner.json(["journal", "tail", "--db", db, "-n", "3", "--json"])
        #expect(tail["events"]?.array?.map { $0["seq"]?.integer } == [head - 2, head - 1, head])
    }

    @Test func diffReportsWhereTwoJournalsDiverge() throws {
        let first = try makeStore(count: 60, seed: 9)
        let second = try makeStore(count: 60, seed: 9)
        let same = try CLIRunner.run(["journal", "diff", "--db", first, "--other", second])
        #expect(same.status == 0)
        #expect(same.stdout.hasPrefix("identical:"))

        let extra = try temporaryDirectory().appendingPathComponent("extra.jsonl")
        try write([#"{"op":"shown","ref":"x"}"#], to: extra)
        #expect(try CLIRunner.run(["device", "apply", "--db", second, extra.path]).status == 0)
        let diff = try CLIRunner.json(["journal", "diff", "--db", first, "--other", second, "--json"])
        #expect(diff["identical"] == .bool(false))
        #expect(diff["onlyInOther"]?.integer == 1)
        #expect(try CLIRunner.run(["journal", "diff", "--db", first, "--other", second]).status == 1)
    }
}

extension AppOperation {
    /// The same call without a compare-and-swap condition, so replaying a
    /// generated workload through the CLI never stops at a client-state conflict.
    var unconditional: AppOperation {
        guard case .batch(var batch) = self else { return self }
        batch.condition = .unconditional
        return .batch(batch)
    }
}
