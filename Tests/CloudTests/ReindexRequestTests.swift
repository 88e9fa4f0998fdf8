import CloudCore
import CloudSQLite
import DeviceStore
import Foundation
import IndexModel
import Snapshot
import SyncWire
import Testing

/// A device restored from a backup does not know what it sent after it; the
/// cloud may hold those messages. Its reindex ask makes the cloud name the
/// hashes they voted for or withdrew, and the device states its vote for
/// each again, so the cloud counts exactly the votes the devices hold.
@Suite struct ReindexRequestTests {
    /// The device engaged after its backup, the cloud counted the vote, and
    /// the device was wiped and restored from the backup: it no longer knows
    /// the vote, so it could never withdraw it. Its answer withdraws it, and
    /// the hash, public at K = 1 on that vote alone, is public no more.
    @Test(arguments: Backend.allCases) func aVoteTheRestoredDeviceNoLongerHoldsIsWithdrawn(backend: Backend) throws {
        let scene = try RestoreScene(backend: backend)
        defer { scene.remove() }
        try scene.beforeTheBackup { store in try store.record(publicRecipe()) }
        try scene.afterTheBackup { store in try store.recordEngaged(ref: recipeURL) }
        #expect(try scene.harness.cloud.entry(app: app, hash: recipeHash())?.liveVotes == 1)

        let restored = try scene.restore()
        try scene.harness.sync(restored)
        try scene.harness.sync(restored)

        let entry = try scene.harness.cloud.entry(app: app, hash: recipeHash())
        #expect(entry?.liveVotes == 0 && entry?.voters == 1 && entry?.content == nil)
        #expect(try restored.liveVotes().isEmpty)
        let events = try journalEvents(restored)
        #expect(events.contains { if case .cloudReindexAsked = $0 { true } else { false } })
        let answered = events.compactMap { event -> VoteReindexRequest? in
            if case .votesReindexRequested(let request) = event { request } else { nil }
        }
        #expect(answered.map(\.hashes) == [[recipeHash().bytes]] && answered.map(\.more) == [false])
        #expect(try restored.syncStatus().pending == 0)
        #expect(try scene.harness.cloud.rebuiltProjectionDigest() == scene.harness.cloud.projectionDigest())
        #expect(try restored.rebuiltProjectionDigest() == restored.projectionDigest())
    }

    /// The other way round: the device withdrew after its backup (its
    /// activity went), and the restored device holds the vote again. Its
    /// answer makes the cloud count the vote again, so its engagements count.
    @Test(arguments: Backend.allCases) func aVoteTheRestoredDeviceHoldsIsCountedAgain(backend: Backend) throws {
        let scene = try RestoreScene(backend: backend)
        defer { scene.remove() }
        try scene.beforeTheBackup { store in
            try store.record(publicRecipe())
            try store.recordEngaged(ref: recipeURL)
        }
        try scene.afterTheBackup { store in try store.perform(.deleteAllActivities) }
        #expect(try scene.harness.cloud.entry(app: app, hash: recipeHash())?.liveVotes == 0)

        let restored = try scene.restore()
        try scene.harness.sync(restored)
        try restored.recordEngaged(ref: recipeURL)
        try scene.harness.sync(restored)

        let entry = try #require(try scene.harness.cloud.entry(app: app, hash: recipeHash()))
        #expect(entry.liveVotes == 1 && entry.voters == 1)
        #expect(entry.popularity.engaged == 2, "the engagement before the backup and the one after the restore")
        #expect(try restored.liveVotes() == [recipeHash()])
        #expect(try scene.harness.cloud.rebuiltProjectionDigest() == scene.harness.cloud.projectionDigest())
    }

