import CloudIndex
import DeviceStore
import Foundation
import GRDB
import IndexQuery
import IndexModel
import Snapshot
import SyncWire
import Testing

/// A new directory under the system's temporary one, for a test to remove.
private func temporaryDirectory(_ prefix: String) throws -> URL {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}

private func recipeHash(url: String = recipeURL) -> PublicHash {
    PublicHash.of(app: app, content: PublicContent(publicRecipe(url: url))!)!
}

/// Every device records the recipe and engages with it.
private func vote(_ stores: [DeviceStore]) throws {
    for store in stores {
        try store.record(publicRecipe())
        try store.recordEngaged(ref: recipeURL)
    }
}

@Suite struct ThresholdTests {
    @Test func belowTheThresholdTheCloudKeepsOnlyCountsAndAsksForNoContent() throws {
        let harness = try SyncHarness(threshold: 3)
        let stores = try (0..<2).map { _ in try harness.addDevice() }
        try vote(stores)
        try harness.syncAll()
        let entry = try #require(try harness.cloud.entry(app: app, hash: recipeHash()))
        #expect(entry.liveVotes == 2 && entry.voters == 2)
        #expect(entry.content == nil && !entry.isWanted)
        #expect(entry.hash == nil, "below K the projections hold only the keyed hash")
        #expect(try harness.cloud.publicIndex(app: app).isEmpty)
        let wire = Data(harness.wire.joined())
        #expect(!wire.contains(Data("Baked Potato".utf8)), "no content crossed the wire below K")
    }

    @Test func theKthVoteAsksForContentAndTheHashBecomesPublic() throws {
        let harness = try SyncHarness(threshold: 3)
        let stores = try (0..<3).map { _ in try harness.addDevice() }
        try vote(stores)
        try harness.syncAll()
        let entry = try #require(try harness.cloud.entry(app: app, hash: recipeHash()))
        #expect(entry.liveVotes == 3 && entry.hash == recipeHash())
        #expect(entry.content?.title == "Baked Potato Chips" && entry.content?.webpageURL == recipeURL)
        #expect(!entry.isWanted)
        #expect(try harness.cloud.publicIndex(app: app).map(\.hash) == [recipeHash()])
        #expect(entry.popularity.engaged == 3)
    }

    /// The ack that asks a device for content is lost; the device, which
    /// never saw it, sends a longer frame from the same cursor. Its ack asks
    /// again: a live voter is asked in every ack until it answers.
    @Test func aContentRequestWhoseAckWasLostIsOfferedAgain() throws {
        let harness = try SyncHarness(threshold: 2)
        let first = try harness.addDevice(), second = try harness.addDevice()
        try vote([first])
        try harness.sync(first)
        try vote([second])
        var uploader = try second.makeUploader()
        let frame = try #require(try second.nextFrame(&uploader, now: harness.clock.now()))
        let lost = harness.deliver(frame.encoded)
        guard case .ack(let ack)? = try? CloudReply.decode(lost.reply, device: second.deviceID.rawValue, key: #require(try second.deviceKey())).reply else {
            Issue.record("no ack: \(lost.outcome)"); return
        }
        #expect(ack.contentRequests == [recipeHash()], "the second vote makes the hash wanted")
        try second.recordShown(ref: recipeURL)   // the next frame starts at the same place and goes further
        try harness.syncAll()
        let entry = try #require(try harness.cloud.entry(app: app, hash: recipeHash()))
        #expect(entry.isPublic && entry.content?.title == "Baked Potato Chips", "the request reached a device that could answer")
    }

    /// The simulator waits for every device to hear the cloud after its last
    /// content request: the head moves when a hash becomes wanted, and not
    /// for frames that ask for nothing.
    @Test func theContentRequestHeadMovesOnlyWhenAHashBecomesWanted() throws {
        let harness = try SyncHarness(threshold: 2)
        let first = try harness.addDevice(), second = try harness.addDevice()
        #expect(try harness.cloud.contentRequestHead() == 0)
        try vote([first])
        try harness.sync(first)
        #expect(try harness.cloud.contentRequestHead() == 0, "one vote of two asks for nothing")
        try vote([second])
        try harness.sync(second)
        let head = try harness.cloud.contentRequestHead()
        #expect(head == 1, "the second vote makes the hash wanted")
        try first.recordShown(ref: recipeURL)
        try harness.sync(first)
        #expect(try harness.cloud.contentRequestHead() == head, "engagement is no request")
    }

