import CloudCore
import CloudSQLite
import DeviceStore
import Foundation
import IndexModel
import ScratchDirectory
import Testing

/// `cloud restore --to-time`: the cloud as it was at an instant.
@Suite struct CloudRestoreCommandTests {
    @Test func restoreToATimeKeepsTheFramesReceivedByThenAndSaysHowMany() throws {
        let directory = try ScratchDirectory.make("sightline-cloud-cut")
        let cloudPath = directory.appendingPathComponent("cloud.sqlite").path
        let snapshot = directory.appendingPathComponent("cloud.snap").path
        let start = try #require(ISO8601.parse("2026-11-22T09:00:00Z"))
        let clock = ManualClock(start)
        do {
            let cloud = try CloudIndex(at: .file(cloudPath), options: CloudOptions(clock: clock, threshold: 2))
            try cloud.registerApp(StoreOptions.defaultApp, enrolmentSecret: "enrolment-secret-for-tests")
            for number in 0..<3 {
                let store = try DeviceStore(at: .memory, options: StoreOptions(clock: clock, random: SeededRandom(seed: UInt64(number + 1))))
                try store.setDeviceKey(cloud.enrol(app: StoreOptions.defaultApp, device: store.deviceID,
                                                   enrolmentSecret: "enrolment-secret-for-tests"))
                try store.record(UserActivity(activityType: "com.example/read", title: "A", webpageURL: "https://example.com/a",
                                              eligibleForSearch: true, eligibleForPublicIndexing: true))
                try store.recordEngaged(ref: "https://example.com/a")
                let frame = try #require(try store.pendingFrame(now: start))
                _ = cloud.ingest(frame.encoded)
                clock.advance(byMilliseconds: 60_000)   // the devices' frames arrive at 09:00, 09:01 and 09:02
            }
        }
        #expect(try CLIRunner.run(["cloud", "snapshot", "--db", cloudPath, "--out", snapshot]).status == 0)
        let restoredPath = directory.appendingPathComponent("restored.sqlite").path
        let restore = try CLIRunner.run(["cloud", "restore", "--snapshot", snapshot, "--db", restoredPath,
                                         "--to-time", "2026-11-22T09:01:30Z"])
        #expect(restore.status == 0, "\(restore.stderr)")
        #expect(restore.stdout.contains("as at 2026-11-22T09:01:30Z: 2 of 3 cloud log rows kept"), "\(restore.stdout)")
        let stats = try CLIRunner.json(["cloud", "stats", "--db", restoredPath, "--json"])
        #expect(stats["logRows"]?.integer == 2)
        #expect(try CLIRunner.run(["journal", "verify", "--db", restoredPath]).status == 0)

        let bad = try CLIRunner.run(["cloud", "restore", "--snapshot", snapshot, "--db", restoredPath, "--force", "--to-time", "noon"])
        #expect(bad.status == 64 && bad.stderr.contains("ISO 8601"))
    }
}