    /// More hashes than one ack names: the device asks again after where each
    /// answer stopped, until the cloud says there is no more, and every vote
    /// the backup did not know is withdrawn.
    @Test func aLongAnswerComesInPagesUntilThereIsNoMore() throws {
        let scene = try RestoreScene(backend: .sqlite)
        defer { scene.remove() }
        let urls = (0..<300).map { "https://www.yummly.com/recipe/page-\($0)" }
        try scene.beforeTheBackup { _ in }
        try scene.afterTheBackup { store in
            for (number, url) in urls.enumerated() {
                try store.record(publicRecipe(url: url, id: "r\(number)"))
                try store.recordEngaged(ref: url)
            }
        }
        let restored = try scene.restore()
        for _ in 0..<4 { try scene.harness.sync(restored) }

        let requests = try journalEvents(restored).compactMap { event -> VoteReindexRequest? in
            if case .votesReindexRequested(let request) = event { request } else { nil }
        }
        #expect(requests.count == 2)
        #expect(requests.first?.hashes.count == 256 && requests.first?.more == true)
        #expect(requests.last?.more == false)
        #expect(Set(requests.flatMap(\.hashes)) == Set(urls.map { recipeHash(url: $0).bytes }))
        for url in urls {
            #expect(try scene.harness.cloud.entry(app: app, hash: recipeHash(url: url))?.liveVotes == 0)
        }
    }

    /// The device's history forked: one incarnation, restored from a backup
    /// taken before the engagement, began a new epoch at the cloud; another,
    /// restored from a later backup that holds the vote unsent, finds the
    /// first epoch ended before it. The vote can never arrive in that epoch,
    /// so the device states it again in its own, and the cloud counts it.
    @Test(arguments: Backend.allCases) func aVoteInAnEpochTheCloudEndedShortIsStatedAgain(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 1, backend: backend)
        let directory = try temporaryDirectory("sightline-ended")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("device.sqlite").path
        let (early, late) = (directory.appendingPathComponent("early.snap").path, directory.appendingPathComponent("late.snap").path)
        do {
            let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: harness.clock, random: SeededRandom(seed: 3)))
            try store.setDeviceKey(harness.cloud.enrol(app: app, device: store.deviceID, enrolmentSecret: enrolmentSecret))
            try store.record(publicRecipe())
            try store.snapshot(to: early)
            try store.recordEngaged(ref: recipeURL)
            try store.snapshot(to: late)
        }
        harness.clock.advance(byMilliseconds: 60_000)
        let forkPath = directory.appendingPathComponent("fork.sqlite").path
        _ = try DeviceStore.restore(snapshot: early, to: forkPath, options: StoreOptions(clock: harness.clock))
        try harness.sync(try DeviceStore(at: .file(forkPath), options: StoreOptions(clock: harness.clock)))

        harness.clock.advance(byMilliseconds: 60_000)
        let restoredPath = directory.appendingPathComponent("restored.sqlite").path
        _ = try DeviceStore.restore(snapshot: late, to: restoredPath, options: StoreOptions(clock: harness.clock))
        let restored = try DeviceStore(at: .file(restoredPath), options: StoreOptions(clock: harness.clock))
        try harness.sync(restored)

        let requests = try journalEvents(restored).compactMap { event -> VoteReindexRequest? in
            if case .votesReindexRequested(let request) = event { request } else { nil }
        }
        #expect(requests.map(\.hashes) == [[recipeHash().bytes]], "the device's own request, for the vote of the ended epoch")
        let entry = try #require(try harness.cloud.entry(app: app, hash: recipeHash()))
        #expect(entry.liveVotes == 1 && entry.voters == 1)
        #expect(try restored.liveVotes() == [recipeHash()])
        #expect(try restored.syncStatus().pending == 0)
        #expect(try restored.rebuiltProjectionDigest() == restored.projectionDigest())
    }

    /// A restored device whose backup held everything it sent asks, and the
    /// cloud names nothing: nothing is journaled and nothing more is sent.
    @Test func aDeviceThatLostNothingHearsNoRequest() throws {
        let scene = try RestoreScene(backend: .sqlite)
        defer { scene.remove() }
        try scene.beforeTheBackup { store in
            try store.record(publicRecipe())
            try store.recordEngaged(ref: recipeURL)
        }
        try scene.afterTheBackup { _ in }
        let restored = try scene.restore()
        try scene.harness.sync(restored)
        try scene.harness.sync(restored)
        #expect(!(try journalEvents(restored)).contains { if case .votesReindexRequested = $0 { true } else { false } })
        #expect(try scene.harness.cloud.entry(app: app, hash: recipeHash())?.liveVotes == 1)
        #expect(try restored.syncStatus().pending == 0)
    }

    /// A probe claims nothing, so an ask sent again as a probe is not
    /// answered; and an ask answers only about the device's own epochs
    /// before the frame's, never another device's messages.
    @Test func anAskIsAnsweredOnlyAboutTheDevicesOwnEarlierEpochs() throws {
        let harness = try SyncHarness(threshold: 1)
        let other = try harness.addDevice(seed: 1)
        try other.record(publicRecipe())
        try other.recordEngaged(ref: recipeURL)
        try harness.sync(other)
        let asking = try harness.addDevice(seed: 2)
        let key = try #require(try asking.deviceKey())
        // An ask in a later epoch, about everything before it.
        let records = [OutboxRecord(position: OutboxPosition(epoch: Epoch(5), seq: .first), message: .reindexAsk(after: .nothing))]
        let ask = UploadFrame(app: app, device: asking.deviceID, records: records, key: key, follows: .start)
        let reply = try CloudReply.decode(harness.deliver(ask.encoded).reply, device: asking.deviceID, key: key)
        guard case .ack(let ack) = reply.reply else {
            Issue.record("the ask was not acknowledged: \(String(describing: reply.reply))")
            return
        }
        #expect(ack.reindex == CloudReindex(after: .nothing, through: .nothing, hashes: [], more: false))

        let probe = UploadFrame(app: app, device: asking.deviceID, records: records, key: key, isProbe: true)
        let probed = try CloudReply.decode(harness.deliver(probe.encoded).reply, device: asking.deviceID, key: key)
        guard case .ack(let probeAck) = probed.reply else {
            Issue.record("the probe was not acknowledged: \(String(describing: probed.reply))")
            return
        }
        #expect(probeAck.reindex == nil)
    }
}

