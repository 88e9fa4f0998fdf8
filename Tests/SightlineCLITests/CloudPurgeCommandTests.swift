import CloudCore
import CloudSQLite
import DeviceStore
import Foundation
import IndexModel
import ScratchDirectory
import SyncWire
import Testing

/// `cloud snapshot` purges the content a backup made durable below K, and
/// `cloud purge` says what is left.
@Suite struct CloudPurgeCommandTests {
    @Test func aSnapshotPurgesContentBelowKAndPurgeThenFindsNothing() throws {
        let directory = try ScratchDirectory.make("sightline-cloud-purge")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cloudPath = directory.appendingPathComponent("cloud.sqlite").path
        let clock = ManualClock(try #require(ISO8601.parse("2026-11-22T09:00:00Z")))
        let url = "https://example.com/secret-recipe"
        do {
            // K = 2 and one voter: its content, sent as if asked, is logged but never public.
            let cloud = try CloudIndex(at: .file(cloudPath), options: CloudOptions(clock: clock, threshold: 2))
            try cloud.registerApp(StoreOptions.defaultApp, enrolmentSecret: "enrolment-secret-for-tests")
            let store = try DeviceStore(at: .memory, options: StoreOptions(clock: clock, random: SeededRandom(seed: 1)))
            try store.setDeviceKey(cloud.enrol(app: StoreOptions.defaultApp, device: store.deviceID, enrolmentSecret: "enrolment-secret-for-tests"))
            let activity = UserActivity(activityType: "com.example/read", title: "Grandmother's secret", webpageURL: url,
                                        eligibleForSearch: true, eligibleForPublicIndexing: true)
            try store.record(activity)
            try store.recordEngaged(ref: url)
            let content = try #require(PublicContent(activity))
            let hash = try #require(PublicHash.of(app: StoreOptions.defaultApp, content: content))
            try store.recordContentRequests([hash])
            let frame = try #require(try store.pendingFrame(now: clock.now()))
            #expect(cloud.ingest(frame.encoded).outcome == .accepted(messages: 3))
        }
        let before = try CLIRunner.json(["cloud", "purge", "--db", cloudPath, "--dry-run", "--json"])
        #expect(before["contentMessages"]?.integer == 0 && before["waitingForBackup"]?.integer == 1, "no backup yet")

        let snapshot = try CLIRunner.run(["cloud", "snapshot", "--db", cloudPath, "--out", directory.appendingPathComponent("cloud.snap").path])
        #expect(snapshot.status == 0 && snapshot.stderr.contains("purged 1 content message(s) of 1 hash(es)"), "\(snapshot.stderr)")
        let after = try CLIRunner.json(["cloud", "purge", "--db", cloudPath, "--json"])
        #expect(after["contentMessages"]?.integer == 0 && after["waitingForBackup"]?.integer == 0)
        let export = try CLIRunner.run(["journal", "export", "--db", cloudPath])
        #expect(export.status == 0 && export.stdout.contains("\"contentPurged\"") && export.stdout.contains("\"purged\":true"))
        #expect(!export.stdout.contains("Grandmother"), "the title is gone from the log")
        #expect(try CLIRunner.run(["journal", "verify", "--db", cloudPath]).status == 0)
        #expect(try CLIRunner.run(["cloud", "rebuild", "--db", cloudPath]).status == 0)

        let missing = try CLIRunner.run(["cloud", "purge", "--db", directory.appendingPathComponent("none.sqlite").path])
        #expect(missing.status == 3 && missing.stderr.contains("no cloud store"))
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("none.sqlite").path))
    }
}
