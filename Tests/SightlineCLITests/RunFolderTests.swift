import CloudSQLite
import DeviceStore
import Foundation
import IndexModel
import Snapshot
import SyncWire
import Testing

/// A run kept with `--out` explains itself: `run.json` names every device's
/// files, and the tools that take `--db` find a store by `--run DIR --device N`.
@Suite struct RunFolderTests {
    /// Seed 7 on six devices restores devices 0 and 1, so their stores are a
    /// second generation (`device-N.r1.sqlite`).
    static let arguments = ["simulate", "--seed", "7", "--devices", "6", "--events-per-device", "150", "--faults", "swarm"]

    private func keptRun() throws -> (URL, JSONObject) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("run-folder-\(UUID().uuidString)")
        let run = try CLIRunner.run(Self.arguments + ["--out", directory.path])
        #expect(run.status == 0, "\(run.stderr)")
        let text = try String(contentsOf: directory.appendingPathComponent("run.json"), encoding: .utf8)
        guard case .object(let manifest) = try JSONReader.parse(text) else {
            Issue.record("run.json is not an object")
            return (directory, JSONObject())
        }
        return (directory, manifest)
    }

    @Test func runJSONNamesEveryFileTheRunKeptAndAgreesWithTheReport() throws {
        let (directory, manifest) = try keptRun()
        defer { try? FileManager.default.removeItem(at: directory) }
        func exists(_ name: String) -> Bool { FileManager.default.fileExists(atPath: directory.appendingPathComponent(name).path) }
        guard case .object(let report) = try JSONReader.parse(String(contentsOf: directory.appendingPathComponent("report.json"),
                                                                     encoding: .utf8)) else {
            Issue.record("report.json is not an object")
            return
        }
        #expect(manifest["digest"] == report["digest"] && manifest["replay"] == report["replay"] && manifest["seed"] == .string("7"))
        #expect(manifest["replay"] == .string(Self.arguments.dropFirst().reduce("sightline simulate") { $0 + " " + $1 } + " --stores files"))
        guard case .object(let cloud) = manifest["cloud"], case .string(let cloudStore) = cloud["store"],
              case .array(let cloudBackups) = cloud["backups"], case .array(let devices) = manifest["devices"] else {
            Issue.record("run.json lacks its cloud or devices: \(manifest)")
            return
        }
        #expect(cloudStore == "cloud.sqlite" && exists(cloudStore))
        #expect(!cloudBackups.isEmpty && cloudBackups.allSatisfy { $0.stringValue.map(exists) == true })
        #expect(devices.count == 6)
        var named = Set(["report.json", "report.html", "run.json", cloudStore] + cloudBackups.compactMap(\.stringValue))
        var restored = 0
        for case .object(let device) in devices {
            guard case .string(let store) = device["store"], case .array(let replaced) = device["replacedStores"],
                  case .array(let backups) = device["backups"], case .string(let id) = device["id"] else {
                Issue.record("a device entry lacks a field: \(device)")
                continue
            }
            #expect(exists(store) && id.count == 32, "\(device)")
            // Each restore wrote a new generation and removed the one it replaced.
            #expect(store.hasSuffix(replaced.isEmpty ? ".sqlite" : ".r\(replaced.count).sqlite"))
            for case .object(let old) in replaced { #expect(old["file"]?.stringValue.map(exists) == false) }
            restored += replaced.count
            for case .object(let backup) in backups {
                #expect(backup["file"]?.stringValue.map(exists) == true)
                named.insert(backup["file"]?.stringValue ?? "")
            }
            named.insert(store)
        }
        #expect(restored >= 2, "seed 7 restores devices 0 and 1")
        // Nothing in the folder goes unnamed (SQLite's -wal and -shm aside).
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") }
        #expect(Set(files) == named)
    }

    @Test func toolsFindAStoreByRunAndDeviceNumberOrIdAndTheCloudsByRunAlone() throws {
        let (directory, manifest) = try keptRun()
        defer { try? FileManager.default.removeItem(at: directory) }
        guard case .array(let devices) = manifest["devices"], case .object(let first) = devices.dropFirst().first,
              case .string(let store) = first["store"], case .string(let id) = first["id"] else {
            Issue.record("run.json lacks device 1")
            return
        }
        let byPath = try CLIRunner.run(["journal", "stats", "--json", "--db", directory.appendingPathComponent(store).path])
        #expect(byPath.status == 0 && byPath.stdout.contains(id), "\(byPath.stderr)")
        for selector in ["1", id] {
            let byRun = try CLIRunner.run(["journal", "stats", "--json", "--run", directory.path, "--device", selector])
            #expect(byRun.status == 0 && byRun.stdout == byPath.stdout, "\(byRun.stderr)")
        }
        let cloudByPath = try CLIRunner.run(["journal", "stats", "--json", "--db", directory.appendingPathComponent("cloud.sqlite").path])
        let cloudByRun = try CLIRunner.run(["journal", "stats", "--json", "--run", directory.path])
        #expect(cloudByRun.status == 0 && cloudByRun.stdout == cloudByPath.stdout, "\(cloudByRun.stderr)")
        let cloudStats = try CLIRunner.run(["cloud", "stats", "--run", directory.path])
        #expect(cloudStats.status == 0, "\(cloudStats.stderr)")
        let search = try CLIRunner.run(["device", "query", "--run", directory.path, "--device", "2", "title == \"x\""])
        #expect(search.status == 0, "\(search.stderr)")

        for (arguments, says) in [
            (["journal", "stats", "--run", directory.path, "--device", "6"], "no such device (numbers: 0…5, or an id)"),
            (["journal", "stats", "--run", directory.path, "--device", "not-an-id"], "no such device"),
            (["journal", "stats", "--run", directory.deletingLastPathComponent().path], "has no run.json"),
            (["journal", "stats", "--db", directory.appendingPathComponent(store).path, "--run", directory.path], "give one"),
            (["journal", "stats", "--db", directory.appendingPathComponent(store).path, "--device", "1"], "--device goes with --run"),
            (["journal", "stats"], "--db PATH, or --run DIR"),
        ] {
            let refused = try CLIRunner.run(arguments)
            #expect(refused.status == 64 && refused.stderr.contains(says), "\(arguments): \(refused.stderr)")
        }
    }

    /// `snapshot inspect` shows a backup's manifest, verifies it as a
    /// restore would and says what it holds, and makes or changes nothing.
    @Test func snapshotInspectVerifiesABackupWithoutRestoringIt() throws {
        let (directory, manifest) = try keptRun()
        defer { try? FileManager.default.removeItem(at: directory) }
        guard case .array(let devices)? = manifest["devices"], case .object(let device)? = devices.first,
              case .array(let backups)? = device["backups"], case .object(let backup)? = backups.last,
              case .string(let file)? = backup["file"], case .object(let cloud)? = manifest["cloud"],
              case .array(let cloudBackups)? = cloud["backups"], case .string(let cloudFile)? = cloudBackups.last else {
            Issue.record("run.json names no backups")
            return
        }
        let before = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        let inspected = try CLIRunner.json(["snapshot", "inspect", directory.appendingPathComponent(file).path, "--json"])
        guard case .object(let snapshot)? = inspected["manifest"], case .object(let holds)? = inspected["holds"] else {
            Issue.record("snapshot inspect printed no manifest or holdings: \(inspected)")
            return
        }
        #expect(inspected["verified"] == .bool(true) && snapshot["kind"] == .string("device") && snapshot["device"] == device["id"])
        #expect(holds["events"] == snapshot["headSeq"], "every event of the journal through the snapshot's head")
        let cloudInspected = try CLIRunner.json(["snapshot", "inspect", directory.appendingPathComponent(cloudFile).path, "--json"])
        guard case .object(let cloudSnapshot)? = cloudInspected["manifest"], case .object(let cloudHolds)? = cloudInspected["holds"] else {
            Issue.record("snapshot inspect printed nothing for the cloud's backup: \(cloudInspected)")
            return
        }
        #expect(cloudSnapshot["kind"] == .string("cloud") && cloudHolds["logRows"] == cloudSnapshot["logRows"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == before, "nothing made or changed")

        // A damaged backup fails the check that catches it, and says so:
        // a byte of the content (the checksum), of the trailer (the manifest).
        let original = try Data(contentsOf: directory.appendingPathComponent(file))
        for offset in [64, original.count - 100] {
            let damaged = directory.appendingPathComponent("damaged-\(offset).slsnap")
            var bytes = original
            bytes[offset] ^= 0x01
            try bytes.write(to: damaged)
            let refused = try CLIRunner.run(["snapshot", "inspect", damaged.path])
            #expect(refused.status == 1 && refused.stderr.hasPrefix("error: "), "byte \(offset): \(refused.stderr)")
        }
        let missing = try CLIRunner.run(["snapshot", "inspect", directory.appendingPathComponent("none.slsnap").path])
        #expect(missing.status == 3, "\(missing.stderr)")
    }

    /// `journal tail` reads the cloud log too: the last rows of each app's
    /// chain, the same rows `export` ends with.
    @Test func journalTailReadsTheCloudLogsLastRows() throws {
        let (directory, _) = try keptRun()
        defer { try? FileManager.default.removeItem(at: directory) }
        let export = try CLIRunner.run(["journal", "export", "--run", directory.path])
        #expect(export.status == 0, "\(export.stderr)")
        let exported = try export.stdout.split(separator: "\n").map { try JSONReader.parse(String($0)) }
        let tail = try CLIRunner.json(["journal", "tail", "--run", directory.path, "-n", "3", "--json"])
        #expect(tail["rows"] == .array(Array(exported.suffix(3))), "the last three rows of the app's chain")
        let text = try CLIRunner.run(["journal", "tail", "--run", directory.path, "-n", "3"])
        let lines = text.stdout.split(separator: "\n")
        #expect(text.status == 0 && lines.count == 3, "\(text.stdout)")
        for (line, row) in zip(lines, exported.suffix(3)) {
            guard case .integer(let seq)? = row["seq"], case .string(let device)? = row["device"] else { continue }
            #expect(line.contains("  seq \(seq)  device \(device)  "), "\(line)")
        }
    }

    /// `journal export --json` is one document holding the objects the JSON
    /// Lines hold, for a device's journal and for the cloud log.
    @Test func exportJSONIsOneDocumentOfTheSameObjects() throws {
        let (directory, _) = try keptRun()
        defer { try? FileManager.default.removeItem(at: directory) }
        for (selector, name) in [(["--device", "1"], "events"), ([], "rows")] {
            let arguments = ["journal", "export", "--run", directory.path] + selector
            let lines = try CLIRunner.run(arguments)
            let objects = try lines.stdout.split(separator: "\n").map { try JSONReader.parse(String($0)) }
            let document = try CLIRunner.json(arguments + ["--json"])
            #expect(!objects.isEmpty && document[name] == .array(objects), "\(name)")
            let empty = try CLIRunner.json(arguments + ["--json", "--to", "0"])
            #expect(empty[name] == .array([]))
        }
    }

    @Test func anEditedRunJSONCannotPointOutsideItsFolder() throws {
        let (directory, _) = try keptRun()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("run.json")
        let text = try String(contentsOf: path, encoding: .utf8)
        let edited = text.replacingOccurrences(of: "\"device-2.sqlite\"", with: "\"../../etc/passwd\"")
        #expect(edited != text)
        try edited.write(to: path, atomically: true, encoding: .utf8)
        let refused = try CLIRunner.run(["journal", "stats", "--run", directory.path, "--device", "2"])
        #expect(refused.status == 64 && refused.stderr.contains("is not a file name in the run's folder"), "\(refused.stderr)")
        try "{\"command\": ".write(to: path, atomically: true, encoding: .utf8)
        let cut = try CLIRunner.run(["journal", "stats", "--run", directory.path])
        #expect(cut.status == 64 && cut.stderr.contains("is not JSON"), "\(cut.stderr)")
    }
}

