import Crypto
@testable import DeviceStore
import Foundation
import GRDB
import IndexModel
import Snapshot
import SyncWire
import Testing

private let recipe = "https://www.yummly.com/recipe/BPC-983195"

/// A file store with items, a public activity engaged twice, and a batch.
private func filledStore(at path: String, clock: ManualClock = ManualClock(testStart)) throws -> DeviceStore {
    try filledStore(.file(path), clock: clock)
}

/// A store at `location` with items, a public activity engaged twice, and a batch.
private func filledStore(_ location: StoreLocation, clock: ManualClock = ManualClock(testStart)) throws -> DeviceStore {
    let store = try DeviceStore(at: location, options: StoreOptions(clock: clock, random: SeededRandom(seed: 7)))
    try store.index(named: "photos").indexSearchableItems([item("1", title: "Sunrise"), item("2", title: "Sunset")])
    try store.record(UserActivity(activityType: "com.yummly/browseRecipe", title: "Baked Potato Chips", webpageURL: recipe,
                                  eligibleForSearch: true, eligibleForPublicIndexing: true))
    try store.recordEngaged(ref: recipe)
    try store.recordEngaged(ref: recipe)
    try store.perform(.batch(IndexBatch(index: "photos", operations: [.delete(index: "photos", identifiers: ["2"])],
                                        clientState: [1, 2, 3])))
    return store
}

private func bytes(_ path: String) -> Data? {
    FileManager.default.contents(atPath: path)
}

@Suite struct SnapshotTests {
    @Test func aRestoredStoreHasTheSameStateAndBeginsANewEpoch() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = try filledStore(at: directory.appendingPathComponent("device.sqlite").path)
        let snapshot = directory.appendingPathComponent("device.snap").path
        let manifest = try source.snapshot(to: snapshot)
        #expect(manifest.headSeq == Seq(7) && manifest.epoch == .first && manifest.device == source.deviceID)