    /// A cloud store of format version 1 (before the offered-at columns) is
    /// brought to the current version when opened for writing, and ingests.
    @Test func aVersionOneCloudStoreIsMigratedOnOpenAndItsProjectionsRebuilt() throws {
        let directory = try temporaryDirectory("sightline-migrate")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("cloud.sqlite").path
        do {
            let cloud = try CloudIndex(at: .file(path), options: CloudOptions(threshold: 1))
            try cloud.registerApp(app, enrolmentSecret: enrolmentSecret)
        }
        let raw = try DatabaseQueue(path: path)
        try raw.write { db in
            try db.execute(sql: """
                ALTER TABLE devices DROP COLUMN offered_at_epoch;
                ALTER TABLE devices DROP COLUMN offered_at_seq;
                ALTER TABLE votes DROP COLUMN signal_day;
                ALTER TABLE votes DROP COLUMN day_views;
                ALTER TABLE votes DROP COLUMN day_shown;
                ALTER TABLE votes DROP COLUMN day_engaged;
                ALTER TABLE devices DROP COLUMN enrolment_proof;
                DROP INDEX devices_by_name;
                ALTER TABLE devices DROP COLUMN name;
                ALTER TABLE apps DROP COLUMN maximum_devices;
                DROP TABLE content_offers;
                UPDATE cloud_meta SET value = 1 WHERE key = 'format_version';
                """)
        }
        try raw.close()
        let cloud = try CloudIndex(at: .file(path), options: CloudOptions(clock: ManualClock(harnessStart), threshold: 1))
        let store = try DeviceStore(at: .memory, options: StoreOptions(clock: ManualClock(harnessStart), random: SeededRandom(seed: 4)))
        try store.setDeviceKey(cloud.enrol(app: app, device: store.deviceID.rawValue, enrolmentSecret: enrolmentSecret))
        try vote([store])
        var uploader = try store.makeUploader()
        let frame = try #require(try store.nextFrame(&uploader, now: harnessStart))
        #expect(cloud.ingest(frame.encoded).outcome == .accepted(messages: 2))
        let version = try DatabaseQueue(path: path).read { db in try Int.fetchOne(db, sql: "SELECT value FROM cloud_meta WHERE key = 'format_version'") }
        #expect(version == 6)
        #expect(try cloud.projectionDigest() == cloud.rebuiltProjectionDigest())
    }

    @Test func withdrawalsBelowTheThresholdRemoveTheContent() throws {
        let harness = try SyncHarness(threshold: 3)
        let stores = try (0..<3).map { _ in try harness.addDevice() }
        try vote(stores)
        try harness.syncAll()
        #expect(try harness.cloud.publicIndex(app: app).count == 1)
        #expect(try harness.cloud.publicItemCount() == 1 && harness.cloud.stats().publicItems == 1)
        try stores[0].perform(.deleteActivities(identifiers: ["r1"]))
        try harness.syncAll()
        #expect(try harness.cloud.publicItemCount() == 0)
        let entry = try #require(try harness.cloud.entry(app: app, hash: recipeHash()))
        #expect(entry.liveVotes == 2 && entry.voters == 3 && entry.content == nil && entry.hash == nil)
        #expect(try harness.cloud.publicIndex(app: app).isEmpty)
        // Voting again brings it back, and the content is asked for again.
        try vote([stores[0]])
        try harness.syncAll()
        #expect(try harness.cloud.entry(app: app, hash: recipeHash())?.isPublic == true)
        #expect(try harness.cloud.entry(app: app, hash: recipeHash())?.voters == 3, "the same device counts once")
    }

    @Test func aSybilDeviceVotingManyTimesCountsOnce() throws {
        let harness = try SyncHarness(threshold: 3)
        let stores = try (0..<2).map { _ in try harness.addDevice() }
        try vote(stores)
        // The hostile device records the activity under many identifiers and
        // engages again and again: still one device.
        for index in 0..<10 {
            try stores[0].record(publicRecipe(id: "copy-\(index)"))
            try stores[0].recordEngaged(ref: recipeURL)
        }
        try harness.syncAll()
        #expect(try harness.cloud.entry(app: app, hash: recipeHash())?.liveVotes == 2)
        #expect(try harness.cloud.publicIndex(app: app).isEmpty)
    }
}

@Suite struct IngestTests {
    private func frame(_ store: DeviceStore) throws -> UploadFrame {
        var uploader = try store.makeUploader()
        return try #require(try store.nextFrame(&uploader, now: harnessStart))
    }