/// A device store file that syncs, is backed up, goes on and syncs again,
/// and is then wiped and restored from its backup.
private final class RestoreScene {
    let harness: SyncHarness
    let directory: URL
    let path: String
    let snapshot: String
    /// The device before the wipe.
    private var store: DeviceStore?

    init(backend: Backend) throws {
        harness = try SyncHarness(threshold: 1, backend: backend)
        directory = try temporaryDirectory("sightline-reindex")
        path = directory.appendingPathComponent("device.sqlite").path
        snapshot = directory.appendingPathComponent("device.snap").path
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: harness.clock, random: SeededRandom(seed: 11)))
        try store.setDeviceKey(harness.cloud.enrol(app: app, device: store.deviceID, enrolmentSecret: enrolmentSecret))
        self.store = store
    }

    /// `calls`, a sync, and the backup.
    func beforeTheBackup(_ calls: (DeviceStore) throws -> Void) throws {
        let store = try #require(store)
        try calls(store)
        try harness.sync(store)
        try store.snapshot(to: snapshot)
    }

    /// `calls` and a sync, which the backup does not hold.
    func afterTheBackup(_ calls: (DeviceStore) throws -> Void) throws {
        let store = try #require(store)
        harness.clock.advance(byMilliseconds: 60_000)
        try calls(store)
        try harness.sync(store)
    }

    /// The device wiped (its store closed and its files gone) and restored
    /// from the backup, an hour later.
    func restore() throws -> DeviceStore {
        store = nil
        harness.clock.advance(byMilliseconds: 3_600_000)
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            try FileManager.default.removeItem(atPath: path + suffix)
        }
        _ = try DeviceStore.restore(snapshot: snapshot, to: path, options: StoreOptions(clock: harness.clock))
        return try DeviceStore(at: .file(path), options: StoreOptions(clock: harness.clock))
    }

    func remove() {
        try? FileManager.default.removeItem(at: directory)
    }
}

private func journalEvents(_ store: DeviceStore) throws -> [JournalEvent] {
    var events: [JournalEvent] = []
    _ = try store.scanJournal { record in
        events.append(try record.event())
        return true
    }
    return events
}
