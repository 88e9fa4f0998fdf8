import CloudCore
import CloudSQLite
import Crypto
import DeviceStore
import Foundation
import GRDB
import IndexModel
import IndexQuery
import ScratchDirectory
import Snapshot
import SyncWire
import Testing

@Suite struct CloudRestoreTests {
    /// A transport straight into whichever cloud the test holds now.
    final class Switchboard: Transport, @unchecked Sendable {
        var cloud: CloudIndex
        init(_ cloud: CloudIndex) { self.cloud = cloud }
        func exchange(_ frame: [UInt8]) async throws(TransportError) -> [UInt8] { cloud.ingest(frame).reply }
    }

    /// A cloud store file at `path` (K = 2) and three devices enrolled with
    /// it, which sync into whichever cloud the switchboard holds.
    private func fleet(at path: String, clock: ManualClock) throws -> (Switchboard, [DeviceStore]) {
        let cloud = try CloudIndex(at: .file(path), options: CloudOptions(clock: clock, random: SeededRandom(seed: 3), threshold: 2))
        try cloud.registerApp(app, enrolmentSecret: enrolmentSecret)
        let stores = try (1...3).map { (seed: UInt64) in
            let store = try DeviceStore(at: .memory, options: StoreOptions(clock: clock, random: SeededRandom(seed: seed)))
            try store.setDeviceKey(cloud.enrol(app: app, device: store.deviceID, enrolmentSecret: enrolmentSecret))
            return store
        }
        return (Switchboard(cloud), stores)
    }

    /// Two sync runs of every store (content asked for in one is answered in the next).
    private func sync(_ stores: [DeviceStore], through switchboard: Switchboard) async throws {
        for _ in 0..<2 {
            for store in stores {
                let report = try await SyncClient(store: store, transport: switchboard, sleep: { _ in }).run()
                #expect(report.failure == nil, "\(report.failure ?? "")")
            }
        }
    }

    /// One sync run of every store, each without a failure; returns how many
    /// messages the stores made again from their journals.
    private func syncOnce(_ stores: [DeviceStore], through switchboard: Switchboard) async throws -> Int {
        var recovered = 0
        for store in stores {
            let report = try await SyncClient(store: store, transport: switchboard, sleep: { _ in }).run()
            #expect(report.failure == nil, "\(report.failure ?? "")")
            recovered += report.messagesRecovered
        }
        return recovered
    }

    /// Devices sync, the cloud is snapshotted, devices go on and sync, the cloud
    /// is lost and restored from the snapshot: the devices, which kept every
    /// message the snapshot lacked, send it again and every count converges to
    /// exactly what it was.
    @Test func afterACloudRestoreDevicesResendAndTheCountsConverge() async throws {
        let directory = try temporaryDirectory("sightline-cloud-restore")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("cloud.sqlite").path
        let snapshot = directory.appendingPathComponent("cloud.snap").path
        let clock = ManualClock(harnessStart)
        let (switchboard, stores) = try fleet(at: path, clock: clock)
        var cloud: CloudIndex? = switchboard.cloud
        func syncAll() async throws { try await sync(stores, through: switchboard) }
        try vote(stores)
        try await syncAll()
        try cloud!.snapshot(to: snapshot)
        // After the snapshot: more engagement, and the next ack tells devices
        // what the snapshot holds, so they keep everything after it.
        for store in stores {
            try store.recordShown(ref: recipeURL)
            try store.recordEngaged(ref: recipeURL)
        }
        try stores[2].perform(.deleteActivities(identifiers: ["r1"]))
        try await syncAll()
        let before = try #require(try cloud!.entry(app: app, hash: recipeHash()))
        #expect(before.popularity.engaged == 6 && before.liveVotes == 2)
        let digest = try cloud!.projectionDigest()

        cloud = nil  // the cloud is lost
        let restored = try CloudIndex.restore(snapshot: snapshot, to: path, force: true,
                                              options: CloudOptions(clock: clock, random: SeededRandom(seed: 3)))
        #expect(restored.devices == 3)
        let back = try CloudIndex(at: .file(path), options: CloudOptions(clock: clock, random: SeededRandom(seed: 3)))
        #expect(try back.entry(app: app, hash: recipeHash())?.popularity.engaged == 3, "the snapshot predates the second round")
        switchboard.cloud = back
        try await syncAll()
        let after = try #require(try back.entry(app: app, hash: recipeHash()))
        #expect(after.popularity == before.popularity && after.liveVotes == before.liveVotes && after.voters == before.voters)
        #expect(try back.projectionDigest() == digest, "the restored cloud converged to exactly the state it lost")
    }

