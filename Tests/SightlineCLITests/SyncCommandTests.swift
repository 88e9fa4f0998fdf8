import Foundation
import IndexModel
import Testing

/// `sightline cloud serve` in one process and `sightline sync` in others, as two
/// terminals would run them.
@Suite(.serialized) struct SyncCommandTests {
    @Test func devicesMadeWithApplySyncToAServedCloudAndTheCountsAreExact() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try servedCloud(directory, threshold: 2)
        defer {
            server.process.terminate()
            server.process.waitUntilExit()
        }
        let url = "https://www.yummly.com/recipe/BPC-983195"
        let operations = directory.appendingPathComponent("ops.jsonl")
        try write([
            #"{"op":"index","index":"notes","items":[{"id":"n1","title":"CANARY-private-note"}]}"#,
            #"{"op":"activity","type":"com.yummly/browseRecipe","title":"Baked Potato Chips","url":"\#(url)","searchable":true,"public":true}"#,
            #"{"op":"engage","ref":"\#(url)"}"#,
            #"{"op":"shown","ref":"\#(url)"}"#,
            #"{"op":"engage","ref":"n1"}"#,
        ], to: operations)
        let secret = directory.appendingPathComponent("secret").path
        for device in 1...3 {
            let store = directory.appendingPathComponent("device\(device).sqlite").path
            #expect(try CLIRunner.run(["device", "apply", "--db", store, operations.path]).status == 0)
            let sync = try CLIRunner.run(["sync", "--db", store, "--cloud", server.url, "--enrolment-secret-file", secret])
            #expect(sync.status == 0, "\(sync.stderr)")
            #expect(sync.stdout.contains("enrolled device"))
        }
        // The second device's vote brought the hash to K = 2: it was asked for
        // the content and answered in its own run. The third device was asked
        // in the ack of its vote, and its answer, the second byte-identical
        // offer, made the content public. The first device is never asked:
        // by its next sync the content is agreed.
        for device in 1...3 {
            let store = directory.appendingPathComponent("device\(device).sqlite").path
            let again = try CLIRunner.json(["sync", "--db", store, "--cloud", server.url, "--json"])
            #expect(again["failure"] == .null && again["pending"]?.integer == 0)
        }
        let cloud = directory.appendingPathComponent("cloud.sqlite").path
        let stats = try CLIRunner.json(["cloud", "stats", "--db", cloud, "--json"])
        #expect(stats["devices"]?.integer == 3 && stats["publicItems"]?.integer == 1 && stats["messages"]?.integer == 11)
        let search = try CLIRunner.json(["cloud", "search", "--db", cloud, "--app", "com.example.app", "--json", "potato"])
        guard case .array(let results)? = search["results"], let first = results.first else {
            Issue.record("no public result")
            return
        }
        #expect(first["devices"]?.integer == 3 && first["engaged"]?.integer == 3 && first["shown"]?.integer == 3)
        #expect(try CLIRunner.run(["cloud", "rebuild", "--db", cloud]).status == 0)
        let filtered = try CLIRunner.json(["cloud", "search", "--db", cloud, "--app", "com.example.app", "--json",
                                           "--query", "engaged >= 3 && devices == 3"])
        guard case .array(let kept)? = filtered["results"] else { return }
        #expect(kept.count == 1)
        let badQuery = try CLIRunner.run(["cloud", "search", "--db", cloud, "--app", "com.example.app", "--query", "title =="])
        #expect(badQuery.status == 2 && badQuery.stderr.contains("^"))

