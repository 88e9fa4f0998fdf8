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

@Suite struct ThresholdTests {
    @Test(arguments: Backend.allCases) func belowTheThresholdTheCloudKeepsOnlyCountsAndAsksForNoContent(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 3, backend: backend)
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

    @Test(arguments: Backend.allCases) func theKthVoteAsksForContentAndTheHashBecomesPublic(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 3, backend: backend)
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
    @Test(arguments: Backend.allCases) func aContentRequestWhoseAckWasLostIsOfferedAgain(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        let first = try harness.addDevice(), second = try harness.addDevice()
        try vote([first])
        try harness.sync(first)
        try vote([second])
        let frame = try #require(try second.pendingFrame(now: harness.clock.now()))
        let lost = harness.deliver(frame.encoded)
        guard case .ack(let ack)? = try? CloudReply.decode(lost.reply, device: second.deviceID, key: #require(try second.deviceKey())).reply else {
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
    @Test(arguments: Backend.allCases) func theContentRequestHeadMovesOnlyWhenAHashBecomesWanted(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        let first = try harness.addDevice(), second = try harness.addDevice()
        #expect(try harness.cloud.contentRequestHead(app: app) == 0)
        try vote([first])
        try harness.sync(first)
        #expect(try harness.cloud.contentRequestHead(app: app) == 0, "one vote of two asks for nothing")
        try vote([second])
        try harness.sync(second)
        let head = try harness.cloud.contentRequestHead(app: app)
        #expect(head == 1, "the second vote makes the hash wanted")
        try first.recordShown(ref: recipeURL)
        try harness.sync(first)
        #expect(try harness.cloud.contentRequestHead(app: app) == head, "engagement is no request")
    }

    @Test(arguments: Backend.allCases) func withdrawalsBelowTheThresholdRemoveTheContent(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 3, backend: backend)
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

    @Test(arguments: Backend.allCases) func aSybilDeviceVotingManyTimesCountsOnce(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 3, backend: backend)
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
