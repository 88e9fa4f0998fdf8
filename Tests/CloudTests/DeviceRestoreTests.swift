import CloudCore
import CloudSQLite
import DeviceStore
import Foundation
import GRDB
import IndexModel
import IndexQuery
import Snapshot
import SyncWire
import Testing

@Suite struct DeviceRestoreTests {
    /// A device syncs, is snapshotted, goes on (and syncs), is wiped and restored
    /// from the snapshot, goes on again and syncs: the cloud counts every
    /// engagement it was sent once, none twice, and the restored device's
    /// resent messages are taken as duplicates.
    @Test func aRestoredDeviceResendsWhatTheCloudLackedAndNothingCountsTwice() throws {
        let directory = try temporaryDirectory("sightline-restore")
        defer { try? FileManager.default.removeItem(at: directory) }
        let harness = try SyncHarness(threshold: 1)
        let path = directory.appendingPathComponent("device.sqlite").path
        let snapshot = directory.appendingPathComponent("device.snap").path
        do {
            let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: harness.clock, random: SeededRandom(seed: 11)))
            try store.setDeviceKey(harness.cloud.enrol(app: app, device: store.deviceID, enrolmentSecret: enrolmentSecret))
            try vote([store])
            try harness.sync(store)
            try store.recordEngaged(ref: recipeURL)   // in the snapshot, not yet sent
            try store.snapshot(to: snapshot)
            try store.recordEngaged(ref: recipeURL)   // sent, then lost with the device
            try harness.sync(store)
        }
        #expect(try harness.cloud.entry(app: app, hash: recipeHash())?.popularity.engaged == 3)
        try FileManager.default.removeItem(atPath: path)
        let report = try DeviceStore.restore(snapshot: snapshot, to: path, options: StoreOptions(clock: harness.clock))
        #expect(report.newEpoch == Epoch(UInt64(harness.clock.now().millisecondsSince1970)))
        let restored = try DeviceStore(at: .file(path), options: StoreOptions(clock: harness.clock))
        let resent = try harness.sync(restored)
        #expect(resent.map(\.outcome) == [.duplicate, .accepted(messages: 1)],
                "the message the snapshot had not sent was sent before the wipe; the restore's reindex ask is new")
        try restored.recordEngaged(ref: recipeURL)
        let fresh = try harness.sync(restored)
        #expect(fresh.map(\.outcome) == [.accepted(messages: 1)])
        let entry = try #require(try harness.cloud.entry(app: app, hash: recipeHash()))
        #expect(entry.popularity.engaged == 4 && entry.voters == 1 && entry.liveVotes == 1)
        #expect(try restored.syncStatus().pending == 0)
        #expect(try harness.cloud.rebuiltProjectionDigest() == harness.cloud.projectionDigest())
    }
}

