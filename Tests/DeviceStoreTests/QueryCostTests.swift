import DeviceStore
import IndexModel
import IndexQuery
import Testing

/// Queries as large as the language allows run, and every run is bounded by
/// its budget (`QueryBudget`): the work a query is charged is counted, not
/// timed, so it is the same on every machine and grows with the data, not
/// faster.
@Suite struct QueryCostTests {
    static func items(_ count: Int, textBytes: Int = 64) -> [SearchableItem] {
        (0..<count).map { number in
            var attributes = AttributeSet()
            // The same title for every item, so that each costs the same.
            attributes.title = "item " + String(repeating: "abcdefghij", count: textBytes / 10)
            attributes[.rating] = .number(Double(number % 5))
            attributes[.custom("mood")] = .string(number.isMultiple(of: 2) ? "calm" : "bright")
            return SearchableItem(uniqueIdentifier: "\(number)", domainIdentifier: "d\(number % 3)", attributes: attributes)
        }
    }

    /// The shapes a query of 256 predicates or 64 levels can take: chains of
    /// one operator, a balanced tree, and nesting that alternates AND, OR
    /// and NOT to the language's deepest. SQLite's parser overflows its
    /// stack on each of them written as nested SQL.
    static func largestQueries() -> [(String, QueryExpression)] {
        let predicates: [QueryExpression] = (0..<QueryLimits.predicates).map { index in
            switch index % 3 {
            case 0: .comparison(Comparison(.named("rating"), .equal, .number(Double(index % 5))))
            case 1: .comparison(Comparison(.named("mood"), .equal, .text(TextLiteral("c*"))))
            default: .comparison(Comparison(.named("title"), .notEqual, .text(TextLiteral("*\(index)"))))
            }
        }
        func balanced(_ slice: ArraySlice<QueryExpression>, and: Bool) -> QueryExpression {
            if slice.count == 1 { return slice.first! }
            let middle = slice.startIndex + slice.count / 2
            let (left, right) = (balanced(slice[..<middle], and: !and), balanced(slice[middle...], and: !and))
            return and ? .and(left, right) : .or(left, right)
        }
        var deep = predicates[0]
        for depth in 1..<QueryLimits.nestingDepth {
            switch depth % 3 {
            case 0: deep = .not(deep)
            case 1: deep = .and(predicates[depth], deep)
            default: deep = .or(deep, predicates[depth])
            }
        }
        return [
            ("or chain", predicates.dropFirst().reduce(predicates[0]) { .or($0, $1) }),
            ("and chain", predicates.dropFirst().reduce(predicates[0]) { .and($0, $1) }),
            ("balanced", balanced(predicates[...], and: true)),
            ("deep", deep),
        ]
    }

    @Test(arguments: largestQueries().map(\.0))
    func everyQueryTheLanguageAllowsCompilesRunsAndAgreesWithTheEvaluator(shape: String) throws {
        let query = try #require(Self.largestQueries().first { $0.0 == shape }?.1)
        // The printed query parses: it is one the language allows.
        #expect(try QueryParser.parse(query.description) == query)
        let store = try makeStore()
        let items = Self.items(40)
        _ = try store.perform(.index(index: "a", items: items))
        let found = try store.query(query).map(\.item.uniqueIdentifier).sorted()
        let compiled = CompiledQuery(query, now: testStart)
        let expected = try items.filter { try compiled.matches($0, budget: .unlimited) }.map(\.uniqueIdentifier).sorted()
        #expect(found == expected)
    }

