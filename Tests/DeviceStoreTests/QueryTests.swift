import DeviceStore
import IndexModel
import IndexQuery
import PropertyBased
import QueryTestSupport
import Testing

private func identifiers(_ store: DeviceStore, _ query: String, index: String? = nil, limit: Int? = nil) throws -> [String] {
    try store.query(try QueryParser.parse(query), index: index, limit: limit).map(\.item.uniqueIdentifier)
}

@Test func storeQueriesFollowApplesWorkedExamples() throws {
    let store = try makeStore()
    let titles = ["Paris", "paris", "I love Paris", "paris-france.jpg", "Comparison", "MyWindowClass", "Broken Window", "NSWindow"]
    _ = try store.perform(.index(index: "files", items: titles.enumerated().map { item("f\($0.offset)", title: $0.element) }))
    func titlesMatching(_ query: String) throws -> [String] {
        try store.query(try QueryParser.parse(query)).compactMap(\.item.attributes.title).sorted()
    }
    #expect(try titlesMatching(#"title == "Paris""#) == ["Paris"])
    #expect(try titlesMatching(#"title == "Paris"wc"#) == ["I love Paris", "Paris", "paris", "paris-france.jpg"])
    #expect(try titlesMatching(#"title == "Window"w"#) == ["Broken Window", "MyWindowClass"])
    #expect(try titlesMatching(#"title == "*Paris*"c && !(title == "paris*")"#) == ["Comparison", "I love Paris", "Paris"])
}

@Test func storeQueriesSkipExpiredItemsAndHonourIndexAndLimit() throws {
    let clock = ManualClock(testStart)
    let store = try makeStore(clock: clock)
    _ = try store.perform(.index(index: "a", items: [
        item("1", title: "one"), item("2", title: "two", expires: testStart.adding(milliseconds: 1000)), item("3", title: "three"),
    ]))
    _ = try store.perform(.index(index: "b", items: [item("4", title: "four")]))
    #expect(try identifiers(store, #"title == "*""#) == ["1", "2", "3", "4"])
    #expect(try identifiers(store, #"title == "*""#, index: "b") == ["4"])
    #expect(try identifiers(store, #"title == "*""#, limit: 2) == ["1", "2"])
    try clock.advance(to: testStart.adding(milliseconds: 1000))
    #expect(try identifiers(store, #"title == "*""#) == ["1", "3", "4"])
    #expect(try identifiers(store, "expirationDate > $time.now") == [])
}

@Test func queryTextReachesSQLiteOnlyAsBoundValues() throws {
    let store = try makeStore()
    let hostile = "x'); DROP TABLE items; --"
    _ = try store.perform(.index(index: "a", items: [item("1", title: hostile), item("2", title: "plain")]))
    let escaped = hostile.replacingOccurrences(of: "'", with: "\\'")
    #expect(try identifiers(store, "title == '\(escaped)'") == ["1"])
    #expect(try identifiers(store, "mood == '\(escaped)' || * == '\(escaped)'") == ["1"])
    #expect(try store.items(in: "a").count == 2)
}

/// Counts, across a property check's runs, how many queries told items apart.
private final class Tally: @unchecked Sendable {
    var discriminating = 0
}

@Test func storeQueryAgreesWithTheInMemoryEvaluator() async throws {
    let tally = Tally()
    await propertyCheck(count: 300, input: QueryGenerators.expressionAndItems) { pair in
        let (expression, items) = pair
        do {
            let store = try makeStore()
            _ = try store.perform(.index(index: "random", items: items))
            let found = try store.query(expression).map(\.item.uniqueIdentifier)
            let compiled = CompiledQuery(expression, now: testStart)
            let expected = try items.filter { try compiled.matches($0, budget: .unlimited) }.map(\.uniqueIdentifier).sorted()
            #expect(found == expected, "\(expression)")
            if !expected.isEmpty && expected.count < items.count { tally.discriminating += 1 }
        } catch {
            Issue.record("\(expression): \(error)")
        }
    }
    // Agreement on queries that match everything or nothing would prove little.
    #expect(tally.discriminating >= 30, "only \(tally.discriminating) of 300 queries matched some items but not all")
}
