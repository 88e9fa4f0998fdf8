import CloudIndex
import DeviceStore
import Foundation
import GRDB
import IndexQuery
import IndexModel
import Snapshot
import SyncWire
import Testing

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