        let restoredPath = directory.appendingPathComponent("restored.sqlite").path
        let report = try DeviceStore.restore(snapshot: snapshot, to: restoredPath,
                                             options: StoreOptions(clock: ManualClock(testStart.adding(milliseconds: 5_000))))
        #expect(report.newEpoch == Epoch(UInt64(testStart.adding(milliseconds: 5_000).millisecondsSince1970)),
                "a restored store's epoch is the restore time")
        #expect(report.head == Seq(10) && report.replacedStoreKeptAt == nil)
        let restored = try DeviceStore(at: .file(restoredPath), options: StoreOptions(clock: ManualClock(testStart)))
        #expect(restored.deviceID == source.deviceID)
        #expect(try restored.identifiers(in: "photos") == ["1"])
        #expect(try restored.index(named: "photos").fetchLastClientState() == [1, 2, 3])
        let last = try #require(try restored.records(Seq(8)...Seq(8)).first)
        #expect(last.epoch == report.newEpoch)
        guard case .storeRestored(let restore) = try last.event() else {
            Issue.record("the last event is not storeRestored")
            return
        }
        #expect(restore.previousEpoch == .first && restore.snapshotHead == Seq(7) && restore.truncatedTo == nil)
        let sourceHead = try #require(try source.outboxEntries().last?.position)
        #expect(try restored.records(Seq(9)...Seq(9)).first?.event() == .cloudReindexAsked(epoch: sourceHead.epoch, seq: sourceHead.seq),
                "the restore asks the cloud about votes after the last message its journal implies")
        #expect(try restored.pendingReindexRequests() == [ReindexRequest(seq: Seq(10), index: "photos", identifiers: nil)],
                "the app is asked to index again every index it knows")
        #expect(try restored.verifyJournal().isValid)
        #expect(try restored.projectionDigest() == restored.rebuiltProjectionDigest())
        let entries = try restored.outboxEntries()
        #expect(try Array(entries.dropLast()) == source.outboxEntries(), "unacknowledged messages keep their positions")
        #expect(entries.last?.position == OutboxPosition(epoch: report.newEpoch, seq: .first)
                && entries.last?.message == .reindexAsk(after: sourceHead),
                "the new epoch begins with the restore's reindex ask")
        try restored.recordEngaged(ref: recipe)
        #expect(try restored.outboxEntries().last?.position == OutboxPosition(epoch: report.newEpoch, seq: OutboxSeq(2)),
                "new messages go on in the new epoch")
    }

    @Test(arguments: [false, true])
    func anInMemoryStoresSnapshotRestoresToItsState(sealed: Bool) throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = try filledStore(.memory)
        let snapshot = directory.appendingPathComponent("device.snap").path
        let key = sealed ? SymmetricKey(size: .bits256) : nil
        let manifest = try source.snapshot(to: snapshot, key: key)
        #expect(manifest.headSeq == Seq(7) && manifest.device == source.deviceID && manifest.encrypted == sealed)
        #expect(try DeviceStore.readManifest(snapshot) == manifest, "the manifest returned is the one written")
        #expect(try source.purge(dryRun: true).backedUpThrough == Seq(7), "the store knows a backup holds its journal")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["device.snap"],
                "nothing is left beside the snapshot")

        let restoredPath = directory.appendingPathComponent("restored.sqlite").path
        let report = try DeviceStore.restore(snapshot: snapshot, to: restoredPath, key: key,
                                             options: StoreOptions(clock: ManualClock(testStart.adding(milliseconds: 5_000))))
        #expect(report.head == Seq(10))
        let restored = try DeviceStore(at: .file(restoredPath), options: StoreOptions(clock: ManualClock(testStart)))
        #expect(restored.deviceID == source.deviceID)
        #expect(try restored.identifiers(in: "photos") == ["1"])
        #expect(try restored.index(named: "photos").fetchLastClientState() == [1, 2, 3])
        #expect(try restored.records(Seq(1)...Seq(7)) == source.records(Seq(1)...Seq(7)))
        #expect(try restored.verifyJournal().isValid)
        #expect(try restored.projectionDigest() == restored.rebuiltProjectionDigest())
        #expect(try Array(restored.outboxEntries().dropLast()) == source.outboxEntries())
    }

    @Test func anEncryptedSnapshotNeedsItsKey() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = try filledStore(at: directory.appendingPathComponent("device.sqlite").path)
        let snapshot = directory.appendingPathComponent("device.snap").path
        let key = SymmetricKey(size: .bits256)
        #expect(try source.snapshot(to: snapshot, key: key).encrypted)
        let target = directory.appendingPathComponent("restored.sqlite").path
        let missing = try #require(throws: DeviceStoreError.self) { try DeviceStore.restore(snapshot: snapshot, to: target) }
        // The library says what is missing; the command line names the flag that gives it.
        #expect(missing.code == .keyRequired && missing.message.contains("encrypted") && !missing.message.contains("--"), "\(missing)")
        let wrong = try #require(throws: DeviceStoreError.self) {
            try DeviceStore.restore(snapshot: snapshot, to: target, key: SymmetricKey(size: .bits256))
        }
        #expect(wrong.message.contains("key is wrong"))
        #expect(!FileManager.default.fileExists(atPath: target))
        #expect(try DeviceStore.restore(snapshot: snapshot, to: target, key: key).newEpoch > .first)
        let raw = try #require(bytes(snapshot))
        #expect(!raw.contains(Data("Sunrise".utf8)), "the content is sealed")
    }

    @Test func restoringOverAStoreNeedsForceAndKeepsTheOldOneBeside() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("device.sqlite").path
        let source = try filledStore(at: path)
        let snapshot = directory.appendingPathComponent("device.snap").path
        try source.snapshot(to: snapshot)
        try source.index(named: "photos").indexSearchableItems([item("3", title: "After the snapshot")])
        let before = try #require(bytes(path))
        let refused = try #require(throws: DeviceStoreError.self) { try DeviceStore.restore(snapshot: snapshot, to: path) }
        #expect(refused.code == .destinationExists && refused.message.contains("forced") && !refused.message.contains("--"), "\(refused)")
        #expect(bytes(path) == before)
        let report = try DeviceStore.restore(snapshot: snapshot, to: path, force: true)
        let kept = try #require(report.replacedStoreKeptAt)
        #expect(FileManager.default.fileExists(atPath: kept))
        let restored = try DeviceStore(at: .file(path), options: StoreOptions(readOnly: true))
        #expect(try restored.identifiers(in: "photos") == ["1"], "the item indexed after the snapshot is gone")
        let old = try DeviceStore(at: .file(kept), options: StoreOptions(readOnly: true))
        #expect(try old.identifiers(in: "photos") == ["1", "3"])
    }

    @Test func restoringTwiceFromBackupsOfTheSameEpochBeginsTwoDifferentEpochs() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = ManualClock(testStart)
        let path = directory.appendingPathComponent("device.sqlite").path
        let source = try filledStore(at: path, clock: clock)
        let older = directory.appendingPathComponent("older.snap").path
        let newer = directory.appendingPathComponent("newer.snap").path
        try source.snapshot(to: older)
        try source.index(named: "photos").indexSearchableItems([item("3", title: "Between the backups")])
        try source.snapshot(to: newer)
        clock.advance(byMilliseconds: 60_000)
        let first = try DeviceStore.restore(snapshot: newer, to: path, force: true, options: StoreOptions(clock: clock))
        clock.advance(byMilliseconds: 60_000)
        let second = try DeviceStore.restore(snapshot: older, to: path, force: true, options: StoreOptions(clock: clock))
        #expect(first.newEpoch > .first && second.newEpoch > first.newEpoch,
                "a second restore from the same epoch's backups must not reuse the first one's positions")
    }

    @Test func toSeqRestoresAnEarlierPointOfTheJournal() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = try filledStore(at: directory.appendingPathComponent("device.sqlite").path)
        let snapshot = directory.appendingPathComponent("device.snap").path
        try source.snapshot(to: snapshot)
        let target = directory.appendingPathComponent("restored.sqlite").path
        let report = try DeviceStore.restore(snapshot: snapshot, to: target, toSeq: Seq(2))
        #expect(report.head == Seq(5))
        let restored = try DeviceStore(at: .file(target), options: StoreOptions(readOnly: true))
        #expect(try restored.identifiers(in: "photos") == ["1", "2"], "the deletion at seq 7 is undone")
        #expect(try restored.index(named: "photos").fetchLastClientState() == nil)
        #expect(try restored.verifyJournal().isValid)
        #expect(try restored.projectionDigest() == restored.rebuiltProjectionDigest())
        #expect(throws: DeviceStoreError.self) { try DeviceStore.restore(snapshot: snapshot, to: target + "2", toSeq: Seq(99)) }
    }

    /// A store whose calls happen a minute apart: at +0 a batch of three
    /// items (one call, seqs 1-3), at +1 min one item, at +2 min a batch that
    /// deletes one and indexes another.
    private func minuteApartStore(at path: String) throws -> DeviceStore {
        let clock = ManualClock(testStart)
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: clock, random: SeededRandom(seed: 9)))
        try store.perform(.batch(IndexBatch(index: "notes", operations: [
            .index(index: "notes", items: [item("a", title: "A"), item("b", title: "B"), item("c", title: "C")]),
        ], clientState: [1])))
        clock.advance(byMilliseconds: 60_000)
        try store.index(named: "notes").indexSearchableItems([item("d", title: "D")])
        clock.advance(byMilliseconds: 60_000)
        try store.perform(.batch(IndexBatch(index: "notes", operations: [
            .delete(index: "notes", identifiers: ["a"]), .index(index: "notes", items: [item("e", title: "E")]),
        ], clientState: [3])))
        return store
    }

    @Test func toTimeRestoresTheStoreAsItWasAtAnInstantOnACallBoundary() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = try minuteApartStore(at: directory.appendingPathComponent("device.sqlite").path)
        let snapshot = directory.appendingPathComponent("device.snap").path
        try source.snapshot(to: snapshot)
        func restored(at offset: Int64, _ name: String) throws -> (DeviceStore, RestoreReport) {
            let target = directory.appendingPathComponent(name).path
            let report = try DeviceStore.restore(snapshot: snapshot, to: target, toTime: testStart.adding(milliseconds: offset))
            let store = try DeviceStore(at: .file(target), options: StoreOptions(readOnly: true))
            #expect(try store.verifyJournal().isValid)
            #expect(try store.projectionDigest() == store.rebuiltProjectionDigest())
            return (store, report)
        }
        // Exactly at the first batch's instant: the whole batch, nothing after.
        let (atStart, startReport) = try restored(at: 0, "start.sqlite")
        #expect(try atStart.identifiers(in: "notes") == ["a", "b", "c"])
        #expect(try atStart.index(named: "notes").fetchLastClientState() == [1])
        #expect(startReport.restoredThrough != nil)
        // Between the second call and the last batch: four items, the batch not begun.
        let (between, _) = try restored(at: 119_999, "between.sqlite")
        #expect(try between.identifiers(in: "notes") == ["a", "b", "c", "d"])
        #expect(try between.index(named: "notes").fetchLastClientState() == [1])
        // At the last batch's instant: all of it, its deletion and its client state together.
        let (end, endReport) = try restored(at: 120_000, "end.sqlite")
        #expect(try end.identifiers(in: "notes") == ["b", "c", "d", "e"])
        #expect(try end.index(named: "notes").fetchLastClientState() == [3])
        #expect(endReport.restoredThrough == endReport.manifest.headSeq)
        let startThrough = try #require(startReport.restoredThrough)
        #expect(startThrough < endReport.manifest.headSeq)
        // Before anything happened there is nothing to restore, and the target is not made.
        #expect(throws: DeviceStoreError.self) {
            try DeviceStore.restore(snapshot: snapshot, to: directory.appendingPathComponent("before.sqlite").path,
                                    toTime: testStart.adding(milliseconds: -1))
        }
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("before.sqlite").path))
        #expect(throws: DeviceStoreError.self) {
            try DeviceStore.restore(snapshot: snapshot, to: directory.appendingPathComponent("both.sqlite").path, toSeq: Seq(1),
                                    toTime: testStart)
        }
    }

    /// A call's events share one instant; were a journal to hold a call whose
    /// events straddle the instant, the cut still keeps or drops it whole.
    @Test func aCutAtAnInstantInsideACallGoesBackToTheCallsStart() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("device.sqlite").path
        _ = try minuteApartStore(at: path)
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            // Spread the first batch's events (one call, from seq 1) a second apart.
            let first = "call = (SELECT call FROM event_journal WHERE seq = 1)"
            try db.execute(sql: "UPDATE event_journal SET time = time + (seq - 1) * 1000 WHERE \(first)")
            let events = try #require(try Int.fetchOne(db, sql: "SELECT count(*) FROM event_journal WHERE \(first)"))
            #expect(events >= 3)
            let inside = try DeviceStore.cut(db, at: testStart.adding(milliseconds: 1_500))
            #expect(inside == nil, "the first call straddles the instant and nothing before it is whole")
            let afterIt = try DeviceStore.cut(db, at: testStart.adding(milliseconds: Int64(events - 1) * 1000))
            #expect(afterIt == Seq(UInt64(events)))
        }
    }

    /// Every kind of bad snapshot is refused with a clear error, and the store
    /// it would have replaced is left byte for byte as it was.
    @Test func aBadSnapshotIsRefusedAndTheStoreIsUntouched() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("device.sqlite").path
        let source = try filledStore(at: path)
        let snapshot = directory.appendingPathComponent("device.snap").path
        try source.snapshot(to: snapshot)
        let good = try #require(bytes(snapshot))
        let before = try #require(bytes(path))

        func variant(_ name: String, _ change: (inout [UInt8]) -> Void) throws -> String {
            var raw = [UInt8](good)
            change(&raw)
            let file = directory.appendingPathComponent(name).path
            try Data(raw).write(to: URL(fileURLWithPath: file))
            return file
        }
        let headSeqField = Array(#""headSeq": 7"#.utf8)
        let headSeqAt = try #require([UInt8](good).indices.last { index in
            index + headSeqField.count <= good.count && Array(good[index..<index + headSeqField.count]) == headSeqField
        })
        let cases: [(String, String)] = [
            (try variant("truncated.snap") { $0.removeLast(100) }, "cut short"),
            (try variant("cut-chunk.snap") { $0.removeSubrange(20..<60) }, ""),
            (try variant("flipped.snap") { $0[40] ^= 0x01 }, ""),
            (try variant("version.snap") { $0[7] = 9 }, "version 9"),
            (try variant("foreign.snap") { $0[0] = UInt8(ascii: "X") }, "not a Sightline snapshot"),
            (try variant("empty.snap") { $0.removeAll() }, "too short"),
            (try variant("manifest.snap") { raw in
                // Claim another head seq: the content no longer matches the manifest.
                raw[headSeqAt + headSeqField.count - 1] = UInt8(ascii: "6")
            }, "does not match its manifest"),
        ]
        for (file, expected) in cases {
            let error = try #require(throws: DeviceStoreError.self, "\(file)") {
                try DeviceStore.restore(snapshot: file, to: path, force: true)
            }
            #expect(error.code == .snapshot)
            if !expected.isEmpty { #expect(error.message.contains(expected), "\(file): \(error.message)") }
            #expect(bytes(path) == before, "\(file) changed the store")
        }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.contains(".restoring-") || $0.contains(".replaced-") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }
}

