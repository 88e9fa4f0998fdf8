import CloudCore
import CloudSQLite
import DeviceStore
import Foundation
import IndexModel
import ScratchDirectory
import SyncWire
import Testing

/// A public activity purged from a device's journal: it waits until the
/// cloud's backup holds what the device sent before the deletion, and a cloud
/// restored from an older backup still gets every message it lost, with a
/// withheld answer (`OutboxMessage.contentWithheld`) in place of the content
/// the device no longer holds.
@Suite struct ActivityPurgeSyncTests {
    @Test func aCloudRestoredFromAnOlderBackupGetsAWithheldAnswerInPlaceOfPurgedContent() throws {
        let directory = try ScratchDirectory.make("sightline-activity-purge")
        let cloudPath = directory.appendingPathComponent("cloud.sqlite").path
        let older = directory.appendingPathComponent("older.snap").path
        let clock = ManualClock(harnessStart)
        let options = CloudOptions(clock: clock, random: SeededRandom(seed: 99), threshold: 2)
        var cloud = try CloudIndex(at: .file(cloudPath), options: options)
        try cloud.registerApp(app, enrolmentSecret: enrolmentSecret)
        func sync(_ store: DeviceStore) throws -> [IngestResult] { try syncSession(store, with: cloud, clock: clock) }
        let stores = try (1...2).map { seed in
            let store = try DeviceStore(at: .memory, options: StoreOptions(clock: clock, random: SeededRandom(seed: UInt64(seed))))
            try store.setDeviceKey(cloud.enrol(app: app, device: store.deviceID, enrolmentSecret: enrolmentSecret))
            return store
        }
        try vote(stores)
        for store in stores { _ = try sync(store) }
        // The votes, and not yet the content answers the next acks ask for.
        try cloud.snapshot(to: older)
        for _ in 0..<2 { for store in stores { _ = try sync(store) } }
        #expect(try cloud.entry(app: app, hash: recipeHash())?.content?.title == "Baked Potato Chips")

        let device = stores[0]
        clock.advance(byMilliseconds: 60_000)
        try device.perform(.deleteActivities(identifiers: ["r1"]))
        _ = try sync(device)
        try device.snapshot(to: directory.appendingPathComponent("device.slsnap").path)
        #expect(try device.purge().activitiesWaiting == [ActivityWait(key: "id:r1", reason: .cloud)],
                "the cloud's backup does not hold the withdrawal yet")
        try cloud.snapshot(to: directory.appendingPathComponent("newer.snap").path)
        _ = try sync(device)
        let report = try device.purge()
        #expect(report.activities == ["id:r1"] && report.references == 1, "\(report)")
        for record in try device.records(Seq(1)...device.journalHead().seq) {
            #expect(!String(decoding: record.payload, as: UTF8.self).contains("yummly"), "seq \(record.seq) still names the URL")
        }
        #expect(try device.verifyJournal().isValid)
        #expect(try device.projectionDigest() == device.rebuiltProjectionDigest())

        // The cloud is lost and comes back from the backup before the answers.
        cloud = try CloudIndex(at: .memory, options: options)
        _ = try CloudIndex.restore(snapshot: older, to: cloudPath, force: true, options: options)
        cloud = try CloudIndex(at: .file(cloudPath), options: options)
        for store in stores { _ = try sync(store) }
        #expect(try device.syncStatus().pending == 0)
        var withheld = 0
        try cloud.scanLog(app: nil, from: 1) { record in
            withheld += record.messages.count { $0 == .contentWithheld(recipeHash()) }
            return true
        }
        #expect(withheld == 1, "the device's answer, made again without the content")
        let entry = try cloud.entry(app: app, hash: recipeHash())
        #expect(entry?.liveVotes == 1 && entry?.content == nil, "the withdrawal came back too: below K, no content")
        #expect(try cloud.verifyLog().isValid)
    }

    /// Two public activities of one page: while one lives, engagement with
    /// the page stays in the clear, and the deleted one waits with it, since
    /// a replay finds it by that engagement; once both are deleted, both go.
    @Test func aPublicActivityWaitsWhileAnotherActivityNamesItsURL() throws {
        let harness = try SyncHarness(threshold: 2)
        let device = try harness.addDevice()
        let directory = try ScratchDirectory.make("sightline-shared-url")
        var saved = publicRecipe(id: "r2")
        saved.activityType = "com.yummly/saveRecipe"
        try device.record(publicRecipe())
        try device.record(saved)
        try device.recordEngaged(ref: recipeURL)
        try device.perform(.deleteActivities(identifiers: ["r1"]))
        func backUpBothSides() throws {
            try harness.sync(device)
            try device.snapshot(to: directory.appendingPathComponent("device.slsnap").path)
            try harness.cloud.snapshot(to: directory.appendingPathComponent("cloud.snap").path)
            try harness.sync(device)
        }
        try backUpBothSides()
        let waiting = try device.purge()
        #expect(waiting.activities.isEmpty && waiting.activitiesWaiting == [ActivityWait(key: "id:r1", reason: .sharedURL)],
                "\(waiting)")
        try device.perform(.deleteActivities(identifiers: ["r2"]))
        try backUpBothSides()
        let report = try device.purge()
        #expect(report.activities == ["id:r1", "id:r2"] && report.references == 1 && report.activitiesWaiting.isEmpty, "\(report)")
        #expect(try device.verifyJournal().isValid)
        #expect(try device.projectionDigest() == device.rebuiltProjectionDigest())
    }

    /// The same message as the content it stands for, at the same position
    /// of the same hash, and no other.
    @Test func aWithheldAnswerReadsBackFromAFrameAndStandsForContentOfItsHashOnly() throws {
        let hash = recipeHash()
        let key = [UInt8](repeating: 7, count: 32)
        let records = [OutboxRecord(position: OutboxPosition(epoch: .first, seq: .first), message: .contentWithheld(hash))]
        let frame = UploadFrame(app: app, device: DeviceID("d1"), records: records, key: key)
        #expect(try UploadFrame.parse(frame.encoded).messages() == [.contentWithheld(hash)])
        #expect(try OutboxMessage.decode(OutboxMessage.contentWithheld(hash).encoded) == .contentWithheld(hash))
    }
}
