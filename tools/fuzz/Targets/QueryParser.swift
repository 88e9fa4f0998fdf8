// Fuzz target query-parser: IndexQuery's parser, printer, error display and evaluator.
// Built and run by tools/fuzz/run with Support/FuzzTarget.swift; not part of the Swift package.
//
// For every input: a query that parses must print to text that parses back to an
// equal expression, and its compiled form must evaluate against fixed items; a
// query that fails must render its error as exactly three lines (message, query,
// caret). A broken contract is a fatalError, which libFuzzer records as a crash.
// Its seeds in tools/fuzz/corpus/query-parser/ are written by hand (`seeds()` is empty).
import IndexModel
import IndexQuery

private let now = Timestamp(millisecondsSince1970: 1_795_000_000_000)

private let items: [SearchableItem] = [
    SearchableItem(
        uniqueIdentifier: "1",
        domainIdentifier: "d",
        attributes: AttributeSet([
            .title: .string("MyWindowClass"),
            .keywords: .strings(["Paris", "Frédéric"]),
            .rating: .number(3),
            .startDate: .date(Timestamp(millisecondsSince1970: 1_795_000_000_000)),
            .custom("textContent"): .string("project updates"),
        ])
    ),
    SearchableItem(
        uniqueIdentifier: "2",
        domainIdentifier: "d.e",
        attributes: AttributeSet([
            .title: .string("Élan vital — naïve café"),
            .rating: .number(-0.5),
            .supportsPhoneCall: .bool(true),
            .custom("composer"): .string("Beethoven"),
            .custom("tempo"): .number(60),
        ]),
        expirationDate: Timestamp(millisecondsSince1970: -86_400_000)
    ),
    SearchableItem(uniqueIdentifier: "3"),
]

enum Target {
    static func seeds() throws -> [(String, [UInt8])] { [] }

    static func run(_ bytes: [UInt8]) {
        let query = String(decoding: bytes, as: UTF8.self)
        do {
            let expression = try QueryParser.parse(query)
            let printed = expression.description
            do {
                let reparsed = try QueryParser.parse(printed)
                guard reparsed == expression else {
                    fatalError("round trip changed the expression\n  query:    \(String(reflecting: query))\n  printed:  \(String(reflecting: printed))\n  reprints: \(String(reflecting: reparsed.description))")
                }
            } catch {
                fatalError("printed query does not parse\n  query:   \(String(reflecting: query))\n  printed: \(String(reflecting: printed))\n  error:   \(error)")
            }
            let compiled = CompiledQuery(expression, now: now)
            // A run may stop on its budget, never trap.
            let budget = QueryBudget(units: 50_000_000)
            for item in items { _ = try? compiled.matches(item, budget: budget) }
        } catch {
            let rendered = error.rendered(query: query)
            let lines = rendered.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
            guard lines.count == 3 else {
                fatalError("rendered error has \(lines.count) lines, not 3\n  query:    \(String(reflecting: query))\n  rendered: \(String(reflecting: rendered))")
            }
        }
    }
}
