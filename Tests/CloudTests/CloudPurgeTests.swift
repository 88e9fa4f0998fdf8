import CloudCore
import CloudSQLite
import DeviceStore
import Foundation
import GRDB
import IndexModel
import ScratchDirectory
import SyncWire
import Testing

/// The cloud log keeps the content devices sent for a hash until a purge:
/// once the hash is below K and a backup holds its fall below K, each content
/// message becomes its residue, and the log still verifies and rebuilds.
@Suite struct CloudPurgeTests {
    /// K = 2: two devices vote, send the content, and it becomes public; then
    /// both delete the activity and withdraw. The content waits for a backup
    /// that holds the withdrawals, then goes, and nothing else changes.
    @Test(arguments: Backend.allCases) func withdrawnContentGoesOnceABackupHoldsTheWithdrawal(backend: Backend) throws {
        let (harness, stores, directory) = try publicThenWithdrawn(backend: backend)
        defer { try? FileManager.default.removeItem(at: directory) }
        let waiting = try harness.cloud.purgeWithdrawnContent(dryRun: true)
        #expect(waiting.contentMessages == 0 && waiting.waitingForBackup == 2, "no backup holds the withdrawals yet")

        try harness.cloud.snapshot(to: directory.appendingPathComponent("cloud.snap").path)
        let before = try harness.cloud.projectionDigest()
        let dry = try harness.cloud.purgeWithdrawnContent(dryRun: true)
        #expect(dry.contentMessages == 2 && dry.hashes == 1 && dry.waitingForBackup == 0)
        #expect(try contentMessages(harness.cloud).content == 2, "a dry run changes nothing")

        let report = try harness.cloud.purgeWithdrawnContent(dryRun: false)
        #expect(report.contentMessages == 2 && report.hashes == 1 && !report.rows.isEmpty && report.bytes > 0)
        let left = try contentMessages(harness.cloud)
        #expect(left.content == 0 && left.purged == 2)
        #expect(try harness.cloud.verifyLog().isValid, "the chain covers the digest as received, which a purge keeps")
        #expect(try harness.cloud.projectionDigest() == before, "the projections held none of it")
        #expect(try harness.cloud.rebuiltProjectionDigest() == before, "a rebuild folds the purged log the same")
        #expect(try harness.cloud.purgeWithdrawnContent(dryRun: false).contentMessages == 0, "a second purge finds nothing")

        // The devices' frames that carried the content, sent again, are duplicates, not equivocation.
        let carriers = harness.wire.filter { bytes in
            ((try? UploadFrame.parse(bytes).messages()) ?? []).contains { if case .content = $0 { true } else { false } }
        }
        #expect(carriers.count >= 2, "the two frames with content, and probes that sent one again")
        for frame in carriers { #expect(harness.cloud.ingest(frame).outcome == .duplicate) }
        try harness.syncAll()
        #expect(try stores.allSatisfy { try $0.syncStatus().pending == 0 })
    }

    /// A hash still at K keeps its content, in the projections and the log.
    @Test func contentOfAHashStillAtKStays() throws {
        let harness = try SyncHarness(threshold: 2)
        let stores = try (0..<3).map { _ in try harness.addDevice() }
        try vote(stores)
        try harness.syncAll()
        try stores[0].perform(.deleteAllActivities)
        try harness.syncAll()
        let directory = try ScratchDirectory.make("sightline-cloud-purge")
        defer { try? FileManager.default.removeItem(at: directory) }
        try harness.cloud.snapshot(to: directory.appendingPathComponent("cloud.snap").path)
        #expect(try harness.cloud.purgeWithdrawnContent(dryRun: false).contentMessages == 0)
        #expect(try harness.cloud.entry(app: app, hash: recipeHash())?.content?.title == "Baked Potato Chips")
    }

    /// A restore brings back the log as the backup held it, from before the
    /// purge; the purge after the restored cloud's next backup takes the
    /// content again.
    @Test func aRestoreFromTheBackupBeforeThePurgeIsPurgedAfterTheNextBackup() throws {
        let directory = try ScratchDirectory.make("sightline-cloud-purge")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("cloud.sqlite").path
        let snapshot = directory.appendingPathComponent("cloud.snap").path
        do {
            let (harness, _, scratch) = try publicThenWithdrawn(backend: .sqlite, location: .file(path))
            defer { try? FileManager.default.removeItem(at: scratch) }
            try harness.cloud.snapshot(to: snapshot)
            #expect(try harness.cloud.purgeWithdrawnContent(dryRun: false).contentMessages == 2)
        }
        try CloudIndex.restore(snapshot: snapshot, to: path, force: true)
        let restored = try CloudIndex(at: .file(path))
        #expect(try contentMessages(restored).content == 2, "the backup was taken before the purge")
        #expect(try restored.purgeWithdrawnContent(dryRun: true).waitingForBackup == 2, "the snapshot held the positions of the backup before it")
        try restored.snapshot(to: directory.appendingPathComponent("again.snap").path)
        #expect(try restored.purgeWithdrawnContent(dryRun: false).contentMessages == 2)
        #expect(try contentMessages(restored).content == 0)
    }

    /// Bytes of a purged row are outside bytes like any other: a row marked
    /// purged that holds no residue, a residue in a row not marked, and a
    /// residue in a device's frame are each refused, named.
    @Test func aResidueOutsideAPurgedRowIsRefused() throws {
        let directory = try ScratchDirectory.make("sightline-cloud-purge")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("cloud.sqlite").path
        do {
            let (harness, _, scratch) = try publicThenWithdrawn(backend: .sqlite, location: .file(path))
            defer { try? FileManager.default.removeItem(at: scratch) }
            try harness.cloud.snapshot(to: directory.appendingPathComponent("cloud.snap").path)
            try harness.cloud.purgeWithdrawnContent(dryRun: false)
        }
        let queue = try DatabaseQueue(path: path)
        let purged = try #require(try queue.read { db in
            try Row.fetchOne(db, sql: "SELECT app, seq, payload, codec FROM cloud_log WHERE codec = 2 ORDER BY seq LIMIT 1")
        })
        let app: String = purged[0], seq: Int64 = purged[1]
        // The residue in a row marked stored: its tag is no frame's.
        try queue.write { db in try db.execute(sql: "UPDATE cloud_log SET codec = 0 WHERE app = ? AND seq = ?", arguments: [app, seq]) }
        let unmarked = try CloudIndex(at: .file(path), options: CloudOptions(readOnly: true)).verifyLog()
        #expect(unmarked.firstProblem?.contains("log seq \(seq)") == true, "\(unmarked.firstProblem ?? "verified")")
        // A row marked purged whose payload has no residue.
        let plain = FramePayload.encode([OutboxMessage.withdraw(recipeHash(), VoteToken([UInt8](repeating: 1, count: 16))!).encoded])
        try queue.write { db in
            try db.execute(sql: "UPDATE cloud_log SET codec = 2, payload = ?, uncompressed_length = ?, first_seq = last_seq, accepted_from = last_seq WHERE app = ? AND seq = ?",
                           arguments: [Data(plain), plain.count, app, seq])
        }
        let unpurged = try CloudIndex(at: .file(path), options: CloudOptions(readOnly: true)).verifyLog()
        #expect(unpurged.firstProblem?.contains("holds no purged content message") == true
                || unpurged.firstProblem?.contains("log seq \(seq)") == true, "\(unpurged.firstProblem ?? "verified")")

        let token = VoteToken([UInt8](repeating: 2, count: 16))!
        let frame = UploadFrame(app: AppID(app), device: DeviceID("d1"),
                                records: [OutboxRecord(position: OutboxPosition(epoch: .first, seq: .first), message: .vote(recipeHash(), token)),
                                          OutboxRecord(position: OutboxPosition(epoch: .first, seq: OutboxSeq(2)),
                                                       message: .contentPurged(recipeHash(), digest: [UInt8](repeating: 0, count: 16)))],
                                key: [UInt8](repeating: 7, count: 32))
        let error = try #require(throws: WireError.self) { try UploadFrame.parse(frame.encoded).messages() }
        #expect(error.code == .malformed && error.message.contains("purged content"), "\(error)")
    }
}