extension SnapshotTests {
    /// A snapshot is only as good as the store it was taken of: a store whose
    /// projections or journal were altered behind its back snapshots fine, but
    /// its restore is refused, and the store it would have replaced is left as
    /// it was. This guards the checks inside the restore (chain, manifest,
    /// projections against a replay), whatever makes them fast.
    @Test func aSnapshotOfAnAlteredStoreIsRefused() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("target.sqlite").path
        _ = try filledStore(at: target)
        let before = try #require(bytes(target))
        let cases: [(name: String, alteration: String, expected: String)] = [
            ("engagement", "UPDATE engagement SET engaged = engaged + 1", "projections differ from a rebuild"),
            ("item", "UPDATE items SET title = 'Moonrise' WHERE item_id = '1'", "projections differ from a rebuild"),
            ("extra-item", """
                INSERT INTO items (item_id, index_name, attributes, changed_seq) VALUES ('9', 'photos', x'00', 1)
                """, "projections differ from a rebuild"),
            ("client-state", "DELETE FROM client_states", "projections differ from a rebuild"),
            ("outbox", "DELETE FROM outbox WHERE seq = (SELECT max(seq) FROM outbox)", "projections differ from a rebuild"),
            ("vote", "DELETE FROM public_votes", "projections differ from a rebuild"),
            ("payload", "UPDATE event_journal SET payload = payload || x'00' WHERE seq = 3", "does not verify"),
            ("missing-row", "DELETE FROM event_journal WHERE seq = 4", "does not verify"),
            // The manifest is read from the altered store, so it agrees with the shorter journal; the projections do not.
            ("last-row", "DELETE FROM event_journal WHERE seq = 7", "projections differ from a rebuild"),
        ]
        for (name, alteration, expected) in cases {
            let path = directory.appendingPathComponent("\(name).sqlite").path
            let snapshot = directory.appendingPathComponent("\(name).snap").path
            _ = try filledStore(at: path)
            // The manifest is written from the altered store, so only the content checks can tell.
            try DatabaseQueue(path: path).write { db in try db.execute(sql: alteration) }
            try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart))).snapshot(to: snapshot)
            let error = try #require(throws: DeviceStoreError.self, "\(name)") {
                try DeviceStore.restore(snapshot: snapshot, to: target, force: true)
            }
            #expect(error.code == .snapshot)
            #expect(error.message.contains(expected), "\(name): \(error.message)")
            #expect(bytes(target) == before, "\(name) changed the store")
        }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.contains(".restoring-") || $0.contains(".replaced-") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }
}