/// `--version` says what this build can exchange with another: the formats
/// it writes, each as its source defines it.
@Test func versionNamesTheFormatsThisBuildWrites() throws {
    let run = try CLIRunner.run(["--version"])
    #expect(run.status == 0, "\(run.stderr)")
    #expect(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == """
        sightline: device store format \(DeviceStore.formatVersion), journal events format \(JournalEvent.formatVersion), \
        cloud store format \(CloudSchema.formatVersion), wire version \(UploadFrame.version), snapshot container version \(SnapshotFile.headerMagic.last ?? 0)
        """)
}

/// `journal stats` shows a device's sync cursor: what its outbox holds, what
/// the cloud acknowledged and made durable, and what waits; on a cloud store,
/// each device's position, which is what the device was acknowledged.
@Test func journalStatsShowsTheSyncCursor() throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let operations = directory.appendingPathComponent("ops.jsonl")
    try write([
        #"{"op":"activity","type":"com.example/view","title":"Kept","url":"https://example.com/a","searchable":true,"public":true}"#,
        #"{"op":"engage","ref":"https://example.com/a"}"#,
    ], to: operations)
    let device = directory.appendingPathComponent("device.sqlite").path
    #expect(try CLIRunner.run(["device", "apply", "--db", device, operations.path]).status == 0)
    let fresh = try CLIRunner.json(["journal", "stats", "--db", device, "--json"])
    guard case .object(let sync)? = fresh["sync"], case .integer(let pending)? = sync["pending"] else {
        Issue.record("journal stats --json has no sync cursor: \(fresh)")
        return
    }
    #expect(pending > 0 && sync["acknowledged"] != sync["outboxHead"] && sync["durable"] == sync["acknowledged"], "\(sync)")
    let text = try CLIRunner.run(["journal", "stats", "--db", device])
    let line = text.stdout.split(separator: "\n").first { $0.hasPrefix("pending ") }
    #expect(line?.hasSuffix(" \(pending) message(s)") == true, "\(text.stdout)")

    // After a converged run, every device's cloud holds all of its outbox.
    let run = directory.appendingPathComponent("run")
    #expect(try CLIRunner.run(["simulate", "--seed", "3", "--devices", "2", "--events-per-device", "20", "--out", run.path]).status == 0)
    // The cloud's stats show each device's position, and it is the one the device was acknowledged.
    let cloud = try CLIRunner.json(["journal", "stats", "--run", run.path, "--json"])
    var held: [String: String] = [:]
    for case .object(let position) in cloud["devicePositions"]?.array ?? [] {
        guard case .string(let device)? = position["device"], case .array(let epochs)? = position["epochs"],
              case .object(let last)? = epochs.last, case .integer(let epoch)? = last["epoch"],
              case .integer(let through)? = last["through"] else { continue }
        held[device] = "\(epoch):\(through)"
    }
    for number in ["0", "1"] {
        let stats = try CLIRunner.json(["journal", "stats", "--run", run.path, "--device", number, "--json"])
        guard case .object(let cursor)? = stats["sync"], case .string(let device)? = stats["device"] else {
            Issue.record("device \(number) has no sync cursor")
            continue
        }
        #expect(cursor["pending"] == .integer(0) && cursor["acknowledged"] == cursor["outboxHead"], "device \(number): \(cursor)")
        #expect(held[device].map { JSONValue.string($0) } == cursor["acknowledged"], "device \(number): \(held)")
    }
}
