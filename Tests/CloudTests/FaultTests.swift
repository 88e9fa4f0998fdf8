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

    @Test(arguments: Backend.allCases) func lostRepliesAreResentAndNothingIsCountedTwice(backend: Backend) async throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
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

    @Test(arguments: Backend.allCases) func framesArrivingOutOfOrderAreAppliedInOrder(backend: Backend) throws {
        let harness = try SyncHarness(backend: backend)
        let store = try harness.addDevice()
        try vote([store])
        for _ in 0..<4 { try store.recordShown(ref: recipeURL) }
        let key = try #require(try store.deviceKey())
        let records = try store.pendingOutbox(after: .start, limit: 100)
        let first = UploadFrame(app: app, device: store.deviceID, records: Array(records[0..<3]), key: key)
        let second = UploadFrame(app: app, device: store.deviceID, records: Array(records[3...]), key: key)
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

    @Test(arguments: Backend.allCases) func aSignedDeflateBombIsRefusedAndChangesNothing(backend: Backend) throws {
        let harness = try SyncHarness(backend: backend)
        let store = try harness.addDevice()
        let key = try #require(try store.deviceKey())
        let records = (1...2_000).map { seq in
            OutboxRecord(position: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(UInt64(seq))), message: .content(recipeHash(), PublicContent(
                activityType: String(repeating: "a", count: 4_000), title: String(repeating: "b", count: 4_000),
                keywords: [], contentDescription: nil, webpageURL: nil)))
        }
        // 16 MB of nearly identical messages deflate to far less than 1/200 of that.
        let bomb = UploadFrame(app: app, device: store.deviceID, records: records, key: key, level: 9)
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
