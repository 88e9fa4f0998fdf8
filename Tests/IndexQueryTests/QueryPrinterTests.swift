import IndexModel
import PropertyBased
import Testing
@testable import IndexQuery
import QueryTestSupport

@Test func printsCanonicalForm() throws {
    let parsed = try QueryParser.parse(#"(a = "x"wc || b != 'y*') && !(c >= 2 && d < $time.today(-1)) && InRange(e, $time.iso(2026-01-02T03:04:05.500Z), $time.now)"#)
    #expect(parsed.description == #"(a == "x"cw || b != 'y*') && !(c >= 2.0 && d < $time.today(-1)) && InRange(e, $time.iso(2026-01-02T03:04:05.500Z), $time.now)"#)
}

@Test func printingKeepsRightNestedTreesApart() throws {
    let tree: QueryExpression = .and(.comparison(Comparison(.named("a"), .equal, .number(1))),
                                     .and(.comparison(Comparison(.named("b"), .equal, .number(2))),
                                          .comparison(Comparison(.named("c"), .equal, .number(3)))))
    #expect(tree.description == "a == 1.0 && (b == 2.0 && c == 3.0)")
    #expect(try QueryParser.parse(tree.description) == tree)
}

@Test func parsingWhatWasPrintedGivesTheSameQuery() async {
    await propertyCheck(count: 2000, input: QueryGenerators.expression) { expression in
        let printed = expression.description
        do {
            let reparsed = try QueryParser.parse(printed)
            #expect(reparsed == expression, "\(printed)")
        } catch {
            Issue.record("\(printed) did not parse: \(error)")
        }
    }
}

/// Found by the fuzzer: a combining mark after a tab fused, in the printed form,
/// with the escape's letter (`\t` + U+0301 read as `\` + "t́"), so the printed
/// query no longer parsed. The lexer now reads scalars.
@Test func escapesSurviveCombiningMarksThatFollowThem() throws {
    for text in ["\t\u{301}", "\n\u{301}", "\\\u{301}", "*\u{301}", "\"\u{301}", "\u{301}", "a\u{301}\u{302}"] {
        for quote in [TextLiteral.Quote.double, .single] {
            let literal = TextLiteral(pieces: [.literal(text)], quote: quote, modifiers: [.caseInsensitive])
            let expression = QueryExpression.comparison(Comparison(.named("title"), .equal, .text(literal)))
            #expect(try QueryParser.parse(expression.description) == expression, "\(expression.description.debugDescription)")
        }
    }
}