    /// What a run spends is the count the budget defines, so it is the same
    /// for the same query and data, and twice as much over twice the items,
    /// in memory and through SQL alike.
    @Test func aRunSpendsTheSameUnitsEveryTimeAndTwiceAsManyOverTwiceTheItems() throws {
        let query = try QueryParser.parse(#"** == "*e*j*q*"c || title == "*9*" || rating > 2"#)
        func spent(_ count: Int) throws -> (sql: Int, memory: Int) {
            let store = try makeStore()
            let items = Self.items(count, textBytes: 400)
            _ = try store.perform(.index(index: "a", items: items))
            let sql = QueryBudget(units: .max)
            _ = try store.query(query, budget: sql)
            let memory = QueryBudget(units: .max)
            let compiled = CompiledQuery(query, now: testStart)
            for item in items { _ = try compiled.matches(item, budget: memory) }
            return (sql.spent, memory.spent)
        }
        let small = try spent(50)
        #expect(small.sql > 0 && small.memory > 0)
        #expect(try spent(50) == small)
        let large = try spent(100)
        #expect(large.sql == 2 * small.sql && large.memory == 2 * small.memory, "\(small) \(large)")
    }

    /// Folding a character beyond ASCII costs far more than reading an ASCII
    /// byte, and more again when a modifier folds case or diacritics, so a
    /// value of the same bytes is charged more: a budget bounds the time of
    /// a query over CJK or accented text as it does over ASCII.
    @Test func textBeyondASCIIAndFoldingModifiersAreChargedMorePerByte() throws {
        func spent(title: String, literal: String) throws -> (sql: Int, memory: Int) {
            let store = try makeStore()
            let item = SearchableItem(uniqueIdentifier: "1", attributes: AttributeSet([.title: .string(title)]))
            _ = try store.perform(.index(index: "a", items: [item]))
            let query = try QueryParser.parse("title == " + literal)
            let sql = QueryBudget(units: .max)
            _ = try store.query(query, budget: sql)
            let memory = QueryBudget(units: .max)
            _ = try CompiledQuery(query, now: testStart).matches(item, budget: memory)
            return (sql.spent, memory.spent)
        }
        let ascii = String(repeating: "abcdefghi", count: 100)
        let cjk = String(repeating: "日本語", count: 100)
        #expect(ascii.utf8.count == cjk.utf8.count)
        let asciiPlain = try spent(title: ascii, literal: #""*z""#)
        let cjkPlain = try spent(title: cjk, literal: #""*z""#)
        let cjkFolded = try spent(title: cjk, literal: #""*z"cd"#)
        for path in [\(sql: Int, memory: Int).sql, \.memory] {
            #expect(cjkPlain[keyPath: path] > 10 * asciiPlain[keyPath: path], "\(asciiPlain) \(cjkPlain)")
            #expect(cjkFolded[keyPath: path] > 3 * cjkPlain[keyPath: path], "\(cjkPlain) \(cjkFolded)")
        }
    }

    /// A query past its budget stops with `queryTooExpensive`, saying what
    /// to do, and returns nothing; under a larger budget the same query runs.
    @Test func aQueryPastItsBudgetIsTooExpensiveAndReturnsNothing() throws {
        let store = try makeStore()
        _ = try store.perform(.index(index: "a", items: Self.items(10, textBytes: 4000)))
        let pattern = "*" + "abcdefghijklm".map { String($0) }.joined(separator: "*") + "*z*"
        let query = try QueryParser.parse((0..<10).map { _ in #"** == "\#(pattern)"cd"# }.joined(separator: " || "))
        let error = storeError { _ = try store.query(query, budget: QueryBudget(units: 1_000_000)) }
        #expect(error?.code == .queryTooExpensive)
        #expect(error?.message.hasPrefix("query too expensive") == true, "\(String(describing: error))")
        #expect(try store.query(query, budget: QueryBudget(units: .max)).isEmpty)
        // Predicates on attributes no item has still spend: each lookup, and
        // each decoding of an item's attribute set.
        let absent = try QueryParser.parse((0..<QueryLimits.predicates).map { _ in "nosuch == 1" }.joined(separator: " || "))
        let decoding = storeError { _ = try store.query(absent, budget: QueryBudget(units: 10_000)) }
        #expect(decoding?.code == .queryTooExpensive, "\(String(describing: decoding))")
        // A deadline already past stops the run at its first look at the clock.
        let late = storeError { _ = try store.query(query, budget: QueryBudget(units: .max, deadline: .now)) }
        #expect(late?.code == .queryTooExpensive && late?.message.contains("deadline") == true, "\(String(describing: late))")
    }
}
