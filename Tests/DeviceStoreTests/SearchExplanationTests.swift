import DeviceStore
import Foundation
import IndexModel
import Testing

/// `search(_:limit:explain:)`: each part of a score the explanation names,
/// changed on its own, changes the rank the way the explanation says, and
/// the parts add up to the score the search ranked by.
@Suite struct SearchExplanationTests {
    /// The explanation of the result whose best member is `identifier` (an item of "notes").
    func explained(_ results: [SearchResult], _ identifier: String) throws -> SearchExplanation {
        let result = try #require(results.first { $0.explanation?.member == .item(index: "notes", identifier: identifier) })
        return try #require(result.explanation)
    }

    /// The parts multiply and add up to the result's score, bit for bit.
    func expectConsistent(_ results: [SearchResult], sourceLocation: SourceLocation = #_sourceLocation) {
        for result in results {
            guard let explanation = result.explanation else {
                Issue.record("no explanation", sourceLocation: sourceLocation)
                continue
            }
            #expect(explanation.score == result.score, sourceLocation: sourceLocation)
            let product = explanation.hintFactor * explanation.viewFactor * explanation.engagementFactor * explanation.tieBreak
            #expect(explanation.multiplier == product, sourceLocation: sourceLocation)
            for word in explanation.words {
                #expect(word.points == word.weight * (word.relevance * explanation.multiplier), sourceLocation: sourceLocation)
            }
        }
    }

    @Test func aWordInTheTitleIsMoreRelevantThanInTheDescription() throws {
        let store = try makeStore()
        try store.index(named: "notes").indexSearchableItems([
            item("described", title: "Weekend plans", description: "a lighthouse walk"),
            item("titled", title: "Lighthouse walk", description: "weekend plans"),
        ])
        let results = try store.search("lighthouse", explain: true)
        expectConsistent(results)
        #expect(results.first?.explanation?.member == .item(index: "notes", identifier: "titled"))
        let titled = try explained(results, "titled"), described = try explained(results, "described")
        #expect(titled.words.map(\.matched) == ["lighthouse"] && described.words.map(\.matched) == ["lighthouse"])
        #expect(titled.words[0].relevance > described.words[0].relevance)
        // Nothing else sets them apart but the tie-break.
        #expect(titled.hintFactor == described.hintFactor && titled.engagementFactor == described.engagementFactor)
    }

    @Test func aPrefixIsExplainedByTheWordItMatchedBest() throws {
        let store = try makeStore()
        try store.index(named: "notes").indexSearchableItems([item("1", title: "Lighthouse", description: "light rain")])
        let explanation = try explained(try store.search("ligh", explain: true), "1")
        #expect(explanation.words.count == 1)
        #expect(explanation.words[0].isPrefix && explanation.words[0].typed == "ligh")
        // "lighthouse" in the title outweighs "light" in the description.
        #expect(explanation.words[0].matched == "lighthouse")
    }

    @Test func aRarerWordWeighsMoreThanACommonOne() throws {
        let store = try makeStore()
        try store.index(named: "notes").indexSearchableItems(
            [item("target", title: "Harbour lighthouse")] + (0..<20).map { item("other-\($0)", title: "Harbour \($0)") })
        let results = try store.search("harbour lighthouse ", explain: true)
        expectConsistent(results)
        let explanation = try explained(results, "target")
        let weights = Dictionary(uniqueKeysWithValues: explanation.words.map { ($0.typed, $0.weight) })
        #expect((weights["lighthouse"] ?? 0) > (weights["harbour"] ?? .infinity))
        #expect(explanation.words.allSatisfy { !$0.isPrefix })
    }

    @Test func aRankingHintLiftsAnItemByItsFactor() throws {
        let store = try makeStore()
        var hinted = item("hinted", title: "Lighthouse walk")
        hinted.attributes.rankingHint = 1
        try store.index(named: "notes").indexSearchableItems([item("plain", title: "Lighthouse walk"), hinted])
        let results = try store.search("lighthouse", explain: true)
        expectConsistent(results)
        #expect(results.first?.explanation?.member == .item(index: "notes", identifier: "hinted"))
        #expect(try explained(results, "hinted").hintFactor == 1.25 && explained(results, "hinted").rankingHint == 1)
        #expect(try explained(results, "plain").hintFactor == 1 && explained(results, "plain").rankingHint == nil)
    }

    @Test func engagementLiftsAResultByItsCountedFactor() throws {
        let store = try makeStore()
        try store.index(named: "notes").indexSearchableItems([item("a", title: "Lighthouse walk"), item("b", title: "Lighthouse walk")])
        let before = try store.search("lighthouse", explain: true)
        let unengaged = try #require(before.last?.explanation?.member)
        guard case .item(_, let identifier) = unengaged else {
            Issue.record("not an item")
            return
        }
        for _ in 0..<3 {
            try store.recordShown(ref: identifier)
            try store.recordEngaged(ref: identifier)
        }
        let after = try store.search("lighthouse", explain: true)
        expectConsistent(after)
        #expect(after.first?.explanation?.member == unengaged)
        let explanation = try explained(after, identifier)
        #expect(explanation.shown == 3 && explanation.engaged == 3)
        #expect(explanation.engagementFactor == 0.5 + 4.0 / 5.0)
        #expect(try explained(after, identifier == "a" ? "b" : "a").engagementFactor == 1)
    }

    @Test func viewsLiftAnActivityByItsFactor() throws {
        let store = try makeStore()
        let seen = UserActivity(activityType: "walk", title: "Lighthouse walk", webpageURL: "https://example.com/seen",
                                eligibleForSearch: true)
        let once = UserActivity(activityType: "walk", title: "Lighthouse walk", webpageURL: "https://example.com/once",
                                eligibleForSearch: true)
        try store.record(once)
        for _ in 0..<4 { try store.record(seen) }
        let results = try store.search("lighthouse", explain: true)
        expectConsistent(results)
        #expect(results.count == 2)
        #expect(results.first?.url == "https://example.com/seen")
        #expect(results.first?.explanation?.views == 4 && results.last?.explanation?.views == 1)
        #expect(results.first?.explanation?.viewFactor == 1 + 0.1 * log(5.0))
        #expect(results.first?.explanation?.hintFactor == 1 && results.first?.explanation?.rankingHint == nil)
    }

    @Test func expiryIsNamedAndHidesTheResultWithoutScoringIt() throws {
        let clock = ManualClock(testStart)
        let store = try makeStore(clock: clock)
        let expires = testStart.adding(milliseconds: 60_000)
        try store.index(named: "notes").indexSearchableItems([
            item("lasting", title: "Lighthouse walk"), item("expiring", title: "Lighthouse walk", expires: expires),
        ])
        let results = try store.search("lighthouse", explain: true)
        expectConsistent(results)
        #expect(try explained(results, "expiring").expires == expires)
        #expect(try explained(results, "lasting").expires == nil)
        clock.advance(byMilliseconds: 60_000)
        #expect(try store.search("lighthouse", explain: true).compactMap(\.explanation?.member) == [.item(index: "notes", identifier: "lasting")])
    }

    @Test func withoutExplainNoResultCarriesOne() throws {
        let store = try makeStore()
        try store.index(named: "notes").indexSearchableItems([item("1", title: "Lighthouse")])
        #expect(try store.search("lighthouse").allSatisfy { $0.explanation == nil })
    }
}
