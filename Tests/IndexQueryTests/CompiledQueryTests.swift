import IndexModel
import Testing
@testable import IndexQuery

private let now = ISO8601.parse("2026-11-22T15:30:00Z")!  // a Sunday

private func item(_ values: [AttributeKey: AttributeValue], domain: String? = nil) -> SearchableItem {
    SearchableItem(uniqueIdentifier: "id-1", domainIdentifier: domain, attributes: AttributeSet(values))
}

private func holds(_ query: String, _ subject: SearchableItem) throws -> Bool {
    try CompiledQuery(try QueryParser.parse(query), now: now).matches(subject, budget: .unlimited)
}

@Test func notEqualNeedsTheAttributeButNotMatchesEverythingElse() throws {
    let titled = item([.title: .string("Paris")])
    let untitled = item([.rating: .number(3)])
    #expect(try holds(#"title != "London""#, titled))
    #expect(try !holds(#"title != "Paris""#, titled))
    #expect(try !holds(#"title != "London""#, untitled))
    #expect(try !holds(#"title == "London""#, untitled))
    #expect(try holds(#"!(title == "London")"#, untitled))
}

@Test func listsMatchElementByElement() throws {
    let tagged = item([.keywords: .strings(["search", "Spotlight"])])
    #expect(try holds(#"keywords == "spotlight"c"#, tagged))
    #expect(try !holds(#"keywords != "search""#, tagged))
    #expect(try holds(#"keywords != "other""#, tagged))
    #expect(try holds(#"keywords < "t""#, tagged))
}

@Test func valuesOfAnotherKindNeverMatch() throws {
    let subject = item([.title: .string("5"), .rating: .number(5), .startDate: .date(now), .supportsNavigation: .bool(true)])
    #expect(try !holds("title == 5", subject))
    #expect(try !holds(#"rating == "5""#, subject))
    #expect(try !holds("rating != $time.now", subject))
    #expect(try holds("rating == 5 && rating >= 5 && rating <= 5 && rating > 4.5 && rating < 6", subject))
    #expect(try holds("supportsNavigation == 1 && supportsNavigation != 0", subject))
    #expect(try holds("startDate == $time.now && InRange(startDate, $time.today, $time.today(1))", subject))
    #expect(try !holds("startDate < $time.today", subject))
}

@Test func anyAttributeLooksAtEveryAttributeAndDoubleStarAlsoAtContent() throws {
    let subject = item([.title: .string("Notes"), .custom("mood"): .string("sunny"),
                        .custom(textContentAttribute): .string("meeting minutes")])
    #expect(try holds(#"* == "sunny""#, subject))
    #expect(try !holds(#"* == "meeting*""#, subject))
    #expect(try holds(#"** == "meeting*""#, subject))
    #expect(try holds(#"textContent == "*minutes""#, subject))
}

@Test func itemPropertiesAreQueryableBesideAttributes() throws {
    let subject = SearchableItem(uniqueIdentifier: "note-7", domainIdentifier: "work",
                                 attributes: AttributeSet([.title: .string("x")]),
                                 expirationDate: now.adding(milliseconds: 86_400_000))
    #expect(try holds(#"uniqueIdentifier == "note-*" && domainIdentifier == "work""#, subject))
    #expect(try holds("expirationDate > $time.now", subject))
}

@Test func stringOrderingFoldsWhenAsked() throws {
    let subject = item([.title: .string("banana")])
    #expect(try holds(#"title > "apple" && title < "cherry""#, subject))
    #expect(try !holds(#"title < "Cherry""#, subject))
    #expect(try holds(#"title < "Cherry"c"#, subject))
    #expect(try holds(#"InRange(title, "B"c, "C"c)"#, subject))
    #expect(try !holds(#"InRange(title, "B", "C")"#, subject))
}

@Test func timesResolveAgainstTheInjectedClock() {
    func at(_ time: TimeExpression) -> String { ISO8601.format(time.resolve(now: now)) }
    #expect(at(.now(offset: 0)) == "2026-11-22T15:30:00Z")
    #expect(at(.now(offset: -90)) == "2026-11-22T15:28:30Z")
    #expect(at(.today(offset: 0)) == "2026-11-22T00:00:00Z")
    #expect(at(.today(offset: 1)) == "2026-11-23T00:00:00Z")
    #expect(at(.yesterday(offset: 0)) == "2026-11-21T00:00:00Z")
    #expect(at(.thisWeek(offset: 0)) == "2026-11-16T00:00:00Z")
    #expect(at(.lastWeek(offset: 0)) == "2026-11-09T00:00:00Z")
    #expect(at(.thisWeek(offset: 1)) == "2026-11-23T00:00:00Z")
    #expect(at(.thisMonth(offset: 0)) == "2026-11-01T00:00:00Z")
    #expect(at(.thisMonth(offset: 2)) == "2027-01-01T00:00:00Z")
    #expect(at(.thisMonth(offset: -11)) == "2025-12-01T00:00:00Z")
    #expect(at(.thisYear(offset: 0)) == "2026-01-01T00:00:00Z")
    #expect(at(.thisYear(offset: -1)) == "2025-01-01T00:00:00Z")
    // Before 1970 the periods still start at midnight and on Mondays.
    let early = ISO8601.parse("1969-12-31T23:00:00Z")!
    #expect(ISO8601.format(TimeExpression.today(offset: 0).resolve(now: early)) == "1969-12-31T00:00:00Z")
    #expect(ISO8601.format(TimeExpression.thisWeek(offset: 0).resolve(now: early)) == "1969-12-29T00:00:00Z")
}
