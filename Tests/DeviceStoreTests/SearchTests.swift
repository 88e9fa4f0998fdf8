import DeviceStore
import IndexModel
import Testing

@Suite struct SearchTests {
    @Test func matchesWordPrefixesIgnoringCaseAndDiacritics() throws {
        let store = try makeStore()
        try store.index(named: "photos").indexSearchableItems([
            item("1", title: "Haleakalā Sunrise", keywords: ["maui"]),
            item("2", title: "Café in Paris"),
            item("3", title: "Unrelated"),
        ])
        #expect(try store.resultTitles("hale") == ["Haleakalā Sunrise"])
        #expect(try store.resultTitles("SUNR") == ["Haleakalā Sunrise"])
        #expect(try store.resultTitles("cafe par") == ["Café in Paris"])
        #expect(try store.resultTitles("maui sun") == ["Haleakalā Sunrise"])
        #expect(try store.resultTitles("maui paris").isEmpty)
    }

    @Test func searchTextIsNeverReadAsFullTextQuerySyntax() throws {
        let store = try makeStore()
        try store.index(named: "photos").indexSearchableItems([item("1", title: "Near the sea")])
        for text in ["\"", "near\" OR \"x", "NEAR(a b)", "*", "title:near", "a AND", "(((", "-near", "^near"] {
            _ = try store.search(text)
        }
        #expect(try store.resultTitles("NEAR(") == ["Near the sea"])
        #expect(try store.resultTitles("  ").isEmpty)
    }

    @Test func anItemAndItsActivitiesAreOneResult() throws {
        let store = try makeStore()
        try store.index(named: "photos").indexSearchableItems([
            item("1", title: "Haleakala", url: "https://example.com/p/1"),
        ])
        try store.record(UserActivity(activityType: "view", title: "Haleakala viewed", eligibleForSearch: true,
                                      relatedUniqueIdentifier: "1"))
        try store.record(UserActivity(activityType: "web", title: "Haleakala page", webpageURL: "https://example.com/p/1",
                                      eligibleForSearch: true))
        let results = try store.search("haleakala")
        #expect(results.count == 1)
        #expect(results[0].members.count == 3)
        #expect(results[0].members.first == .item(index: "photos", identifier: "1"))
    }

    @Test func engagementRaisesAResultAboveAnEquallyRelevantOne() throws {
        let store = try makeStore()
        try store.index(named: "photos").indexSearchableItems([
            item("a", title: "Sunset beach"), item("b", title: "Sunset beach"),
        ])
        #expect(try store.search("sunset").map(\.members) == [[.item(index: "photos", identifier: "a")],
                                                              [.item(index: "photos", identifier: "b")]])
        for _ in 0..<3 {
            try store.recordShown(ref: "a")
            try store.recordShown(ref: "b")
            try store.recordEngaged(ref: "b")
        }
        let results = try store.search("sunset")
        #expect(results.first?.members == [.item(index: "photos", identifier: "b")])
        #expect(results.first?.engaged == 3)
        #expect(results.first?.shown == 3)
    }

    @Test func limitBoundsTheResults() throws {
        let store = try makeStore()
        try store.index(named: "photos").indexSearchableItems((0..<30).map { item("\($0)", title: "Photo \($0)") })
        #expect(try store.search("photo", limit: 7).count == 7)
    }
}
