import CloudCore
import CloudSQLite
import DeviceStore
import Foundation
import IndexModel
@testable import Simulation
import Testing

/// The simulation's cloud host on its own: a real cloud store in a scratch
/// directory, crashed, backed up and restored by hand.
@Suite struct CloudHostTests {
    private final class Fixture {
        let directory: String
        let world = WorldClock(start: 1_798_761_600_000)
        let host: CloudHost
        let device: DeviceStore

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("cloud-host-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            host = CloudHost(path: directory + "/cloud.sqlite", directory: directory, world: world, random: SeededRandom(seed: 1),
                             threshold: 1, app: AppID("app"), isRemote: false, lane: nil)
            let cloud = try host.start()
            try cloud.registerApp(AppID("app"), enrolmentSecret: "a secret of sixteen bytes")
            device = try DeviceStore(at: .memory, options: StoreOptions(clock: world, random: SeededRandom(seed: 2), app: AppID("app")))
            try device.setDeviceKey(cloud.enrol(app: AppID("app"), device: device.deviceID, enrolmentSecret: "a secret of sixteen bytes"))
        }

        deinit { try? FileManager.default.removeItem(atPath: directory) }

        /// One engagement sent to the running cloud; what it then holds of the device.
        func syncOne(_ number: Int) throws -> [Epoch: OutboxSeq] {
            let url = "https://example.com/\(number)"
            try device.record(UserActivity(activityType: "t", title: "Entry \(number)", keywords: [], webpageURL: url,
                                           eligibleForSearch: true, eligibleForPublicIndexing: true, persistentIdentifier: url))
            try device.recordEngaged(ref: url)
            var run = try device.beginSync()
            var action = try device.perform(run.next(now: world.now()), in: &run, now: world.now())
            while case .send(let frame) = action {
                let cloud = try #require(host.cloud)
                action = try device.perform(run.received(cloud.ingest(frame.encoded).reply, now: world.now()), in: &run, now: world.now())
            }
            return try host.holds(device: device.deviceID)
        }
    }

    @Test func aCrashedCloudComesUpAsANewIncarnationWithWhatItHad() throws {
        let fixture = try Fixture()
        let held = try fixture.syncOne(1)
        #expect(!held.isEmpty)
        fixture.host.crash()
        #expect(fixture.host.cloud == nil && fixture.host.incarnation == 1)
        #expect(try fixture.host.holds(device: fixture.device.deviceID) == held, "read from its file while it is down")
        #expect(try fixture.host.bringUp(restore: false) == nil)
        #expect(try fixture.host.holds(device: fixture.device.deviceID) == held)
    }

    @Test func aSnapshotBecomesABackupOnlyIfTheCloudStayedUpWhileItWasWritten() throws {
        let fixture = try Fixture()
        _ = try fixture.syncOne(1)
        #expect(try fixture.host.takeSnapshot())
        try fixture.host.finishSnapshot()
        #expect(fixture.host.snapshots.count == 1)
        #expect(try fixture.host.takeSnapshot())
        fixture.host.crash()
        try fixture.host.finishSnapshot()
        #expect(fixture.host.snapshots.count == 1, "the second was lost with the crash")
        #expect(try !fixture.host.takeSnapshot(), "a cloud that is down takes no snapshot")
    }

    @Test func aRestoreBringsBackTheBackupsStateAndLetsNewerBackupsGo() throws {
        let fixture = try Fixture()
        let backedUp = try fixture.syncOne(1)
        _ = try fixture.host.takeSnapshot()
        try fixture.host.finishSnapshot()
        _ = try fixture.syncOne(2)
        _ = try fixture.host.takeSnapshot()
        try fixture.host.finishSnapshot()
        let later = try fixture.syncOne(3)
        #expect(later != backedUp && fixture.host.snapshots.count == 2)
        fixture.host.crash()
        var asked = 0
        fixture.host.beginRestore { asked += 1; return true }
        #expect(asked == 1 && fixture.host.pendingRestore != nil)
        let held = try #require(try fixture.host.bringUp(restore: true))
        #expect(held[fixture.device.deviceID] == backedUp, "the older backup, as chosen")
        #expect(fixture.host.snapshots.count == 1, "the newer backup is of a history the cloud no longer has")
        try fixture.host.settleRestoreChecks()
    }

    @Test func theNewsChangesWithANewIncarnation() throws {
        let fixture = try Fixture()
        let before = try fixture.host.news(accepted: 0)
        fixture.host.crash()
        _ = try fixture.host.bringUp(restore: false)
        #expect(try fixture.host.news(accepted: 0) != before)
    }
}