    @Test func aFrameDeliveredTwiceIsAcknowledgedAgainAndCountedOnce() throws {
        let harness = try SyncHarness()
        let store = try harness.addDevice()
        try vote([store])
        let bytes = try frame(store).encoded
        #expect(harness.deliver(bytes).outcome == .accepted(messages: 2))
        let digest = try harness.cloud.projectionDigest()
        #expect(harness.deliver(bytes).outcome == .duplicate)
        #expect(try harness.cloud.projectionDigest() == digest)
        #expect(try harness.cloud.entry(app: app, hash: recipeHash())?.popularity.engaged == 1)
        #expect(try harness.cloud.stats().logRows == 1)
    }

    @Test func aGapIsAnsweredWithTheExpectedPositionAndTheUploaderResendsFromThere() throws {
        let harness = try SyncHarness()
        let store = try harness.addDevice()
        try vote([store])
        try harness.sync(store)
        for _ in 0..<3 { try store.recordEngaged(ref: recipeURL) }
        // A frame that skips seq 3: as if frames arrived out of order.
        let records = try store.pendingOutbox(after: OutboxPosition(epoch: 1, seq: 3), limit: 10)
        let late = UploadFrame(app: app, device: store.deviceID.rawValue, records: records, key: try #require(try store.deviceKey()))
        let result = harness.deliver(late.encoded)
        #expect(result.outcome == .rejected(WireError(.gap, "expected 1:3, the frame starts at 1:4")))
        try harness.sync(store)
        #expect(try harness.cloud.entry(app: app, hash: recipeHash())?.popularity.engaged == 4)
        #expect(try store.syncStatus().pending == 0)
    }

    /// What the cloud holds of each device, per epoch: read for one device,
    /// or for all in one pass, the same; a device that sent nothing is absent.
    @Test func theHeldEpochsOfAllDevicesAreEachDevicesHeldEpochs() throws {
        let harness = try SyncHarness()
        let stores = try (0..<3).map { _ in try harness.addDevice() }
        try vote(Array(stores.prefix(2)))
        try harness.syncAll()
        try stores[0].recordEngaged(ref: recipeURL)
        try harness.sync(stores[0])
        let all = try harness.cloud.heldEpochsByDevice()
        #expect(all.count == 2 && all[stores[2].deviceID.rawValue] == nil)
        for store in stores.prefix(2) {
            let one = try harness.cloud.heldEpochs(device: store.deviceID.rawValue)
            #expect(!one.isEmpty && all[store.deviceID.rawValue] == one)
        }
        #expect(all[stores[0].deviceID.rawValue] == [1: 3])
    }

    @Test func theSamePositionsWithOtherMessagesAreRefusedAsEquivocationAndFlagged() throws {
        let harness = try SyncHarness()
        let store = try harness.addDevice()
        try vote([store])
        try harness.sync(store)
        let key = try #require(try store.deviceKey())
        let forged = UploadFrame(app: app, device: store.deviceID.rawValue, records: [
            OutboxRecord(position: OutboxPosition(epoch: 1, seq: 2),
                         message: .signal(recipeHash(), Popularity(engaged: 50))),
        ], key: key)
        let digest = try harness.cloud.projectionDigest()
        guard case .rejected(let error) = harness.deliver(forged.encoded).outcome else {
            Issue.record("equivocation accepted")
            return
        }
        #expect(error.code == .equivocation)
        #expect(try harness.cloud.stats().equivocations == 1)
        #expect(try harness.cloud.projectionDigest() == digest)
    }

    @Test func forgedAndForeignTenantSignaturesAreRefused() throws {
        let harness = try SyncHarness()
        let store = try harness.addDevice()
        try harness.cloud.registerApp("com.other", enrolmentSecret: enrolmentSecret)
        let stranger = try harness.addDevice(seed: 77, app: "com.other")
        try vote([store])
        let records = try store.pendingOutbox(after: .start, limit: 10)
        let wrongKey = UploadFrame(app: app, device: store.deviceID.rawValue, records: records, key: [UInt8](repeating: 1, count: 32))
        // A device of another app signs with its own key but names this app,
        // where no device of its name is enrolled (names are per app).
        let foreign = UploadFrame(app: app, device: stranger.deviceID.rawValue, records: records,
                                  key: try #require(try stranger.deviceKey()))
        let unknown = UploadFrame(app: app, device: "not-enrolled", records: records, key: [UInt8](repeating: 1, count: 32))
        for (frame, code) in [(wrongKey, WireError.Code.badSignature), (foreign, .unknownDevice), (unknown, .unknownDevice)] {
            guard case .rejected(let error) = harness.deliver(frame.encoded).outcome else {
                Issue.record("\(code) accepted")
                continue
            }
            #expect(error.code == code)
        }
        #expect(try harness.cloud.stats().logRows == 0)
    }

    /// The cloud remembers enrolled devices' keys for ingest, but not that a
    /// device was unknown: a device whose first frame came before its
    /// enrolment is accepted once it enrols.
    @Test func aDeviceRefusedBeforeItEnrolledIsAcceptedAfter() throws {
        let harness = try SyncHarness()
        let store = try DeviceStore(at: .memory, options: StoreOptions(clock: harness.clock, random: SeededRandom(seed: 5)))
        try vote([store])
        let records = try store.pendingOutbox(after: .start, limit: 10)
        let early = UploadFrame(app: app, device: store.deviceID.rawValue, records: records, key: [UInt8](repeating: 1, count: 32))
        guard case .rejected(let error) = harness.deliver(early.encoded).outcome else {
            Issue.record("a frame of a device not enrolled was accepted")
            return
        }
        #expect(error.code == .unknownDevice)
        let key = try harness.cloud.enrol(app: app, device: store.deviceID.rawValue, enrolmentSecret: enrolmentSecret)
        let enrolled = UploadFrame(app: app, device: store.deviceID.rawValue, records: records, key: key)
        #expect(harness.deliver(enrolled.encoded).outcome == .accepted(messages: records.count))
        let forged = UploadFrame(app: app, device: store.deviceID.rawValue, records: records, key: [UInt8](repeating: 1, count: 32))
        guard case .rejected(let refusal) = harness.deliver(forged.encoded).outcome else {
            Issue.record("a frame signed with the wrong key was accepted from a remembered device")
            return
        }
        #expect(refusal.code == .badSignature)
    }

    @Test func contentThatDoesNotMatchItsHashIsRefusedWhole() throws {
        let harness = try SyncHarness(threshold: 2)
        let store = try harness.addDevice()
        try vote([store])
        try harness.sync(store)
        let key = try #require(try store.deviceKey())
        let lie = UploadFrame(app: app, device: store.deviceID.rawValue, records: [
            OutboxRecord(position: OutboxPosition(epoch: 1, seq: 3), message: .content(recipeHash(), PublicContent(
                activityType: "com.yummly/browseRecipe", title: "Spam", keywords: [], contentDescription: nil,
                webpageURL: "https://spam.example"))),
        ], key: key)
        guard case .rejected(let error) = harness.deliver(lie.encoded).outcome else {
            Issue.record("mismatched content accepted")
            return
        }
        #expect(error.code == .refused)
        #expect(try harness.cloud.stats().logRows == 1, "nothing of the refused frame was kept")
    }

    /// A device whose enrolment answer was lost asks again with the same
    /// proof and gets the same key; nobody else gets that name or its key.
    @Test func enrolmentWithAProofIsIdempotentForThatDeviceOnly() throws {
        let harness = try SyncHarness()
        let store = try DeviceStore(at: .memory, options: StoreOptions(clock: ManualClock(harnessStart), random: SeededRandom(seed: 8)))
        let name = store.deviceID.rawValue
        let key = try harness.cloud.enrol(app: app, device: name, enrolmentSecret: enrolmentSecret, proof: store.enrolmentProof)
        let again = try harness.cloud.enrol(app: app, device: name, enrolmentSecret: enrolmentSecret, proof: store.enrolmentProof)
        #expect(again == key)
        #expect(try harness.cloud.stats().devices == 1)

        let other = try DeviceStore(at: .memory, options: StoreOptions(clock: ManualClock(harnessStart), random: SeededRandom(seed: 9)))
        #expect(other.enrolmentProof != store.enrolmentProof)
        for proof in [other.enrolmentProof, nil] {
            let refused = try #require(throws: CloudError.self) {
                try harness.cloud.enrol(app: app, device: name, enrolmentSecret: enrolmentSecret, proof: proof)
            }
            #expect(refused.code == .alreadyEnrolled)
        }
        let wrongSecret = try #require(throws: CloudError.self) {
            try harness.cloud.enrol(app: app, device: name, enrolmentSecret: "wrong-secret-of-16-bytes", proof: store.enrolmentProof)
        }
        #expect(wrongSecret.code == .enrolmentRefused, "the app's secret is checked before the proof")
        let short = try #require(throws: CloudError.self) {
            try harness.cloud.enrol(app: app, device: "d2", enrolmentSecret: enrolmentSecret, proof: [1, 2, 3])
        }
        #expect(short.code == .invalidOption)
        #expect(try harness.cloud.stats().devices == 1)
    }

    @Test func anAppsDeviceQuotaRefusesEnrolmentsPastIt() throws {
        let harness = try SyncHarness()
        try harness.cloud.registerApp(app, enrolmentSecret: enrolmentSecret, maximumDevices: 2)
        _ = try harness.cloud.enrol(app: app, device: "d1", enrolmentSecret: enrolmentSecret, proof: Array(repeating: 1, count: 32))
        _ = try harness.cloud.enrol(app: app, device: "d2", enrolmentSecret: enrolmentSecret)
        let full = try #require(throws: CloudError.self) { try harness.cloud.enrol(app: app, device: "d3", enrolmentSecret: enrolmentSecret) }
        #expect(full.code == .enrolmentRefused && full.message.contains("quota of 2"), "\(full)")
        #expect(try harness.cloud.stats().devices == 2)
        _ = try harness.cloud.enrol(app: app, device: "d1", enrolmentSecret: enrolmentSecret, proof: Array(repeating: 1, count: 32))
        try harness.cloud.registerApp(app, enrolmentSecret: enrolmentSecret, maximumDevices: 3)
        _ = try harness.cloud.enrol(app: app, device: "d3", enrolmentSecret: enrolmentSecret)
        #expect(try harness.cloud.stats().devices == 3)
    }

    @Test func enrolmentNeedsTheAppSecretAndHappensOnce() throws {
        let harness = try SyncHarness()
        #expect(throws: CloudError.self) { try harness.cloud.enrol(app: app, device: "d", enrolmentSecret: "wrong-secret-of-16-bytes") }
        #expect(throws: CloudError.self) { try harness.cloud.enrol(app: "com.unknown", device: "d", enrolmentSecret: enrolmentSecret) }
        _ = try harness.cloud.enrol(app: app, device: "d", enrolmentSecret: enrolmentSecret)
        let again = try #require(throws: CloudError.self) { try harness.cloud.enrol(app: app, device: "d", enrolmentSecret: enrolmentSecret) }
        #expect(again.code == .alreadyEnrolled)
    }
}