@Suite struct ReindexTests {
    /// The app of the test: it knows every item it ever indexed.
    final class App: ReindexDelegate {
        var items: [String: [SearchableItem]] = [:]
        var calls: [String] = []

        func reindexAll(index: String, in store: DeviceStore) throws {
            calls.append("all \(index)")
            try store.index(named: index).indexSearchableItems(items[index] ?? [])
        }

        func reindexItems(index: String, identifiers: [String], in store: DeviceStore) throws {
            calls.append("items \(index) \(identifiers)")
            try store.index(named: index).indexSearchableItems((items[index] ?? []).filter { identifiers.contains($0.uniqueIdentifier) })
        }
    }

    @Test func afterARestoreTheAppIsAskedToIndexAgainAndItsAcknowledgementIsJournaled() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("device.sqlite").path
        let snapshot = directory.appendingPathComponent("device.snap").path
        let app = App()
        app.items["photos"] = [item("1", title: "Sunrise"), item("2", title: "Sunset")]
        do {
            let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
            try store.index(named: "photos").indexSearchableItems([app.items["photos"]![0]])
            try store.snapshot(to: snapshot)
            try store.index(named: "photos").indexSearchableItems([app.items["photos"]![1]])
        }
        _ = try DeviceStore.restore(snapshot: snapshot, to: path, force: true)
        let restored = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
        #expect(try restored.identifiers(in: "photos") == ["1"], "the snapshot predates item 2")
        #expect(try restored.processReindexRequests(with: app) == 1)
        #expect(app.calls == ["all photos"])
        #expect(try restored.identifiers(in: "photos") == ["1", "2"], "the app brought back what the snapshot lacked")
        #expect(try restored.pendingReindexRequests().isEmpty)
        #expect(try restored.processReindexRequests(with: app) == 0)
        let request = try restored.requestReindex(index: "photos", identifiers: ["2"])
        #expect(try restored.processReindexRequests(with: app) == 1)
        #expect(app.calls.last == "items photos [\"2\"]")
        let acknowledgement = try #require(try restored.records(request.next...request.next.next).last)
        #expect(try acknowledgement.event() == .reindexAcknowledged(index: "photos", request: request.rawValue))
        #expect(try restored.projectionDigest() == restored.rebuiltProjectionDigest())
    }
}

