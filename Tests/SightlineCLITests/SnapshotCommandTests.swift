import Foundation
import IndexModel
import Testing

@Suite struct SnapshotCommandTests {
    @Test func snapshotAndRestoreFromTheCommandLine() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = directory.appendingPathComponent("device.sqlite").path
        let operations = directory.appendingPathComponent("ops.jsonl")
        try write([#"{"op":"index","index":"photos","items":[{"id":"1","title":"Sunrise"},{"id":"2","title":"Sunset"}]}"#,
                   #"{"op":"delete","index":"photos","ids":["2"]}"#], to: operations)
        #expect(try CLIRunner.run(["device", "apply", "--db", store, operations.path]).status == 0)
        let key = directory.appendingPathComponent("key")
        try Data(String(repeating: "ab", count: 32).utf8).write(to: key)
        let snapshot = directory.appendingPathComponent("device.snap").path
        let made = try CLIRunner.json(["device", "snapshot", "--db", store, "--out", snapshot, "--key-file", key.path, "--json"])
        #expect(made["headSeq"]?.integer == 3 && made["encrypted"] == .bool(true))

        let refused = try CLIRunner.run(["device", "restore", "--snapshot", snapshot, "--db", store, "--key-file", key.path])
        #expect(refused.status == 1 && refused.stderr.contains("--force"))
        let noKey = try CLIRunner.run(["device", "restore", "--snapshot", snapshot, "--db", store, "--force"])
        #expect(noKey.status == 1 && noKey.stderr.contains("encrypted"))

        var truncated = try #require(FileManager.default.contents(atPath: snapshot))
        truncated.removeLast(50)
        let bad = directory.appendingPathComponent("bad.snap").path
        try truncated.write(to: URL(fileURLWithPath: bad))
        let before = FileManager.default.contents(atPath: store)
        let badRun = try CLIRunner.run(["device", "restore", "--snapshot", bad, "--db", store, "--force", "--key-file", key.path])
        #expect(badRun.status == 1 && badRun.stderr.contains("cut short"))
        #expect(FileManager.default.contents(atPath: store) == before)

        let restored = try CLIRunner.json(["device", "restore", "--snapshot", snapshot, "--db", store, "--force",
                                           "--key-file", key.path, "--to-seq", "1", "--json"])
        let epoch = try #require(restored["epoch"]?.integer)
        #expect(epoch > 1_700_000_000_000 && restored["headSeq"]?.integer == 4, "the new epoch is the restore time in ms")
        let verify = try CLIRunner.run(["journal", "verify", "--db", store])
        #expect(verify.status == 0)
        let history = try CLIRunner.run(["journal", "grep", "--db", store, #"kind == "storeRestored""#])
        #expect(history.status == 0 && history.stdout.contains("storeRestored") && history.stdout.contains("epoch \(epoch)"))
    }

    @Test func restoreToATimeKeepsTheCallsMadeByThen() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = directory.appendingPathComponent("device.sqlite").path
        let operations = directory.appendingPathComponent("ops.jsonl")
        try write([#"{"op":"index","index":"photos","items":[{"id":"1","title":"Sunrise"},{"id":"2","title":"Sunset"}]}"#,
                   #"{"op":"advanceClock","to":"2026-11-22T10:00:00Z"}"#,
                   #"{"op":"delete","index":"photos","ids":["2"]}"#], to: operations)
        #expect(try CLIRunner.run(["device", "apply", "--db", store, "--clock", "2026-11-22T09:00:00Z", operations.path]).status == 0)
        let snapshot = directory.appendingPathComponent("device.snap").path
        #expect(try CLIRunner.run(["device", "snapshot", "--db", store, "--out", snapshot]).status == 0)
        let target = directory.appendingPathComponent("restored.sqlite").path
        let restored = try CLIRunner.json(["device", "restore", "--snapshot", snapshot, "--db", target,
                                           "--to-time", "2026-11-22T09:30:00Z", "--json"])
        #expect(restored["restoredThrough"]?.integer == 2, "both items, not the deletion at 10:00")
        let search = try CLIRunner.json(["device", "search", "--db", target, "--json", "sunset"])
        #expect(search["results"]?.array?.count == 1)
        let both = try CLIRunner.run(["device", "restore", "--snapshot", snapshot, "--db", target + "2", "--to-seq", "1",
                                      "--to-time", "2026-11-22T09:30:00Z"])
        #expect(both.status == 64 && both.stderr.contains("--to-seq and --to-time exclude each other"))
        let garbled = try CLIRunner.run(["device", "restore", "--snapshot", snapshot, "--db", target + "3", "--to-time", "soon"])
        #expect(garbled.status == 64 && garbled.stderr.contains("--to-time must be an ISO 8601 instant"))
    }

    /// Restoring a backup taken before an activity was deleted and purged
    /// does not bring it back, and the restore says so in both outputs.
    @Test func restoreNamesThePurgedActivityItDeletedAgain() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = directory.appendingPathComponent("device.sqlite").path
        let recorded = directory.appendingPathComponent("recorded.jsonl")
        try write([#"{"op":"activity","type":"com.example/visit","title":"Clinic visit","id":"visit-1","searchable":true}"#], to: recorded)
        let deleted = directory.appendingPathComponent("deleted.jsonl")
        try write([#"{"op":"deleteAllActivities"}"#], to: deleted)
        #expect(try CLIRunner.run(["device", "apply", "--db", store, recorded.path]).status == 0)
        let before = directory.appendingPathComponent("before.snap").path
        #expect(try CLIRunner.run(["device", "snapshot", "--db", store, "--out", before]).status == 0)
        #expect(try CLIRunner.run(["device", "apply", "--db", store, deleted.path]).status == 0)
        #expect(try CLIRunner.run(["device", "snapshot", "--db", store, "--out", directory.appendingPathComponent("after.snap").path]).status == 0)
        let purged = try CLIRunner.json(["journal", "purge", "--db", store, "--json"])
        #expect(purged["activities"] == .array([.string("id:visit-1")]), "\(purged)")

        let copy = store + ".copy"
        try FileManager.default.copyItem(atPath: store, toPath: copy)
        let restored = try CLIRunner.json(["device", "restore", "--snapshot", before, "--db", store, "--force", "--json"])
        #expect(restored["activitiesDeletedAgain"] == .array([.string("id:visit-1")]), "\(restored)")
        let text = try CLIRunner.run(["device", "restore", "--snapshot", before, "--db", copy, "--force"])
        #expect(text.status == 0 && text.stdout.contains("deleted again 1 activity the replaced store had purged: id:visit-1"), "\(text.stdout)")
        let search = try CLIRunner.json(["device", "search", "--db", store, "--json", "clinic"])
        #expect(search["results"]?.array?.isEmpty == true, "\(search)")
    }
}
