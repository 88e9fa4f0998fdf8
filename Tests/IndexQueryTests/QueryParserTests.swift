import IndexModel
import Testing
@testable import IndexQuery

private func parse(_ query: String) throws -> QueryExpression {
    try QueryParser.parse(query)
}

private func title(_ op: ComparisonOperator, _ text: String, _ modifiers: TextModifiers = []) -> QueryExpression {
    .comparison(Comparison(.named("title"), op, .text(TextLiteral(text, modifiers: modifiers))))
}

private func parseError(_ query: String) -> QueryError? {
    do {
        _ = try QueryParser.parse(query)
        return nil
    } catch {
        return error
    }
}

@Test func parsesApplesExamplesFromTheSearchAPISession() throws {
    let first = try parse(#"playCount > 1 && (composer == "beethoven"cwd || composer="mozart"cwd) && InRange(tempo, 40, 80)"#)
    let composer: (String) -> QueryExpression = { name in
        .comparison(Comparison(.named("composer"), .equal,
                               .text(TextLiteral(name, modifiers: [.caseInsensitive, .wordBased, .diacriticInsensitive]))))
    }
    let expected: QueryExpression = .and(
        .and(.comparison(Comparison(.named("playCount"), .greater, .number(1))),
             .or(composer("beethoven"), composer("mozart"))),
        .inRange(RangePredicate(.named("tempo"), .number(40), .number(80))))
    #expect(first == expected)

    let second = try parse(#"* = "bob*"cwd && textContent="project updates"cwdt"#)
    let bob = TextLiteral(pieces: [.literal("bob"), .wildcard], modifiers: [.caseInsensitive, .wordBased, .diacriticInsensitive])
    let content = TextLiteral("project updates", modifiers: [.caseInsensitive, .wordBased, .diacriticInsensitive, .tokenized])
    #expect(second == .and(.comparison(Comparison(.anyAttribute, .equal, .text(bob))),
                           .comparison(Comparison(.named("textContent"), .equal, .text(content)))))

    let table = [
        #"keywords=="search""#, #"keywords!="search""#, "pageCount > 10", "pageCount < 10",
        "InRange(pageCount, 5, 10)", "fileSize > 100 && pageCount > 10", "fileSize > 100 || pageCount > 10",
        "!(fileSize > 100 || pageCount > 10)", #"* == "search""#, #"** == "search""#,
    ]
    for query in table {
        #expect(throws: Never.self, "\(query)") { try parse(query) }
    }
}

@Test func andBindsTighterThanOrAndNotTighterThanAnd() throws {
    let parsed = try parse(#"!title == "a" || title == "b" && title == "c""#)
    #expect(parsed == .or(.not(title(.equal, "a")), .and(title(.equal, "b"), title(.equal, "c"))))
}

@Test func readsEscapesWildcardsAndQuotes() throws {
    let parsed = try parse(#"title == "a\"b\\c\*d*e\n" || title == 'it\'s *all*'"#)
    let double = TextLiteral(pieces: [.literal("a\"b\\c*d"), .wildcard, .literal("e\n")])
    let single = TextLiteral("it's *all*", quote: .single)
    #expect(parsed == .or(.comparison(Comparison(.named("title"), .equal, .text(double))),
                          .comparison(Comparison(.named("title"), .equal, .text(single)))))
}

@Test func readsNumbersAndTimes() throws {
    let parsed = try parse("rating >= -2.5e1 && startDate < $time.today(-3) && dueDate > $time.iso(2026-11-22T10:00:00Z) && endDate <= $time.this_week")
    let iso = ISO8601.parse("2026-11-22T10:00:00Z")!
    #expect(parsed == .and(.and(.and(
        .comparison(Comparison(.named("rating"), .greaterOrEqual, .number(-25))),
        .comparison(Comparison(.named("startDate"), .less, .time(.today(offset: -3))))),
        .comparison(Comparison(.named("dueDate"), .greater, .time(.iso(iso))))),
        .comparison(Comparison(.named("endDate"), .lessOrEqual, .time(.thisWeek(offset: 0))))))
}