/// `snapshot` with its database changed by `edit`, as someone who can write
/// the backup location could change a plaintext snapshot.
func tampered(_ snapshot: String, in directory: URL, _ edit: (Database) throws -> Void) throws -> String {
    let database = directory.appendingPathComponent("tampered-\(UUID().uuidString).sqlite").path
    let manifest = try SnapshotFile.extract(snapshot, to: database, key: nil)
    try DatabaseQueue(path: database).writeWithoutTransaction { db in try edit(db) }
    let changed = database + ".snap"
    try SnapshotFile.write(source: database, destination: changed, manifest: manifest, key: nil)
    return changed
}

@Suite struct RestoredSchemaTests {
    /// A trigger on the journal, a view, an extra table or index, a table
    /// with a clause this build never writes: a restore refuses them before
    /// it opens the file, and nothing appears at the target.
    @Test(arguments: [
        "CREATE TRIGGER poison AFTER INSERT ON event_journal BEGIN DELETE FROM outbox; END",
        "CREATE VIEW keys AS SELECT value FROM sync_state",
        "CREATE TABLE extra (x)",
        "CREATE INDEX extra_index ON items (title)",
        """
        ALTER TABLE reindex_requests RENAME TO old_requests;
        CREATE TABLE reindex_requests AS SELECT * FROM old_requests;
        DROP TABLE old_requests
        """,
    ])
    func aSnapshotWithSchemaThisBuildDidNotMakeIsRefused(edit: String) throws {
        let directory = try temporaryDirectory()
        let store = try filledStore(at: directory.appendingPathComponent("device.sqlite").path)
        let snapshot = directory.appendingPathComponent("device.snap").path
        try store.snapshot(to: snapshot)
        let bad = try tampered(snapshot, in: directory) { db in try db.execute(sql: edit) }
        let target = directory.appendingPathComponent("restored.sqlite").path
        let error = try #require(throws: DeviceStoreError.self) { try DeviceStore.restore(snapshot: bad, to: target) }
        #expect(error.code == .snapshot && error.message.hasSuffix("refused"), "\(error)")
        #expect(!FileManager.default.fileExists(atPath: target))
        #expect(try DeviceStore.restore(snapshot: snapshot, to: target).newEpoch > .first, "the snapshot as made restores")
    }