extension DeviceRestoreTests {
    /// A device store file that voted, synced and was snapshotted, with its
    /// cloud: the scratch directory (for the caller to remove), the harness,
    /// the store's path and the snapshot's.
    private func votedAndBackedUp(seed: UInt64) throws -> (URL, SyncHarness, String, String) {
        let directory = try temporaryDirectory("sightline-epochs")
        let harness = try SyncHarness(threshold: 1)
        let path = directory.appendingPathComponent("device.sqlite").path
        let snapshot = directory.appendingPathComponent("device.snap").path
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: harness.clock, random: SeededRandom(seed: seed)))
        try store.setDeviceKey(harness.cloud.enrol(app: app, device: store.deviceID, enrolmentSecret: enrolmentSecret))
        try vote([store])
        try harness.sync(store)
        try store.snapshot(to: snapshot)
        return (directory, harness, path, snapshot)
    }

    /// The device is restored (its epoch is the restore time), sends in that
    /// epoch, then its clock runs back and it is restored again: its new
    /// epoch is below the one the cloud holds. The cloud sends it to its head,
    /// the device moves its unsent epoch above it with a journaled event, and
    /// what it writes from then on is counted, once.
    @Test func aDeviceWhoseClockRanBackPastAnEarlierRestoreMovesItsEpochAboveTheClouds() throws {
        let (directory, harness, path, snapshot) = try votedAndBackedUp(seed: 5)
        defer { try? FileManager.default.removeItem(at: directory) }
        harness.clock.advance(byMilliseconds: 3_600_000)
        let first = try DeviceStore.restore(snapshot: snapshot, to: path, force: true, options: StoreOptions(clock: harness.clock))
        if let kept = first.replacedStoreKeptAt { try FileManager.default.removeItem(atPath: kept) }
        do {
            let restored = try DeviceStore(at: .file(path), options: StoreOptions(clock: harness.clock))
            try restored.recordEngaged(ref: recipeURL)
            #expect(try harness.sync(restored).last?.outcome == .accepted(messages: 2), "the reindex ask and the engagement")
        }
        // The device's clock is now half an hour behind the first restore.
        let behind = ManualClock(harnessStart.adding(milliseconds: 1_800_000))
        let second = try DeviceStore.restore(snapshot: snapshot, to: path, force: true, options: StoreOptions(clock: behind))
        #expect(second.newEpoch < first.newEpoch, "the clock ran back past the first restore")
        let device = try DeviceStore(at: .file(path), options: StoreOptions(clock: behind))
        try device.recordEngaged(ref: recipeURL)
        let results = try harness.sync(device)
        #expect(results.first.map { if case .rejected(let error) = $0.outcome { error.code == .gap } else { false } } == true,
                "the cloud refuses the epoch it counts as ended and says where it is")
        #expect(results.last?.outcome == .accepted(messages: 3),
                "the reindex ask, the engagement, and the vote stated again for the epoch the cloud ended")
        let head = try device.journalHead()
        #expect(head.epoch > first.newEpoch, "the device writes above the cloud's epoch")
        let advanced = try device.records(head.seq...head.seq).first?.event()
        #expect(advanced == .epochAdvanced(from: second.newEpoch, to: head.epoch))
        try device.recordEngaged(ref: recipeURL)
        #expect(try harness.sync(device).map(\.outcome) == [.accepted(messages: 1)])
        let entry = try #require(try harness.cloud.entry(app: app, hash: recipeHash()))
        #expect(entry.popularity.engaged == 4 && entry.voters == 1, "one engagement before the snapshot, one per incarnation after, none twice")
        #expect(try device.verifyJournal().isValid)
        #expect(try device.rebuiltProjectionDigest() == device.projectionDigest(), "a rebuild moves the outbox the same way")
        #expect(try device.syncStatus().pending == 0)
    }

    /// Two incarnations of one device, restored from the same backup: the
    /// second, with its clock behind, syncs first, so the cloud takes its
    /// low epoch; then a frame of the first arrives late and begins a higher
    /// epoch, which ends the second's. Its next message is refused with where
    /// its epoch ended, and it moves only what came after that above the
    /// cloud's epoch: nothing is lost and nothing counted twice.
    /// (`simulate --seed 129 --devices 8 --events-per-device 80 --faults
    /// heavy --threshold 3` stopped here, the store refusing to advance.)
    @Test func aDeviceWhoseEpochTheCloudEndedAfterTakingSomeOfItMovesOnlyTheRest() throws {
        let (directory, harness, path, snapshot) = try votedAndBackedUp(seed: 5)
        defer { try? FileManager.default.removeItem(at: directory) }
        harness.clock.advance(byMilliseconds: 3_600_000)
        let firstPath = directory.appendingPathComponent("first.sqlite").path
        let first = try DeviceStore.restore(snapshot: snapshot, to: firstPath, options: StoreOptions(clock: harness.clock))
        let late: UploadFrame
        do {
            let incarnation = try DeviceStore(at: .file(firstPath), options: StoreOptions(clock: harness.clock))
            try incarnation.recordEngaged(ref: recipeURL)
            late = try #require(try incarnation.pendingFrame(now: harness.clock.now()))
        }
        let behind = ManualClock(harnessStart.adding(milliseconds: 1_800_000))
        let second = try DeviceStore.restore(snapshot: snapshot, to: path, force: true, options: StoreOptions(clock: behind))
        #expect(second.newEpoch < first.newEpoch)
        let device = try DeviceStore(at: .file(path), options: StoreOptions(clock: behind))
        try device.recordEngaged(ref: recipeURL)
        try device.recordEngaged(ref: recipeURL)
        #expect(try harness.sync(device).map(\.outcome) == [.accepted(messages: 3)], "the reindex ask and two engagements")
        #expect(harness.deliver(late.encoded).outcome == .accepted(messages: 2), "the late frame begins a higher epoch")

        try device.recordEngaged(ref: recipeURL)
        let results = try harness.sync(device)
        let refusal = try #require(results.first.flatMap { if case .rejected(let error) = $0.outcome { error } else { nil } })
        #expect(refusal.code == .gap)
        #expect(results.last?.outcome == .accepted(messages: 2), "the engagement, and the vote stated again")
        let head = try device.journalHead()
        #expect(head.epoch > first.newEpoch)
        let advanced = try device.records(head.seq...head.seq).first?.event()
        #expect(advanced == .epochAdvanced(from: second.newEpoch, to: head.epoch, kept: OutboxSeq(3)),
                "the three messages the cloud holds stay in the ended epoch")
        let entry = try #require(try harness.cloud.entry(app: app, hash: recipeHash()))
        #expect(entry.popularity.engaged == 5 && entry.voters == 1, "one before the snapshot, one late, three after, none twice")
        #expect(try device.verifyJournal().isValid)
        #expect(try device.rebuiltProjectionDigest() == device.projectionDigest(), "a rebuild moves the same messages")
        #expect(try device.syncStatus().pending == 0)
    }

    /// Two restores from the same backup at the same instant begin the same
    /// epoch. The second incarnation's first frame carries other messages at
    /// positions the cloud holds from the first: the cloud refuses it as
    /// equivocation and names its head, and the device, which had nothing of
    /// that epoch acknowledged, moves its epoch above it and is heard.
    @Test func aDeviceWhoseEpochAnEarlierIncarnationUsedMovesAboveIt() throws {
        let (directory, harness, path, snapshot) = try votedAndBackedUp(seed: 6)
        defer { try? FileManager.default.removeItem(at: directory) }
        let instant = harnessStart.adding(milliseconds: 3_600_000)
        var epochs: [Epoch] = []
        for incarnation in 0..<2 {
            let clock = ManualClock(instant)
            let restore = try DeviceStore.restore(snapshot: snapshot, to: path, force: true, options: StoreOptions(clock: clock))
            if let kept = restore.replacedStoreKeptAt { try FileManager.default.removeItem(atPath: kept) }
            epochs.append(restore.newEpoch)
            let device = try DeviceStore(at: .file(path), options: StoreOptions(clock: clock))
            if incarnation == 0 { try device.recordEngaged(ref: recipeURL) } else { try device.recordShown(ref: recipeURL) }
            let results = try harness.sync(device)
            // The reindex ask and the call's message; the second also states
            // its vote again for the epoch it had to leave.
            #expect(results.last?.outcome == .accepted(messages: incarnation == 0 ? 2 : 3), "incarnation \(incarnation): \(results.map(\.outcome))")
            if incarnation == 1 {
                #expect(results.first.map { if case .rejected(let error) = $0.outcome { error.code == .equivocation } else { false } } == true)
                #expect(try device.journalHead().epoch > epochs[0])
                #expect(try device.verifyJournal().isValid)
                #expect(try device.rebuiltProjectionDigest() == device.projectionDigest())
            }
        }
        #expect(epochs[0] == epochs[1], "both restores began the same epoch")
        let entry = try #require(try harness.cloud.entry(app: app, hash: recipeHash()))
        #expect(entry.popularity.engaged == 2 && entry.popularity.shown == 1, "each incarnation's message counted once")
    }
}