@Suite struct CloudLogTests {
    @Test func aRebuildFromTheCloudLogEqualsTheIncrementalState() throws {
        let harness = try SyncHarness(threshold: 2)
        let stores = try (0..<4).map { _ in try harness.addDevice() }
        try vote(stores)
        for (index, store) in stores.enumerated() {
            try store.record(publicRecipe(url: "https://example.com/\(index % 2)", id: "x\(index)"))
            try store.recordEngaged(ref: "https://example.com/\(index % 2)")
            try store.recordShown(ref: recipeURL)
        }
        try harness.syncAll()
        try stores[1].perform(.deleteAllActivities)
        try harness.syncAll()
        let incremental = try harness.cloud.projectionDigest()
        #expect(try harness.cloud.rebuiltProjectionDigest() == incremental)
        try harness.cloud.rebuildProjections()
        #expect(try harness.cloud.projectionDigest() == incremental)
        let verification = try harness.cloud.verifyLog()
        let rows = try harness.cloud.stats().logRows
        #expect(verification.isValid && verification.verifiedRows == rows)
    }

    @Test func anAlteredLogRowIsFoundByVerification() throws {
        let directory = try temporaryDirectory("sightline-cloud")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("cloud.sqlite").path
        do {
            let harness = try SyncHarness(location: .file(path))
            let store = try harness.addDevice()
            try vote([store])
            try harness.sync(store)
            try store.recordShown(ref: recipeURL)
            try harness.sync(store)
        }
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "UPDATE cloud_log SET received_at = received_at + 1 WHERE seq = 1")
        }
        let cloud = try CloudIndex(at: .file(path), options: CloudOptions(threshold: 3))
        let verification = try cloud.verifyLog()
        #expect(verification.firstProblem == "log seq 1: stored hash does not match the row's content (row altered)")
    }
}