    /// The sync state is not a projection, so no rebuild checks it: a
    /// position past the limit or a short device key is refused by name.
    @Test(arguments: [
        ("INSERT OR REPLACE INTO sync_state (key, value) VALUES ('acknowledged_seq', -1)", "acknowledged_seq"),
        ("INSERT OR REPLACE INTO sync_state (key, value) VALUES ('device_key', x'0102')", "device_key"),
        ("INSERT OR REPLACE INTO sync_state (key, value) VALUES ('durable_epoch', 1.5)", "durable_epoch"),
        ("UPDATE store_meta SET value = 0 WHERE key = 'epoch'", "epoch"),
    ])
    func aSnapshotWithAnImpossibleSyncStateIsRefused(edit: String, named: String) throws {
        let directory = try temporaryDirectory()
        let store = try filledStore(at: directory.appendingPathComponent("device.sqlite").path)
        try store.setDeviceKey([UInt8](repeating: 4, count: 32))
        let snapshot = directory.appendingPathComponent("device.snap").path
        try store.snapshot(to: snapshot)
        let bad = try tampered(snapshot, in: directory) { db in try db.execute(sql: edit) }
        let target = directory.appendingPathComponent("restored.sqlite").path
        let error = try #require(throws: DeviceStoreError.self) { try DeviceStore.restore(snapshot: bad, to: target) }
        #expect(error.code == .snapshot && error.message.contains(named) && error.message.hasSuffix("refused"), "\(error)")
        #expect(!FileManager.default.fileExists(atPath: target))
    }