/// K = 2, two devices whose content made the recipe public, then withdrew
/// it; the harness, the devices and a scratch directory to remove.
private func publicThenWithdrawn(backend: Backend, location: CloudLocation = .memory) throws -> (SyncHarness, [DeviceStore], URL) {
    let harness = try SyncHarness(threshold: 2, location: location, backend: backend)
    let stores = try (0..<2).map { _ in try harness.addDevice() }
    try vote(stores)
    try harness.syncAll()
    #expect(try harness.cloud.entry(app: app, hash: recipeHash())?.content?.title == "Baked Potato Chips")
    harness.clock.advance(byMilliseconds: 60_000)
    for store in stores { try store.perform(.deleteAllActivities) }
    try harness.syncAll()
    let entry = try harness.cloud.entry(app: app, hash: recipeHash())
    #expect(entry?.liveVotes == 0 && entry?.content == nil, "below K the projections dropped the content")
    return (harness, stores, try ScratchDirectory.make("sightline-cloud-purge"))
}

/// How many content messages, and purged ones, the cloud log holds.
private func contentMessages(_ cloud: any CloudStore) throws -> (content: Int, purged: Int) {
    var counts = (content: 0, purged: 0)
    try cloud.scanLog(app: nil, from: 1) { record in
        for message in record.messages {
            switch message {
            case .content: counts.content += 1
            case .contentPurged: counts.purged += 1
            default: break
            }
        }
        return true
    }
    return counts
}