/// Each bad query, the column (1-based) the error points at, and words the
/// message must contain.
private let badQueries: [(String, Int, String)] = [
    ("", 1, "expected a predicate"),
    ("title ==", 9, "expected a value after =="),
    (#"title == "Paris"#, 10, "not closed"),
    (#"title == "Paris"x"#, 17, "unknown string modifier 'x'"),
    (#"title == "Paris"cc"#, 18, "given twice"),
    (#"title == "Paris" c"#, 18, "modifiers must follow the closing quote"),
    (#"title "Paris""#, 7, "expected a comparison"),
    (#"(title == "a""#, 14, "expected ) to close the ( at column 1"),
    (#"title == "a")"#, 13, "has no matching ("),
    (#"title == "a" & x"#, 14, "expected &&"),
    (#"title == "a" | x"#, 14, "expected ||"),
    (#"InRange(rating, 1)"#, 18, "expected , between the bounds"),
    (#"InRange(rating, 1, "z")"#, 20, "of one kind"),
    (#"Between(rating, 1, 2)"#, 1, "unknown function Between"),
    (#"title < "a*""#, 9, "wildcards only apply to == and !="),
    (#"title > "a"w"#, 9, "w and t modifiers only apply"),
    ("rating > 1x", 11, "after a number"),
    ("date > $time.tomorrow", 8, "unknown time $time.tomorrow"),
    ("date > $time.today(x)", 20, "whole-number offset"),
    ("date > $time.iso(yesterday)", 18, "ISO 8601"),
    ("date > $now", 8, "unknown variable $now"),
    (#"title == "a\q""#, 12, "unknown escape \\ followed by 'q'"),
    ("*** == \"a\"", 3, "found ***"),
    ("title == \"a\" && # ", 17, "unexpected character '#'"),
]

@Test func invalidQueriesSayWhereAndWhatWasExpected() {
    for (query, column, words) in badQueries {
        do {
            let parsed = try QueryParser.parse(query)
            Issue.record("\(query) parsed as \(parsed)")
        } catch {
            #expect(error.offset + 1 == column, "\(query): \(error)")
            #expect(error.message.contains(words), "\(query): \(error.message)")
        }
    }
}

@Test func renderedErrorPutsACaretUnderTheOffendingColumn() {
    let query = #"title == "a" && rating >> 2"#
    guard let error = parseError(query) else {
        Issue.record("parsed")
        return
    }
    let lines = error.rendered(query: query).split(separator: "\n", omittingEmptySubsequences: false)
    #expect(lines.count == 3)
    #expect(lines[0] == "invalid query at column 25: expected a value after >: a \"string\", a 'string', a number or a $time value; found >")
    #expect(lines[1] == "  " + query)
    let caret = lines[2].firstIndex(of: "^").map { lines[2].distance(from: lines[2].startIndex, to: $0) }
    #expect(caret == 2 + 24)
}

@Test func longQueriesAreShownAsAWindowAroundTheError() {
    let query = String(repeating: #"title == "x" && "#, count: 20) + "title == ?"
    guard let error = parseError(query) else {
        Issue.record("parsed")
        return
    }
    let lines = error.rendered(query: query).split(separator: "\n")
    #expect(lines[1].hasPrefix("  …"))
    let shown = Array(lines[1])
    let caret = Array(lines[2]).firstIndex(of: "^")!
    #expect(shown[caret] == "?")
}

@Test func limitsAreEnforcedWithClearErrors() {
    func message(_ query: String) -> String {
        do {
            _ = try QueryParser.parse(query)
            return "parsed"
        } catch {
            return error.message
        }
    }
    #expect(message(String(repeating: " ", count: QueryLimits.queryCharacters) + "a == 1").contains("characters (Unicode scalars) long; the limit is"))
    let deep = String(repeating: "(", count: QueryLimits.nestingDepth + 1) + "a == 1" + String(repeating: ")", count: QueryLimits.nestingDepth + 1)
    #expect(message(deep).contains("nests deeper than \(QueryLimits.nestingDepth)"))
    let fine = String(repeating: "(", count: QueryLimits.nestingDepth) + "a == 1" + String(repeating: ")", count: QueryLimits.nestingDepth)
    #expect(message(fine) == "parsed")
    #expect(message(String(repeating: "!", count: 500) + "a == 1").contains("nests deeper"))
    let many = Array(repeating: "a == 1", count: QueryLimits.predicates + 1).joined(separator: " || ")
    #expect(message(many).contains("more than \(QueryLimits.predicates) predicates"))
    #expect(message("a == \"" + String(repeating: "x", count: QueryLimits.textCharacters + 1) + "\"").contains("longer than"))
    #expect(message("a == \"" + String(repeating: "x*", count: QueryLimits.wildcards + 1) + "\"").contains("wildcards"))
    #expect(message("d > $time.today(99999999)").contains("offset is larger"))
    #expect(message("d > $time.today(-9223372036854775808)").contains("offset is larger"))
    #expect(message("a > 1e999").contains("out of range"))
}

/// Found by the fuzzer: an unknown escape of a line break or control character
/// put that character into the message, breaking the three-line display and
/// letting terminal controls through.
@Test func errorMessagesNeverCarryControlCharactersFromTheQuery() {
    for escaped in ["\r", "\n", "\u{0B}", "\u{2028}", "\u{1B}"] {
        let query = "\"\\" + escaped
        guard let error = parseError(query) else {
            Issue.record("parsed")
            continue
        }
        #expect(!error.message.contains { $0.isNewline || $0.asciiValue.map { $0 < 0x20 } == true }, "\(error.message)")
        #expect(error.rendered(query: query).split(separator: "\n", omittingEmptySubsequences: false).count == 3)
    }
}
