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

@Suite struct IngestTests {
    private func frame(_ store: DeviceStore) throws -> UploadFrame {
        try #require(try store.pendingFrame(now: harnessStart))
    }

    @Test(arguments: Backend.allCases) func aFrameDeliveredTwiceIsAcknowledgedAgainAndCountedOnce(backend: Backend) throws {
        let harness = try SyncHarness(backend: backend)
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

    @Test(arguments: Backend.allCases) func aGapIsAnsweredWithTheExpectedPositionAndTheUploaderResendsFromThere(backend: Backend) throws {
        let harness = try SyncHarness(backend: backend)
        let store = try harness.addDevice()
        try vote([store])
        try harness.sync(store)
        for _ in 0..<3 { try store.recordEngaged(ref: recipeURL) }
        // A frame that skips seq 3: as if frames arrived out of order.
        let records = try store.pendingOutbox(after: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(3)), limit: 10)
        let late = UploadFrame(app: app, device: store.deviceID, records: records, key: try #require(try store.deviceKey()))
        let result = harness.deliver(late.encoded)
        #expect(result.outcome == .rejected(WireError(.gap, "expected 1:3, the frame starts at 1:4")))
        try harness.sync(store)
        #expect(try harness.cloud.entry(app: app, hash: recipeHash())?.popularity.engaged == 4)
        #expect(try store.syncStatus().pending == 0)
    }

    /// What the cloud holds of each device, per epoch: read for one device,
    /// or for all in one pass, the same; a device that sent nothing is absent.
    @Test(arguments: Backend.allCases) func theHeldEpochsOfAllDevicesAreEachDevicesHeldEpochs(backend: Backend) throws {
        let harness = try SyncHarness(backend: backend)
        let stores = try (0..<3).map { _ in try harness.addDevice() }
        try vote(Array(stores.prefix(2)))
        try harness.syncAll()
        try stores[0].recordEngaged(ref: recipeURL)
        try harness.sync(stores[0])
        let all = try harness.cloud.heldEpochsByDevice(app: app)
        #expect(all.count == 2 && all[stores[2].deviceID] == nil)
        for store in stores.prefix(2) {
            let one = try harness.cloud.heldEpochs(app: app, device: store.deviceID)
            #expect(!one.isEmpty && all[store.deviceID] == one)
        }
        #expect(all[stores[0].deviceID] == [Epoch(1): OutboxSeq(3)])
    }

    @Test(arguments: Backend.allCases) func theSamePositionsWithOtherMessagesAreRefusedAsEquivocationAndFlagged(backend: Backend) throws {
        let harness = try SyncHarness(backend: backend)
        let store = try harness.addDevice()
        try vote([store])
        try harness.sync(store)
        let key = try #require(try store.deviceKey())
        let forged = UploadFrame(app: app, device: store.deviceID, records: [
            OutboxRecord(position: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(2)),
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

    @Test(arguments: Backend.allCases) func forgedAndForeignTenantSignaturesAreRefused(backend: Backend) throws {
        let harness = try SyncHarness(backend: backend)
        let store = try harness.addDevice()
        try harness.cloud.registerApp(AppID("com.other"), enrolmentSecret: enrolmentSecret)
        let stranger = try harness.addDevice(seed: 77, app: AppID("com.other"))
        try vote([store])
        let records = try store.pendingOutbox(after: .start, limit: 10)
        let wrongKey = UploadFrame(app: app, device: store.deviceID, records: records, key: [UInt8](repeating: 1, count: 32))
        // A device of another app signs with its own key but names this app,
        // where no device of its name is enrolled (names are per app).
        let foreign = UploadFrame(app: app, device: stranger.deviceID, records: records,
                                  key: try #require(try stranger.deviceKey()))
        let unknown = UploadFrame(app: app, device: DeviceID("not-enrolled"), records: records, key: [UInt8](repeating: 1, count: 32))
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
    @Test(arguments: Backend.allCases) func aDeviceRefusedBeforeItEnrolledIsAcceptedAfter(backend: Backend) throws {
        let harness = try SyncHarness(backend: backend)
        let store = try DeviceStore(at: .memory, options: StoreOptions(clock: harness.clock, random: SeededRandom(seed: 5)))
        try vote([store])
        let records = try store.pendingOutbox(after: .start, limit: 10)
        let early = UploadFrame(app: app, device: store.deviceID, records: records, key: [UInt8](repeating: 1, count: 32))
        guard case .rejected(let error) = harness.deliver(early.encoded).outcome else {
            Issue.record("a frame of a device not enrolled was accepted")
            return
        }
        #expect(error.code == .unknownDevice)
        let key = try harness.cloud.enrol(app: app, device: store.deviceID, enrolmentSecret: enrolmentSecret)
        let enrolled = UploadFrame(app: app, device: store.deviceID, records: records, key: key)
        #expect(harness.deliver(enrolled.encoded).outcome == .accepted(messages: records.count))
        let forged = UploadFrame(app: app, device: store.deviceID, records: records, key: [UInt8](repeating: 1, count: 32))
        guard case .rejected(let refusal) = harness.deliver(forged.encoded).outcome else {
            Issue.record("a frame signed with the wrong key was accepted from a remembered device")
            return
        }
        #expect(refusal.code == .badSignature)
    }

    @Test(arguments: Backend.allCases) func contentThatDoesNotMatchItsHashIsRefusedWhole(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        let store = try harness.addDevice()
        try vote([store])
        try harness.sync(store)
        let key = try #require(try store.deviceKey())
        let lie = UploadFrame(app: app, device: store.deviceID, records: [
            OutboxRecord(position: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(3)), message: .content(recipeHash(), PublicContent(
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
    @Test(arguments: Backend.allCases) func enrolmentWithAProofIsIdempotentForThatDeviceOnly(backend: Backend) throws {
        let harness = try SyncHarness(backend: backend)
        let store = try DeviceStore(at: .memory, options: StoreOptions(clock: ManualClock(harnessStart), random: SeededRandom(seed: 8)))
        let name = store.deviceID
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
            try harness.cloud.enrol(app: app, device: DeviceID("d2"), enrolmentSecret: enrolmentSecret, proof: [1, 2, 3])
        }
        #expect(short.code == .invalidOption)
        #expect(try harness.cloud.stats().devices == 1)
    }

    @Test(arguments: Backend.allCases) func anAppsDeviceQuotaRefusesEnrolmentsPastIt(backend: Backend) throws {
        let harness = try SyncHarness(backend: backend)
        try harness.cloud.registerApp(app, enrolmentSecret: enrolmentSecret, maximumDevices: 2)
        _ = try harness.cloud.enrol(app: app, device: DeviceID("d1"), enrolmentSecret: enrolmentSecret, proof: Array(repeating: 1, count: 32))
        _ = try harness.cloud.enrol(app: app, device: DeviceID("d2"), enrolmentSecret: enrolmentSecret)
        let full = try #require(throws: CloudError.self) { try harness.cloud.enrol(app: app, device: DeviceID("d3"), enrolmentSecret: enrolmentSecret) }
        #expect(full.code == .enrolmentRefused && full.message.contains("quota of 2"), "\(full)")
        #expect(try harness.cloud.stats().devices == 2)
        _ = try harness.cloud.enrol(app: app, device: DeviceID("d1"), enrolmentSecret: enrolmentSecret, proof: Array(repeating: 1, count: 32))
        try harness.cloud.registerApp(app, enrolmentSecret: enrolmentSecret, maximumDevices: 3)
        _ = try harness.cloud.enrol(app: app, device: DeviceID("d3"), enrolmentSecret: enrolmentSecret)
        #expect(try harness.cloud.stats().devices == 3)
    }

    @Test(arguments: Backend.allCases) func enrolmentNeedsTheAppSecretAndHappensOnce(backend: Backend) throws {
        let harness = try SyncHarness(backend: backend)
        #expect(throws: CloudError.self) { try harness.cloud.enrol(app: app, device: DeviceID("d"), enrolmentSecret: "wrong-secret-of-16-bytes") }
        #expect(throws: CloudError.self) { try harness.cloud.enrol(app: AppID("com.unknown"), device: DeviceID("d"), enrolmentSecret: enrolmentSecret) }
        _ = try harness.cloud.enrol(app: app, device: DeviceID("d"), enrolmentSecret: enrolmentSecret)
        let again = try #require(throws: CloudError.self) { try harness.cloud.enrol(app: app, device: DeviceID("d"), enrolmentSecret: enrolmentSecret) }
        #expect(again.code == .alreadyEnrolled)
    }
}