@Suite struct FaultTests {
    /// A transport to the harness's cloud that loses the reply of every
    /// `loseEvery`-th exchange after the cloud has committed the frame.
    final class LossyTransport: Transport, @unchecked Sendable {
        let harness: SyncHarness
        let loseEvery: Int
        private(set) var exchanges = 0

        init(harness: SyncHarness, loseEvery: Int) {
            self.harness = harness
            self.loseEvery = loseEvery
        }

        func exchange(_ frame: [UInt8]) async throws(TransportError) -> [UInt8] {
            exchanges += 1
            let reply = harness.deliver(frame).reply
            if exchanges % loseEvery == 0 { throw TransportError("reply lost") }
            return reply
        }
    }

    @Test func lostRepliesAreResentAndNothingIsCountedTwice() async throws {
        let harness = try SyncHarness(threshold: 2)
        let stores = try (0..<2).map { _ in try harness.addDevice() }
        try vote(stores)
        for _ in 0..<30 {
            for store in stores {
                try store.recordShown(ref: recipeURL)
                try store.recordEngaged(ref: recipeURL)
            }
        }
        let transport = LossyTransport(harness: harness, loseEvery: 2)
        // Rounds of both devices: content is agreed by K = 2 voters, so both
        // must hear the request the second vote made.
        for _ in 0..<3 {
            for store in stores {
                let client = SyncClient(store: store, transport: transport,
                                        configuration: UploaderConfiguration(maximumMessages: 7), sleep: { _ in })
                let report = try await client.run()
                #expect(report.failure == nil)
            }
        }
        for store in stores { #expect(try store.syncStatus().pending == 0) }
        let entry = try #require(try harness.cloud.entry(app: app, hash: recipeHash()))
        #expect(entry.popularity == Popularity(views: 0, shown: 60, engaged: 62))
        #expect(entry.isPublic, "the content request survived the lost replies")
        #expect(try harness.cloud.rebuiltProjectionDigest() == harness.cloud.projectionDigest())
    }

    @Test func framesArrivingOutOfOrderAreAppliedInOrder() throws {
        let harness = try SyncHarness()
        let store = try harness.addDevice()
        try vote([store])
        for _ in 0..<4 { try store.recordShown(ref: recipeURL) }
        let key = try #require(try store.deviceKey())
        let records = try store.pendingOutbox(after: .start, limit: 100)
        let first = UploadFrame(app: app, device: store.deviceID.rawValue, records: Array(records[0..<3]), key: key)
        let second = UploadFrame(app: app, device: store.deviceID.rawValue, records: Array(records[3...]), key: key)
        guard case .rejected(let error) = harness.deliver(second.encoded).outcome else {
            Issue.record("a frame after a gap was accepted")
            return
        }
        #expect(error.code == .gap)
        #expect(harness.deliver(first.encoded).outcome == .accepted(messages: 3))
        #expect(harness.deliver(second.encoded).outcome == .accepted(messages: 3))
        #expect(harness.deliver(first.encoded).outcome == .duplicate, "a late replay changes nothing")
        #expect(try harness.cloud.entry(app: app, hash: recipeHash())?.popularity.shown == 4)
    }

    @Test func aSignedDeflateBombIsRefusedAndChangesNothing() throws {
        let harness = try SyncHarness()
        let store = try harness.addDevice()
        let key = try #require(try store.deviceKey())
        let records = (1...2_000).map { seq in
            OutboxRecord(position: OutboxPosition(epoch: 1, seq: UInt64(seq)), message: .content(recipeHash(), PublicContent(
                activityType: String(repeating: "a", count: 4_000), title: String(repeating: "b", count: 4_000),
                keywords: [], contentDescription: nil, webpageURL: nil)))
        }
        // 16 MB of nearly identical messages deflate to far less than 1/200 of that.
        let bomb = UploadFrame(app: app, device: store.deviceID.rawValue, records: records, key: key, level: 9)
        guard case .rejected(let error) = harness.deliver(bomb.encoded).outcome else {
            Issue.record("the bomb was accepted")
            return
        }
        #expect(error.code == .tooLarge)
        #expect(try harness.cloud.stats().logRows == 0)
    }

    @Test func privateDataNeverCrossesTheWireNorReachesTheCloudStore() throws {
        let canary = "CANARY-93e1f0"
        let directory = try temporaryDirectory("sightline-canary")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("cloud.sqlite").path
        do {
            let harness = try SyncHarness(threshold: 2, location: .file(path))
            let stores = try (0..<3).map { _ in try harness.addDevice() }
            for (index, store) in stores.enumerated() {
                try store.index(named: "notes").indexSearchableItems([
                    SearchableItem(uniqueIdentifier: "n\(index)", attributes: {
                        var attributes = AttributeSet()
                        attributes.title = "diary \(canary)"
                        attributes.contentURL = "https://private.example/\(canary)"
                        return attributes
                    }()),
                ])
                var privateActivity = publicRecipe(url: "https://private.example/\(canary)/\(index)", id: "p\(index)")
                privateActivity.eligibleForPublicIndexing = false
                privateActivity.title = canary
                try store.record(privateActivity)
                var publicActivity = publicRecipe()
                publicActivity.userInfo = ["session": canary]
                publicActivity.domainIdentifier = canary
                try store.record(publicActivity)
                for ref in ["n\(index)", "https://private.example/\(canary)/\(index)", recipeURL] {
                    try store.recordShown(ref: ref)
                    try store.recordEngaged(ref: ref)
                }
            }
            try harness.syncAll()
            #expect(try harness.cloud.publicIndex(app: app).count == 1, "the public activity did become public")
            let wire = Data(harness.wire.joined())
            #expect(!wire.contains(Data(canary.utf8)))
            #expect(!wire.contains(Data("private.example".utf8)))
        }
        for suffix in ["", "-wal"] {
            guard let bytes = FileManager.default.contents(atPath: path + suffix) else { continue }
            #expect(!bytes.contains(Data(canary.utf8)), "cloud.sqlite\(suffix)")
        }
    }
}

@Suite struct CloudSearchTests {
    /// Two public recipes (K = 1): chips engaged three times, a potato salad once.
    private func harness() throws -> SyncHarness {
        let harness = try SyncHarness(threshold: 1)
        let store = try harness.addDevice()
        var salad = publicRecipe(url: "https://example.com/salad", id: "salad")
        salad.title = "Potato Salad"
        salad.keywords = ["summer"]
        try store.record(publicRecipe())
        try store.record(salad)
        for _ in 0..<3 { try store.recordEngaged(ref: recipeURL) }
        try store.recordEngaged(ref: "https://example.com/salad")
        try harness.syncAll()
        return harness
    }

