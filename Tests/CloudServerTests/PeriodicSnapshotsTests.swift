import CloudCore
import CloudServer
import CloudSQLite
import Crypto
import DeviceStore
import Foundation
import IndexModel
import Logging
import ScratchDirectory
import Testing

/// `cloud serve --snapshot-every`'s backups, driven by ticks the test gives
/// and a manual clock: no sleeping.
@Suite struct PeriodicSnapshotsTests {
    /// Each tick writes a sealed snapshot named by the cloud's time; only
    /// the newest `kept` stay, and each restores with the key alone.
    @Test func eachTickWritesASealedSnapshotAndOnlyTheNewestKeptStay() async throws {
        let directory = try ScratchDirectory.make("sightline-periodic")
        let clock = ManualClock(ISO8601.parse("2026-11-28T10:00:00Z")!)
        let cloud = try CloudIndex(at: .file(directory.appendingPathComponent("cloud.sqlite").path),
                                   options: CloudOptions(clock: clock, threshold: 1))
        try cloud.registerApp(AppID("com.example.app"), enrolmentSecret: "an-enrolment-secret-for-tests")
        let snapshots = directory.appendingPathComponent("snapshots").path
        let key = SymmetricKey(size: .bits256)
        let periodic = PeriodicSnapshots(cloud: cloud, directory: snapshots, kept: 2, key: key, logger: Logger(label: "test"))

        var (ticks, continuation) = AsyncStream<Void>.makeStream()
        continuation.yield()
        continuation.finish()
        await periodic.run(ticks: ticks)
        for _ in 0..<2 {
            clock.advance(byMilliseconds: 1_000)
            #expect(await periodic.takeSnapshot() != nil)
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: snapshots).sorted()
        let first = clock.now().millisecondsSince1970 - 2_000
        #expect(files == ["cloud-\(first + 1_000).snap", "cloud-\(first + 2_000).snap"], "\(files)")

        let newest = (snapshots as NSString).appendingPathComponent(files[1])
        let target = directory.appendingPathComponent("restored.sqlite").path
        #expect(throws: CloudError.self) { try CloudIndex.restore(snapshot: newest, to: target) }
        #expect(try CloudIndex.restore(snapshot: newest, to: target, key: key).logRows == 0)

        // A stream that ends ends the run.
        (ticks, continuation) = AsyncStream<Void>.makeStream()
        continuation.finish()
        await periodic.run(ticks: ticks)
    }
}