    /// A snapshot written from its copy elsewhere (the simulator writes it on
    /// another thread) is the cloud's backup only once recorded: until then
    /// acks tell devices nothing is backed up, so they keep every message.
    @Test func aCloudSnapshotCountsAsTheBackupOnlyOnceRecorded() async throws {
        let directory = try temporaryDirectory("sightline-cloud-snapshot-steps")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("cloud.sqlite").path
        let snapshot = directory.appendingPathComponent("cloud.snap").path
        let clock = ManualClock(harnessStart)
        let (switchboard, stores) = try fleet(at: path, clock: clock)
        let cloud = switchboard.cloud
        try vote(stores)
        try await sync(stores, through: switchboard)
        let copy = try cloud.copyForSnapshot(to: snapshot)
        try copy.write(workers: 1)
        #expect(FileManager.default.fileExists(atPath: snapshot))
        for store in stores { try store.recordShown(ref: recipeURL) }
        try await sync(stores, through: switchboard)
        for store in stores {
            #expect(try store.syncStatus().durable == .start, "written but not recorded: nothing may be dropped")
        }
        let manifest = try cloud.recordSnapshot(copy)
        #expect(manifest.devices == 3)
        for store in stores { try store.recordEngaged(ref: recipeURL) }
        try await sync(stores, through: switchboard)
        for store in stores {
            let status = try store.syncStatus()
            #expect(status.durable > .start && status.durable < status.acknowledged,
                    "backed up through what the copy held, not the messages sent after it")
        }
    }

    /// A device, restored, begins a new epoch while its previous epoch's tail
    /// is only in a cloud that is then restored from a snapshot lacking it.
    /// The new epoch's first frame names where the previous one ended, so the
    /// cloud asks for the tail first instead of ending that epoch short.
    @Test func aNewEpochDoesNotEndThePreviousOneShortAtARestoredCloud() throws {
        let directory = try temporaryDirectory("sightline-follows")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cloudPath = directory.appendingPathComponent("cloud.sqlite").path
        let cloudSnapshot = directory.appendingPathComponent("cloud.snap").path
        let devicePath = directory.appendingPathComponent("device.sqlite").path
        let deviceSnapshot = directory.appendingPathComponent("device.snap").path
        let clock = ManualClock(harnessStart)
        let options = CloudOptions(clock: clock, random: SeededRandom(seed: 3), threshold: 1)
        var cloud = try CloudIndex(at: .file(cloudPath), options: options)
        try cloud.registerApp(app, enrolmentSecret: enrolmentSecret)
        func sync(_ store: DeviceStore) throws -> [IngestResult] { try syncSession(store, with: cloud, clock: clock) }
        do {
            let store = try DeviceStore(at: .file(devicePath), options: StoreOptions(clock: clock, random: SeededRandom(seed: 8)))
            try store.setDeviceKey(cloud.enrol(app: app, device: store.deviceID, enrolmentSecret: enrolmentSecret))
            try vote([store])
            _ = try sync(store)
            try cloud.snapshot(to: cloudSnapshot)
            try store.recordEngaged(ref: recipeURL)
            try store.recordEngaged(ref: recipeURL)
            _ = try sync(store)   // acknowledged, but only in the cloud's next snapshot
            try store.snapshot(to: deviceSnapshot)
        }
        clock.advance(byMilliseconds: 60_000)
        let restore = try DeviceStore.restore(snapshot: deviceSnapshot, to: devicePath, force: true, options: StoreOptions(clock: clock))
        if let kept = restore.replacedStoreKeptAt { try FileManager.default.removeItem(atPath: kept) }
        let device = try DeviceStore(at: .file(devicePath), options: StoreOptions(clock: clock))
        try device.recordEngaged(ref: recipeURL)
        let engagedBefore = try #require(try cloud.entry(app: app, hash: recipeHash())).popularity.engaged

        cloud = try CloudIndex(at: .memory, options: options)  // the file's connection closes with the old index
        _ = try CloudIndex.restore(snapshot: cloudSnapshot, to: cloudPath, force: true, options: options)
        cloud = try CloudIndex(at: .file(cloudPath), options: options)
        let results = try sync(device)
        guard case .rejected(let gap) = results.first?.outcome else {
            Issue.record("the new epoch's first frame was taken by a cloud lacking the end of the previous epoch: \(results.map(\.outcome))")
            return
        }
        #expect(gap.code == .gap && gap.message.contains("only through"), "\(gap)")
        #expect(results.last?.outcome == .accepted(messages: 2), "the restore's reindex ask and the engagement")
        let entry = try #require(try cloud.entry(app: app, hash: recipeHash()))
        #expect(entry.popularity.engaged == engagedBefore + 1, "the old epoch's tail came back and the new epoch went on from it")
        #expect(try device.syncStatus().pending == 0)
    }

    /// Snapshot A, more engagement, snapshot B, more engagement, then the
    /// cloud is lost and restored from A, the older one: it holds exactly what
    /// A held, not B's nor the latest state. The devices send again everything
    /// after A, and the counts converge to what they were before the loss: A's
    /// counts plus all that happened since A. B's acks had moved each device's
    /// backed-up watermark to what B holds, so the devices had dropped the
    /// messages between A and B: they make them again from their journals
    /// (`DeviceStore.recoverDroppedMessages`).
    @Test func restoringACloudSnapshotOlderThanTheLatestHoldsWhatItHeldAndDevicesResendTheRest() async throws {
        let directory = try temporaryDirectory("sightline-cloud-older")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("cloud.sqlite").path
        let older = directory.appendingPathComponent("a.snap").path
        let newer = directory.appendingPathComponent("b.snap").path
        let clock = ManualClock(harnessStart)
        let (switchboard, stores) = try fleet(at: path, clock: clock)
        var cloud: CloudIndex? = switchboard.cloud
        func syncAll() async throws { try await sync(stores, through: switchboard) }
        func engageAll() throws {
            for store in stores {
                try store.recordShown(ref: recipeURL)
                try store.recordEngaged(ref: recipeURL)
            }
        }
        try vote(stores)
        try await syncAll()
        let heldAtA = try #require(try cloud!.entry(app: app, hash: recipeHash()))
        let digestAtA = try cloud!.projectionDigest()
        let logRowsAtA = try cloud!.stats().logRows
        try cloud!.snapshot(to: older)
        try engageAll()
        try await syncAll()
        try cloud!.snapshot(to: newer)
        try engageAll()
        try stores[2].perform(.deleteActivities(identifiers: ["r1"]))
        try await syncAll()
        let before = try #require(try cloud!.entry(app: app, hash: recipeHash()))
        #expect(heldAtA.popularity.engaged == 3 && before.popularity.engaged == 9 && before.liveVotes == 2)
        let digestBefore = try cloud!.projectionDigest()

        cloud = nil  // the cloud is lost; only the older snapshot is used
        let manifest = try CloudIndex.restore(snapshot: older, to: path, force: true,
                                              options: CloudOptions(clock: clock, random: SeededRandom(seed: 3)))
        #expect(manifest.logRows == Int64(logRowsAtA) && manifest.devices == 3)
        let back = try CloudIndex(at: .file(path), options: CloudOptions(clock: clock, random: SeededRandom(seed: 3)))
        #expect(try back.entry(app: app, hash: recipeHash()) == heldAtA, "the restored cloud holds what A held, not B")
        #expect(try back.projectionDigest() == digestAtA)
        #expect(try back.stats().logRows == logRowsAtA)

        switchboard.cloud = back
        // The devices dropped what B held and A lacks: they make those
        // messages again from their journals.
        let recovered = try await syncOnce(stores, through: switchboard)
        #expect(recovered > 0, "the devices had dropped messages that only B held")
        try await syncAll()
        let after = try #require(try back.entry(app: app, hash: recipeHash()))
        #expect(after.popularity == before.popularity && after.liveVotes == before.liveVotes && after.voters == before.voters,
                "A's counts plus everything since A: \(after.popularity) against \(before.popularity)")
        #expect(try back.projectionDigest() == digestBefore, "the restored cloud converged to exactly the state it lost")
    }

    /// `cloud restore --to-time`: the newest snapshot, cut back to what the
    /// cloud held at an instant between two syncs, holds exactly what an
    /// older snapshot taken then would; devices resend the rest, from their
    /// journals where they dropped it, and the cloud converges.
    @Test func aRestoreCutBackToAnInstantHoldsWhatTheCloudHeldThenAndDevicesResendTheRest() async throws {
        let directory = try temporaryDirectory("sightline-cloud-cut")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("cloud.sqlite").path
        let snapshot = directory.appendingPathComponent("latest.snap").path
        let clock = ManualClock(harnessStart)
        let (switchboard, stores) = try fleet(at: path, clock: clock)
        var cloud: CloudIndex? = switchboard.cloud
        func syncAll() async throws { try await sync(stores, through: switchboard) }
        try vote(stores)
        try await syncAll()
        let heldThen = try #require(try cloud!.entry(app: app, hash: recipeHash()))
        let digestThen = try cloud!.projectionDigest()
        let rowsThen = try cloud!.stats().logRows
        let then = clock.now()
        clock.advance(byMilliseconds: 60_000)
        for store in stores {
            try store.recordShown(ref: recipeURL)
            try store.recordEngaged(ref: recipeURL)
        }
        try await syncAll()
        try cloud!.snapshot(to: snapshot)
        try await syncAll()   // the acks say the snapshot holds it all: devices drop their messages
        let digestBefore = try cloud!.projectionDigest()
        let rowsBefore = try cloud!.stats().logRows
        #expect(rowsBefore > rowsThen)

        cloud = nil
        let restored = try CloudIndex.restore(snapshot: snapshot, to: path, through: then, force: true,
                                              options: CloudOptions(clock: clock, random: SeededRandom(seed: 3)))
        let cut = try #require(restored.cut)
        #expect(cut.rowsKept == rowsThen && cut.rowsBefore == rowsBefore && restored.manifest.logRows == Int64(rowsBefore))
        let back = try CloudIndex(at: .file(path), options: CloudOptions(clock: clock, random: SeededRandom(seed: 3)))
        #expect(try back.entry(app: app, hash: recipeHash()) == heldThen, "the cut holds what the cloud held at the instant")
        #expect(try back.projectionDigest() == digestThen && back.verifyLog().isValid)
        #expect(try back.logHeads() == cut.heads)

        switchboard.cloud = back
        let recovered = try await syncOnce(stores, through: switchboard)
        #expect(recovered > 0, "the devices had dropped what only the cut-off rows held")
        try await syncAll()
        #expect(try back.projectionDigest() == digestBefore, "the restored cloud converged to the state it lost")
    }

    /// A cut falls between frames: a frame received at the instant is kept
    /// whole, one received a millisecond later goes whole, and nothing after
    /// a removed row is kept even when a clock that went back stamped it
    /// earlier.
    @Test func aCutKeepsEachAppsFramesReceivedByTheInstantAndNothingAfterALaterOne() throws {
        let clock = ManualClock(harnessStart)
        let cloud = try CloudIndex(at: .memory, options: CloudOptions(clock: clock, threshold: 2))
        try cloud.registerApp(app, enrolmentSecret: enrolmentSecret)
        let stores = try (0..<3).map { number in
            let store = try DeviceStore(at: .memory, options: StoreOptions(clock: clock, random: SeededRandom(seed: UInt64(number + 1))))
            try store.setDeviceKey(cloud.enrol(app: app, device: store.deviceID, enrolmentSecret: enrolmentSecret))
            try store.record(publicRecipe())
            try store.recordEngaged(ref: recipeURL)
            return store
        }
        func send(_ store: DeviceStore) throws {
            let frame = try #require(try store.pendingFrame(now: clock.now()))
            #expect(cloud.ingest(frame.encoded).outcome == .accepted(messages: frame.count))
        }
        try send(stores[0])
        let instant = clock.now()
        try send(stores[1])            // received at the instant: kept
        clock.advance(byMilliseconds: 1)
        try send(stores[2])            // a millisecond later: cut
        let cut = try cloud.cut(through: instant)
        #expect(cut.rowsBefore == 3 && cut.rowsRemoved == 1 && cut.heads.map(\.rows) == [2])
        #expect(try cloud.heldEpochs(app: app, device: stores[2].deviceID).isEmpty)
        #expect(try cloud.entry(app: app, hash: recipeHash())?.liveVotes == 2)
        #expect(try cloud.projectionDigest() == cloud.rebuiltProjectionDigest() && cloud.verifyLog().isValid)
        #expect(try cloud.cut(through: harnessStart.adding(milliseconds: -1)).heads.isEmpty, "before everything: nothing kept")
    }

    @Test func aBadCloudSnapshotIsRefusedAndTheStoreIsUntouched() throws {
        let directory = try temporaryDirectory("sightline-cloud-bad")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("cloud.sqlite").path
        let snapshot = directory.appendingPathComponent("cloud.snap").path
        do {
            let cloud = try CloudIndex(at: .file(path), options: CloudOptions(threshold: 2))
            try cloud.registerApp(app, enrolmentSecret: enrolmentSecret)
            try cloud.snapshot(to: snapshot)
        }
        var raw = try #require(FileManager.default.contents(atPath: snapshot))
        raw[30] ^= 0x40
        try raw.write(to: URL(fileURLWithPath: snapshot))
        let before = FileManager.default.contents(atPath: path)
        #expect(throws: CloudError.self) { try CloudIndex.restore(snapshot: snapshot, to: path, force: true) }
        #expect(FileManager.default.contents(atPath: path) == before)
        let refused = try #require(throws: CloudError.self) { try CloudIndex.restore(snapshot: snapshot, to: path) }
        #expect(refused.code == .destinationExists && !refused.message.contains("--"), "\(refused)")
    }

    /// An encrypted cloud snapshot restored without its key is `keyRequired`,
    /// and a restore over a store without `force` is `destinationExists`:
    /// each says what is wrong without naming a command-line flag (the CLI
    /// adds `--key-file` and `--force`).
    @Test func aRestoreWithoutItsKeyOrOverAStoreSaysSoByItsCode() throws {
        let directory = try ScratchDirectory.make("sightline-cloud-restore-codes")
        let path = directory.appendingPathComponent("cloud.sqlite").path
        let snapshot = directory.appendingPathComponent("cloud.slsnap").path
        let key = SymmetricKey(size: .bits256)
        do {
            let cloud = try CloudIndex(at: .file(path), options: CloudOptions(threshold: 1))
            try cloud.registerApp(app, enrolmentSecret: enrolmentSecret)
            try cloud.snapshot(to: snapshot, key: key)
        }
        let target = directory.appendingPathComponent("restored.sqlite").path
        let missing = try #require(throws: CloudError.self) { try CloudIndex.restore(snapshot: snapshot, to: target) }
        #expect(missing.code == .keyRequired && !missing.message.contains("--"), "\(missing)")
        #expect(!FileManager.default.fileExists(atPath: target))
        let over = try #require(throws: CloudError.self) { try CloudIndex.restore(snapshot: snapshot, to: path, key: key) }
        #expect(over.code == .destinationExists && !over.message.contains("--"), "\(over)")
    }

    /// A cloud store file edited to hold a value of the wrong type where a
    /// snapshot reads each device's position is refused with an error naming
    /// the column, not a trap, and no snapshot is written.
    @Test(arguments: [
        ("UPDATE device_epochs SET app = X'FF00FE'", "device_epochs.app"),
        ("UPDATE device_epochs SET epoch = 'first'", "device_epochs.epoch"),
        ("UPDATE device_epochs SET last_seq = X''", "device_epochs.last_seq"),
    ])
    func aSnapshotOfACloudStoreEditedToHoldAWrongTypeIsRefusedNamingTheColumn(edit: String, named: String) async throws {
        let directory = try temporaryDirectory("sightline-cloud-edited")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("cloud.sqlite").path
        let snapshot = directory.appendingPathComponent("cloud.snap").path
        let (switchboard, stores) = try fleet(at: path, clock: ManualClock(harnessStart))
        try vote(stores)
        try await sync(stores, through: switchboard)
        try await DatabaseQueue(path: path).write { db in try db.execute(sql: edit) }
        let refused = try #require(throws: CloudError.self) { try switchboard.cloud.snapshot(to: snapshot) }
        #expect(refused.message.contains("\(named) cannot be read"), "\(refused.code): \(refused.message)")
        #expect(!FileManager.default.fileExists(atPath: snapshot))
    }

    /// A restore in two steps (the simulator stages one while its cloud is
    /// down): staging extracts and checks the backup beside the store and
    /// leaves the store as it is; finishing puts the backup in its place. A
    /// bad backup fails to stage and leaves nothing behind.
    @Test func aStagedRestoreLeavesTheStoreAsItIsUntilFinished() throws {
        let directory = try temporaryDirectory("sightline-cloud-staged")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("cloud.sqlite").path
        let snapshot = directory.appendingPathComponent("cloud.snap").path
        let staged = path + ".staged"
        do {
            let cloud = try CloudIndex(at: .file(path), options: CloudOptions(threshold: 2))
            try cloud.registerApp(app, enrolmentSecret: enrolmentSecret)
            try cloud.snapshot(to: snapshot)
            _ = try cloud.enrol(app: app, device: DeviceID("after-the-backup"), enrolmentSecret: enrolmentSecret)
        }
        let manifest = try CloudIndex.stageRestore(snapshot: snapshot, at: staged)
        #expect(manifest.logRows == 0)
        #expect(try CloudIndex(at: .file(path)).stats().devices == 1, "staging changed the store")
        try CloudIndex.finishRestore(staged: staged, to: path)
        #expect(try CloudIndex(at: .file(path)).stats().devices == 0, "the backup is not in the store's place")
        #expect(!FileManager.default.fileExists(atPath: staged))

        var raw = try #require(FileManager.default.contents(atPath: snapshot))
        raw[raw.count - 10] ^= 0x40
        try raw.write(to: URL(fileURLWithPath: snapshot))
        #expect(throws: CloudError.self) { try CloudIndex.stageRestore(snapshot: snapshot, at: staged) }
        #expect(!FileManager.default.fileExists(atPath: staged))
    }

    /// A snapshot whose container is sound but whose store was altered before
    /// it was written: a restore checks the log's chain and the projections
    /// against a replay of the log (on threads of their own) and names what
    /// failed, and leaves nothing behind.
    @Test(arguments: [
        ("UPDATE cloud_log SET received_at = received_at + 1 WHERE seq = 1",
         "the snapshot's cloud log does not verify: app com.example.app log seq 1: stored hash does not match the row's content (row altered)"),
        ("UPDATE hashes SET views = views + 1", "the snapshot's projections differ from a replay of its cloud log"),
        ("DELETE FROM device_epochs", "the snapshot's projections differ from a replay of its cloud log"),
    ])
    func aSnapshotOfAnAlteredStoreIsRefusedNamingTheCheck(alteration: String, refusal: String) throws {
        let directory = try temporaryDirectory("sightline-cloud-altered")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("cloud.sqlite").path
        let snapshot = directory.appendingPathComponent("cloud.snap").path
        let altered = directory.appendingPathComponent("altered.snap").path
        let staged = path + ".staged"
        do {
            let harness = try SyncHarness(location: .file(path))
            let stores = try (0..<3).map { _ in try harness.addDevice() }
            try vote(stores)
            try harness.syncAll()
            try stores[0].recordShown(ref: recipeURL)
            try harness.syncAll()
            try harness.cloud.snapshot(to: snapshot)
        }
        #expect(try CloudIndex.stageRestore(snapshot: snapshot, at: staged).logRows > 3, "the unaltered snapshot restores")

        let store = directory.appendingPathComponent("extracted.sqlite").path
        let manifest = try SnapshotFile.extract(snapshot, to: store, key: nil)
        try DatabaseQueue(path: store).write { db in
            try db.execute(sql: alteration)
            #expect(db.changesCount > 0, "the alteration changed nothing")
        }
        try SnapshotFile.write(source: store, destination: altered, manifest: manifest, key: nil)
        let failure = try #require(throws: CloudError.self) { try CloudIndex.stageRestore(snapshot: altered, at: staged) }
        #expect(failure.message == refusal)
        #expect(!FileManager.default.fileExists(atPath: staged))
    }
}