        // The journal tools read the cloud log.
        let verify = try CLIRunner.run(["journal", "verify", "--db", cloud])
        #expect(verify.status == 0 && verify.stdout.contains("cloud log of 5 rows and 11 messages verified"), "\(verify.stdout)\(verify.stderr)")
        let journalStats = try CLIRunner.json(["journal", "stats", "--db", cloud, "--json"])
        #expect(journalStats["messages"]?.integer == 11 && journalStats["devices"]?.integer == 3)
        #expect(journalStats["byKind"]?["vote"]?.integer == 3 && journalStats["byKind"]?["content"]?.integer == 2)
        let export = try CLIRunner.run(["journal", "export", "--db", cloud])
        #expect(export.status == 0 && export.stdoutLines.count == 5)
        let tail = try CLIRunner.run(["journal", "tail", "--db", cloud])
        #expect(tail.status == 0 && tail.stdoutLines.count == 5, "\(tail.stdout)\(tail.stderr)")
        let show = try CLIRunner.run(["journal", "show", "--db", cloud, "1"])
        #expect(show.status == 2 && show.stderr.contains("is a cloud store"))
        let bytes = FileManager.default.contents(atPath: cloud) ?? Data()
        #expect(!bytes.contains(Data("CANARY".utf8)))
    }

    /// `tail --follow` on a served cloud's store prints each row the server
    /// appends as it comes, as JSON Lines with `--json`.
    @Test func tailFollowPrintsTheRowsAServedCloudAppendsAsItAcceptsThem() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try servedCloud(directory, threshold: 2)
        defer {
            server.process.terminate()
            server.process.waitUntilExit()
        }
        let cloud = directory.appendingPathComponent("cloud.sqlite").path
        let follower = try Child(["journal", "tail", "--db", cloud, "--follow", "--interval", "0.05", "--json"], in: directory)
        defer { follower.stop() }
        let operations = directory.appendingPathComponent("ops.jsonl")
        try write([#"{"op":"activity","type":"com.example.view","title":"Followed","url":"https://example.com/f","searchable":true,"public":true}"#,
                   #"{"op":"engage","ref":"https://example.com/f"}"#], to: operations)
        let store = directory.appendingPathComponent("device.sqlite").path
        #expect(try CLIRunner.run(["device", "apply", "--db", store, operations.path]).status == 0)
        let sync = try CLIRunner.run(["sync", "--db", store, "--cloud", server.url, "--enrolment-secret-file",
                                      directory.appendingPathComponent("secret").path])
        #expect(sync.status == 0, "\(sync.stderr)")
        let deadline = ContinuousClock.now + .seconds(20)
        while !follower.outputText.contains(#""kind":"vote""#) && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.02) }
        let lines = follower.outputText.split(separator: "\n").map(String.init)
        #expect(follower.process.isRunning, "it follows until stopped: \(follower.errorText)")
        #expect(!lines.isEmpty && lines.allSatisfy { (try? JSONReader.parse($0))?["seq"]?.integer != nil }, "\(lines)")
        #expect(lines.contains { $0.contains(#""kind":"vote""#) }, "the row of the device's vote came: \(lines)")
    }

    @Test func syncWithoutASecretOrWithAWrongOneFailsClearly() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try servedCloud(directory, threshold: 2)
        defer {
            server.process.terminate()
            server.process.waitUntilExit()
        }
        let store = directory.appendingPathComponent("device.sqlite").path
        let operations = directory.appendingPathComponent("ops.jsonl")
        try write([#"{"op":"index","index":"notes","items":[{"id":"n1"}]}"#], to: operations)
        #expect(try CLIRunner.run(["device", "apply", "--db", store, operations.path]).status == 0)
        let missing = try CLIRunner.run(["sync", "--db", store, "--cloud", server.url])
        #expect(missing.status == 2 && missing.stderr.contains("no enrolment secret was given"))
        let wrong = directory.appendingPathComponent("wrong")
        try Data("not-the-secret-at-all-but-long".utf8).write(to: wrong)
        let refused = try CLIRunner.run(["sync", "--db", store, "--cloud", server.url, "--enrolment-secret-file", wrong.path])
        #expect(refused.status == 4 && refused.stderr.contains("enrolment refused (403)"))
        let unreachable = try CLIRunner.run(["sync", "--db", store, "--cloud", "http://127.0.0.1:1", "--timeout", "1",
                                             "--enrolment-secret-file", wrong.path])
        #expect(unreachable.status == 4 && unreachable.stderr.contains("cannot reach"))
        let noStore = try CLIRunner.run(["sync", "--db", directory.appendingPathComponent("none.sqlite").path, "--cloud", server.url])
        #expect(noStore.status == 3)
    }

    /// The cloud-side restore drill with real processes: devices sync to a
    /// served cloud, the cloud is snapshotted, devices go on and sync, the cloud
    /// store is deleted and restored, the server restarts, devices sync again:
    /// the counts are exactly what they were before the loss.
    @Test func aCloudRestoreDrillConvergesToTheSameCounts() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = "https://www.yummly.com/recipe/BPC-983195"
        let first = directory.appendingPathComponent("first.jsonl")
        try write([
            #"{"op":"activity","type":"com.yummly/browseRecipe","title":"Baked Potato Chips","url":"\#(url)","searchable":true,"public":true}"#,
            #"{"op":"engage","ref":"\#(url)"}"#,
        ], to: first)
        let second = directory.appendingPathComponent("second.jsonl")
        try write([#"{"op":"shown","ref":"\#(url)"}"#, #"{"op":"engage","ref":"\#(url)"}"#], to: second)
        let secret = directory.appendingPathComponent("secret").path
        let cloud = directory.appendingPathComponent("cloud.sqlite").path
        let devices = (1...3).map { directory.appendingPathComponent("device\($0).sqlite").path }
        func syncAll(_ serverURL: String) throws {
            for _ in 0..<2 {
                for device in devices {
                    let sync = try CLIRunner.run(["sync", "--db", device, "--cloud", serverURL, "--enrolment-secret-file", secret])
                    #expect(sync.status == 0, "\(sync.stderr)")
                }
            }
        }
        var server = try servedCloud(directory, threshold: 2)
        for device in devices { #expect(try CLIRunner.run(["device", "apply", "--db", device, first.path]).status == 0) }
        try syncAll(server.url)
        let snapshot = directory.appendingPathComponent("cloud.snap").path
        #expect(try CLIRunner.run(["cloud", "snapshot", "--db", cloud, "--out", snapshot]).status == 0)
        for device in devices { #expect(try CLIRunner.run(["device", "apply", "--db", device, second.path]).status == 0) }
        try syncAll(server.url)
        let before = try CLIRunner.json(["cloud", "search", "--db", cloud, "--app", "com.example.app", "--json"])
        server.process.terminate()
        server.process.waitUntilExit()

        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: cloud + suffix) }
        let restore = try CLIRunner.run(["cloud", "restore", "--snapshot", snapshot, "--db", cloud])
        #expect(restore.status == 0, "\(restore.stderr)")
        server = try servedCloud(directory, threshold: 2)
        defer {
            server.process.terminate()
            server.process.waitUntilExit()
        }
        try syncAll(server.url)
        let after = try CLIRunner.json(["cloud", "search", "--db", cloud, "--app", "com.example.app", "--json"])
        guard case .array(let results)? = after["results"], let item = results.first else {
            Issue.record("nothing public after the restore")
            return
        }
        #expect(item["engaged"]?.integer == 6 && item["shown"]?.integer == 3 && item["devices"]?.integer == 3)
        #expect(after == before, "the counts converged exactly")
        #expect(try CLIRunner.run(["journal", "verify", "--db", cloud]).status == 0)
    }

    /// The device-side restore drill with real processes: a device syncs, is
    /// snapshotted, goes on and syncs, its store is deleted, restored from the
    /// snapshot and reindexed from the app's operations, and syncs again. Its
    /// index is what its operations imply, and the cloud counted nothing twice.
    @Test func aDeviceRestoreDrillLosesNothingBeyondTheWindowAndCountsNothingTwice() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try servedCloud(directory, threshold: 1)
        defer {
            server.process.terminate()
            server.process.waitUntilExit()
        }
        let url = "https://www.yummly.com/recipe/BPC-983195"
        let before = [
            #"{"op":"batch","index":"photos","clientState":"czE=","ops":[{"op":"index","items":[{"id":"1","title":"Sunrise"}]}]}"#,
            #"{"op":"activity","type":"com.yummly/browseRecipe","title":"Baked Potato Chips","url":"\#(url)","searchable":true,"public":true}"#,
            #"{"op":"engage","ref":"\#(url)"}"#,
        ]
        let after = [
            #"{"op":"batch","index":"photos","clientState":"czI=","ops":[{"op":"index","items":[{"id":"2","title":"Sunset"}]},{"op":"delete","ids":["1"]}]}"#,
            #"{"op":"engage","ref":"\#(url)"}"#,
        ]
        let first = directory.appendingPathComponent("first.jsonl")
        let second = directory.appendingPathComponent("second.jsonl")
        let all = directory.appendingPathComponent("all.jsonl")
        try write(before, to: first)
        try write(after, to: second)
        try write(before + after, to: all)
        let secret = directory.appendingPathComponent("secret").path
        let device = directory.appendingPathComponent("device.sqlite").path
        let snapshot = directory.appendingPathComponent("device.snap").path
        let cloud = directory.appendingPathComponent("cloud.sqlite").path
        func sync() throws {
            let result = try CLIRunner.run(["sync", "--db", device, "--cloud", server.url, "--enrolment-secret-file", secret])
            #expect(result.status == 0, "\(result.stderr)")
        }
        #expect(try CLIRunner.run(["device", "apply", "--db", device, first.path]).status == 0)
        try sync()
        #expect(try CLIRunner.run(["device", "snapshot", "--db", device, "--out", snapshot]).status == 0)
        #expect(try CLIRunner.run(["device", "apply", "--db", device, second.path]).status == 0)
        try sync()
        let counted = try CLIRunner.json(["cloud", "search", "--db", cloud, "--app", "com.example.app", "--json"])

        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: device + suffix) }
        let restore = try CLIRunner.run(["device", "restore", "--snapshot", snapshot, "--db", device])
        #expect(restore.status == 0, "\(restore.stderr)")
        let reindex = try CLIRunner.run(["device", "reindex", "--db", device, "--from", all.path])
        #expect(reindex.status == 0 && reindex.stdout.contains("reindexed photos"), "\(reindex.stdout)\(reindex.stderr)")
        try sync()

        // The index is what the operations imply: item 2, not item 1.
        let items = try CLIRunner.json(["device", "query", "--db", device, "--json", #"title == "*""#])
        guard case .array(let found)? = items["results"] ?? items["items"] else {
            Issue.record("no items in \(items)")
            return
        }
        #expect(found.count == 1 && found.first?["id"] == .string("2"), "\(found)")
        #expect(try CLIRunner.run(["journal", "verify", "--db", device]).status == 0)
        // The engagement after the snapshot was counted before the loss and is
        // not counted again; nothing was resent twice.
        let recounted = try CLIRunner.json(["cloud", "search", "--db", cloud, "--app", "com.example.app", "--json"])
        #expect(recounted == counted)
        guard case .array(let results)? = recounted["results"], let item = results.first else {
            Issue.record("nothing public")
            return
        }
        #expect(item["engaged"]?.integer == 2 && item["devices"]?.integer == 1)
    }

    /// With periodic snapshots, the backed-up watermark moves and devices may
    /// drop what a snapshot holds; without one they keep everything.
    @Test func periodicCloudSnapshotsLetDevicesDropWhatTheyHold() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let snapshots = directory.appendingPathComponent("snapshots").path
        let keyFile = directory.appendingPathComponent("snapshot.key")
        try Data(String(repeating: "5a", count: 32).utf8).write(to: keyFile)
        let unencrypted = try CLIRunner.run(["cloud", "serve", "--db", directory.appendingPathComponent("refused.sqlite").path,
                                             "--snapshot-every", "1", "--snapshot-dir", snapshots])
        #expect(unencrypted.status != 0 && unencrypted.stderr.contains("--plaintext-snapshots"), "\(unencrypted.stderr)")
        let server = try servedCloud(directory, threshold: 2, extra: ["--snapshot-every", "1", "--snapshot-dir", snapshots,
                                                                "--snapshots-kept", "2", "--key-file", keyFile.path])
        defer {
            server.process.terminate()
            server.process.waitUntilExit()
        }
        let url = "https://www.yummly.com/recipe/BPC-983195"
        let operations = directory.appendingPathComponent("ops.jsonl")
        try write([
            #"{"op":"activity","type":"com.yummly/browseRecipe","title":"Baked Potato Chips","url":"\#(url)","searchable":true,"public":true}"#,
            #"{"op":"engage","ref":"\#(url)"}"#,
        ], to: operations)
        let device = directory.appendingPathComponent("device.sqlite").path
        let secret = directory.appendingPathComponent("secret").path
        #expect(try CLIRunner.run(["device", "apply", "--db", device, operations.path]).status == 0)
        let first = try CLIRunner.json(["sync", "--db", device, "--cloud", server.url, "--enrolment-secret-file", secret, "--json"])
        #expect(first["acknowledged"] == .string("1:2"))
        // The server snapshots every second; sync until a reply says a
        // snapshot holds the device's messages, or give up after 30 s.
        let deadline = ContinuousClock.now + .seconds(30)
        var second = try CLIRunner.json(["sync", "--db", device, "--cloud", server.url, "--json"])
        while second["droppableThrough"] != .string("1:2") && ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.25)
            second = try CLIRunner.json(["sync", "--db", device, "--cloud", server.url, "--json"])
        }
        #expect(second["droppableThrough"] == .string("1:2"), "\(second)")
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: snapshots)) ?? []).filter { $0.hasSuffix(".snap") }.sorted()
        #expect((1...2).contains(files.count), "\(files)")
        // They hold every device key: sealed, and restorable only with the key.
        let newest = (snapshots as NSString).appendingPathComponent(try #require(files.last))
        let restoredPath = directory.appendingPathComponent("restored-cloud.sqlite").path
        let withoutKey = try CLIRunner.run(["cloud", "restore", "--snapshot", newest, "--db", restoredPath])
        #expect(withoutKey.status != 0 && withoutKey.stderr.contains("--key-file"), "\(withoutKey.stderr)")
        let withKey = try CLIRunner.run(["cloud", "restore", "--snapshot", newest, "--db", restoredPath, "--key-file", keyFile.path])
        #expect(withKey.status == 0, "\(withKey.stderr)")
    }
}