    @Test func textMatchesEveryWordTheLastAsAPrefixAndPopularityRanks() throws {
        let harness = try harness()
        #expect(try harness.cloud.search(app: app, text: "pota").map { $0.entry.content?.title } == ["Baked Potato Chips", "Potato Salad"])
        #expect(try harness.cloud.search(app: app, text: "potato sal").map { $0.entry.content?.title } == ["Potato Salad"])
        #expect(try harness.cloud.search(app: app, text: "potato sal ").isEmpty, "a finished word must match whole")
        #expect(try harness.cloud.search(app: app, text: "summer").map { $0.entry.content?.title } == ["Potato Salad"])
    }

    @Test func aQueryFiltersOnContentAndPopularity() throws {
        let harness = try harness()
        func titles(_ query: String) throws -> [String?] {
            let filter = CompiledQuery(try QueryParser.parse(query), now: harness.cloud.now)
            return try harness.cloud.search(app: app, text: "", filter: filter).map { $0.entry.content?.title }
        }
        #expect(try titles("engaged >= 2") == ["Baked Potato Chips"])
        #expect(try titles(#"title == "*salad"c"#) == ["Potato Salad"])
        #expect(try titles(#"keywords == "potato" || devices > 5"#) == ["Baked Potato Chips"])
        #expect(try titles(#"activityType == "com.yummly/*""#).count == 2)
    }
}

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
            try store.setDeviceKey(harness.cloud.enrol(app: app, device: store.deviceID.rawValue, enrolmentSecret: enrolmentSecret))
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
        #expect(report.newEpoch == UInt64(harness.clock.now().millisecondsSince1970))
        let restored = try DeviceStore(at: .file(path), options: StoreOptions(clock: harness.clock))
        let resent = try harness.sync(restored)
        #expect(resent.map(\.outcome) == [.duplicate], "the message the snapshot had not sent was sent before the wipe")
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
        try store.setDeviceKey(harness.cloud.enrol(app: app, device: store.deviceID.rawValue, enrolmentSecret: enrolmentSecret))
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
            #expect(try harness.sync(restored).last?.outcome == .accepted(messages: 1))
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
        #expect(results.last?.outcome == .accepted(messages: 1))
        let head = try device.journalHead()
        #expect(head.epoch.rawValue > first.newEpoch, "the device writes above the cloud's epoch")
        let advanced = try device.records(head.seq...head.seq).first?.event()
        #expect(advanced == .epochAdvanced(from: second.newEpoch, to: head.epoch.rawValue))
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
            var uploader = try incarnation.makeUploader()
            late = try #require(try incarnation.nextFrame(&uploader, now: harness.clock.now()))
        }
        let behind = ManualClock(harnessStart.adding(milliseconds: 1_800_000))
        let second = try DeviceStore.restore(snapshot: snapshot, to: path, force: true, options: StoreOptions(clock: behind))
        #expect(second.newEpoch < first.newEpoch)
        let device = try DeviceStore(at: .file(path), options: StoreOptions(clock: behind))
        try device.recordEngaged(ref: recipeURL)
        try device.recordEngaged(ref: recipeURL)
        #expect(try harness.sync(device).map(\.outcome) == [.accepted(messages: 2)])
        #expect(harness.deliver(late.encoded).outcome == .accepted(messages: 1), "the late frame begins a higher epoch")

        try device.recordEngaged(ref: recipeURL)
        let results = try harness.sync(device)
        let refusal = try #require(results.first.flatMap { if case .rejected(let error) = $0.outcome { error } else { nil } })
        #expect(refusal.code == .gap)
        #expect(results.last?.outcome == .accepted(messages: 1))
        let head = try device.journalHead()
        #expect(head.epoch.rawValue > first.newEpoch)
        let advanced = try device.records(head.seq...head.seq).first?.event()
        #expect(advanced == .epochAdvanced(from: second.newEpoch, to: head.epoch.rawValue, kept: 2),
                "the two messages the cloud holds stay in the ended epoch")
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
        var epochs: [UInt64] = []
        for incarnation in 0..<2 {
            let clock = ManualClock(instant)
            let restore = try DeviceStore.restore(snapshot: snapshot, to: path, force: true, options: StoreOptions(clock: clock))
            if let kept = restore.replacedStoreKeptAt { try FileManager.default.removeItem(atPath: kept) }
            epochs.append(restore.newEpoch)
            let device = try DeviceStore(at: .file(path), options: StoreOptions(clock: clock))
            if incarnation == 0 { try device.recordEngaged(ref: recipeURL) } else { try device.recordShown(ref: recipeURL) }
            let results = try harness.sync(device)
            #expect(results.last?.outcome == .accepted(messages: 1), "incarnation \(incarnation): \(results.map(\.outcome))")
            if incarnation == 1 {
                #expect(results.first.map { if case .rejected(let error) = $0.outcome { error.code == .equivocation } else { false } } == true)
                #expect(try device.journalHead().epoch.rawValue > epochs[0])
                #expect(try device.verifyJournal().isValid)
                #expect(try device.rebuiltProjectionDigest() == device.projectionDigest())
            }
        }
        #expect(epochs[0] == epochs[1], "both restores began the same epoch")
        let entry = try #require(try harness.cloud.entry(app: app, hash: recipeHash()))
        #expect(entry.popularity.engaged == 2 && entry.popularity.shown == 1, "each incarnation's message counted once")
    }
}

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
            try store.setDeviceKey(cloud.enrol(app: app, device: store.deviceID.rawValue, enrolmentSecret: enrolmentSecret))
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
        func sync(_ store: DeviceStore) throws -> [IngestResult] {
            var uploader = try store.makeUploader()
            var results: [IngestResult] = []
            while let frame = try store.nextFrame(&uploader, now: clock.now()) {
                let result = cloud.ingest(frame.encoded)
                results.append(result)
                try store.receive(result.reply, into: &uploader, now: clock.now())
                if case .stopped = uploader.state { break }
            }
            return results
        }
        do {
            let store = try DeviceStore(at: .file(devicePath), options: StoreOptions(clock: clock, random: SeededRandom(seed: 8)))
            try store.setDeviceKey(cloud.enrol(app: app, device: store.deviceID.rawValue, enrolmentSecret: enrolmentSecret))
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
        #expect(results.last?.outcome == .accepted(messages: 1))
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
        var recovered = 0
        for store in stores {
            let report = try await SyncClient(store: store, transport: switchboard, sleep: { _ in }).run()
            #expect(report.failure == nil, "\(report.failure ?? "")")
            recovered += report.messagesRecovered
        }
        #expect(recovered > 0, "the devices had dropped messages that only B held")
        try await syncAll()
        let after = try #require(try back.entry(app: app, hash: recipeHash()))
        #expect(after.popularity == before.popularity && after.liveVotes == before.liveVotes && after.voters == before.voters,
                "A's counts plus everything since A: \(after.popularity) against \(before.popularity)")
        #expect(try back.projectionDigest() == digestBefore, "the restored cloud converged to exactly the state it lost")
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
        #expect(refused.message.contains("--force"))
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
            _ = try cloud.enrol(app: app, device: "after-the-backup", enrolmentSecret: enrolmentSecret)
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
         "the snapshot's cloud log does not verify: log seq 1: stored hash does not match the row's content (row altered)"),
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