    /// The search index is derived: one of another layout (an older build's:
    /// a table defined otherwise, or one this build no longer makes) is
    /// dropped by the restore and built again by the next search.
    @Test(arguments: [
        "DROP TABLE search_terms; CREATE TABLE search_terms (term TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID",
        """
        DROP TABLE search_runs;
        CREATE TABLE search_postings (term TEXT NOT NULL, rank REAL NOT NULL, doc INTEGER NOT NULL,
        PRIMARY KEY (term, rank, doc)) WITHOUT ROWID;
        UPDATE search_meta SET value = 4 WHERE key = 'layout';
        """,
    ])
    func aSearchIndexOfAnotherLayoutIsDroppedAndBuiltAgain(olderLayout: String) throws {
        let directory = try temporaryDirectory()
        let store = try filledStore(at: directory.appendingPathComponent("device.sqlite").path)
        #expect(try store.resultTitles("sunrise") == ["Sunrise"])
        let snapshot = directory.appendingPathComponent("device.snap").path
        try store.snapshot(to: snapshot)
        let older = try tampered(snapshot, in: directory) { db in try db.execute(sql: olderLayout) }
        let target = directory.appendingPathComponent("restored.sqlite").path
        _ = try DeviceStore.restore(snapshot: older, to: target)
        let restored = try DeviceStore(at: .file(target))
        #expect(try restored.resultTitles("sunrise") == ["Sunrise"])
        #expect(try restored.verifyJournal().isValid)
        #expect(try restored.read { try $0.tableExists("search_postings") } == false)
    }
}
