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

    /// The explanation's parts multiply to the score the results are ranked by.
    private func expectConsistent(_ results: [PublicResult], sourceLocation: SourceLocation = #_sourceLocation) {
        for result in results {
            guard let explanation = result.explanation else {
                Issue.record("no explanation", sourceLocation: sourceLocation)
                continue
            }
            #expect(explanation.score == result.score, sourceLocation: sourceLocation)
            #expect(explanation.score == explanation.relevance * explanation.popularityFactor * explanation.engagementFactor,
                    sourceLocation: sourceLocation)
            #expect(explanation.relevance == explanation.words.reduce(0) { $0 + $1.weight } || explanation.words.isEmpty,
                    sourceLocation: sourceLocation)
        }
    }

    @Test func explainedRelevanceNamesTheBestFieldOfEachWord() throws {
        let harness = try harness()
        // "summer" is a keyword of the salad only; "potato" is in both titles.
        let results = try harness.cloud.search(app: app, text: "summer potato ", explain: true)
        expectConsistent(results)
        let words = try #require(results.first?.explanation?.words)
        #expect(words.map(\.field) == ["keywords", "title"])
        #expect(words.map(\.weight) == [2, 3])
        #expect(words.map(\.matched) == ["summer", "potato"])
        #expect(words.allSatisfy { !$0.isPrefix })
        #expect(try harness.cloud.search(app: app, text: "sal", explain: true).first?.explanation?.words.first?.matched == "salad")
    }

    @Test func explainedPopularityAndEngagementAreTheCountedFactors() throws {
        let harness = try harness()
        let results = try harness.cloud.search(app: app, text: "potato", explain: true)
        expectConsistent(results)
        // Equal relevance: the chips, engaged three times, outrank the salad, engaged once.
        #expect(results.map { $0.entry.content?.title } == ["Baked Potato Chips", "Potato Salad"])
        let chips = try #require(results.first?.explanation), salad = try #require(results.last?.explanation)
        #expect(chips.relevance == salad.relevance)
        #expect(chips.engaged == 3 && salad.engaged == 1)
        #expect(chips.popularityFactor == 1 + log(4.0) && salad.popularityFactor == 1 + log(2.0))
        #expect(chips.engagementFactor == 0.5 + 4.0 / (Double(chips.shown) + 2))
    }

    @Test func anExplanationSaysHowTheItemBecamePublicInCountsOnly() throws {
        let harness = try harness()
        let explanation = try #require(try harness.cloud.search(app: app, text: "chips", explain: true).first?.explanation)
        #expect(explanation.threshold == 1 && explanation.liveVotes >= 1 && explanation.agreement == 1)
        #expect(explanation.contentSource == "devices")
        guard case .object(let object) = explanation.jsonValue else {
            Issue.record("not an object")
            return
        }
        // Counts, never a device: nothing in it names one.
        let device = harness.devices[0].deviceID.rawValue
        #expect(!JSONWriter.compact(.object(object)).contains(device))
        #expect(try harness.cloud.search(app: app, text: "chips").allSatisfy { $0.explanation == nil })
    }
}
