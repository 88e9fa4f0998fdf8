import IndexModel
import PropertyBased
import IndexQuery

/// Random queries and random items for the property tests. Attribute names and
/// string pieces come from small pools so that random queries often match random
/// items; the pieces include quotes, backslashes, stars, diacritics, case
/// changes and non-Latin scripts.
public enum QueryGenerators {
    public static let expression = Generator<QueryExpression, Shrink.None<QueryExpression>>(run: { rng in
        RandomQueries.expression(&rng, depth: 0)
    })

    public static let expressionAndItems = Generator<(QueryExpression, [SearchableItem]), Shrink.None<(QueryExpression, [SearchableItem])>>(run: { rng in
        let expression = RandomQueries.expression(&rng, depth: 0)
        let items = (0..<Int.random(in: 1...12, using: &rng)).map { RandomQueries.item(&rng, number: $0) }
        return (expression, items)
    })
}

public enum RandomQueries {
    static let names = ["title", "displayName", "contentDescription", "keywords", "rating", "rankingHint",
                        "startDate", "supportsNavigation", "mood", "textContent", "uniqueIdentifier", "domainIdentifier"]
    static let words = ["Paris", "paris", "Frédéric", "frederic", "MyWindowClass", "NSWindow", "Window", "window",
                        "I love Paris", "paris-france.jpg", "Comparison", "Straße", "日本", "a*b", "it's", "say \"hi\"",
                        "back\\slash", "x", "", "Ünïcödé", "e\u{301}", "é", "bob", "Bobby Tables", "project updates",
                        "tab\t\u{301}", "\u{301}"]
    /// The words as identifiers may hold them: a line, without the tab.
    static let lineWords = words.map { word in
        String(String.UnicodeScalarView(word.unicodeScalars.map { $0 == "\t" ? " " : $0 }))
    }
    static let instant = Timestamp(millisecondsSince1970: 1_795_000_000_000)

    public static func expression(_ rng: inout some RandomNumberGenerator, depth: Int) -> QueryExpression {
        let choice = depth >= 4 ? Int.random(in: 0...1, using: &rng) : Int.random(in: 0...5, using: &rng)
        switch choice {
        case 0: return .comparison(comparison(&rng))
        case 1: return .inRange(range(&rng))
        case 2: return .and(expression(&rng, depth: depth + 1), expression(&rng, depth: depth + 1))
        case 3: return .or(expression(&rng, depth: depth + 1), expression(&rng, depth: depth + 1))
        case 4: return .not(expression(&rng, depth: depth + 1))
        default: return .comparison(comparison(&rng))
        }
    }

    static func scope(_ rng: inout some RandomNumberGenerator) -> AttributeScope {
        switch Int.random(in: 0...9, using: &rng) {
        case 0: .anyAttribute
        case 1: .anyAttributeOrContent
        default: .named(names.randomElement(using: &rng)!)
        }
    }

    static func comparison(_ rng: inout some RandomNumberGenerator) -> Comparison {
        let op = ComparisonOperator.allCases.randomElement(using: &rng)!
        let value: QueryValue
        switch Int.random(in: 0...3, using: &rng) {
        case 0, 1: value = .text(text(&rng, orderable: op.isOrdering))
        case 2: value = .number(number(&rng))
        default: value = .time(time(&rng))
        }
        return Comparison(scope(&rng), op, value)
    }

    static func range(_ rng: inout some RandomNumberGenerator) -> RangePredicate {
        switch Int.random(in: 0...2, using: &rng) {
        case 0:
            return RangePredicate(scope(&rng), .number(number(&rng)), .number(number(&rng)))
        case 1:
            return RangePredicate(scope(&rng), .time(time(&rng)), .time(time(&rng)))
        default:
            let low = text(&rng, orderable: true)
            var high = text(&rng, orderable: true)
            high.modifiers = low.modifiers
            return RangePredicate(scope(&rng), .text(low), .text(high))
        }
    }

    static func text(_ rng: inout some RandomNumberGenerator, orderable: Bool) -> TextLiteral {
        var modifiers: TextModifiers = []
        for (_, modifier) in TextModifiers.letters where Bool.random(using: &rng) {
            if orderable && (modifier == .wordBased || modifier == .tokenized) { continue }
            modifiers.insert(modifier)
        }
        let quote: TextLiteral.Quote = !orderable && Int.random(in: 0...3, using: &rng) == 0 ? .single : .double
        var pieces: [TextLiteral.Piece] = []
        for _ in 0..<Int.random(in: 0...3, using: &rng) {
            if quote == .double && !orderable && Int.random(in: 0...2, using: &rng) == 0 {
                pieces.append(.wildcard)
            } else {
                let word = words.randomElement(using: &rng)!
                if word.isEmpty { continue }
                if case .literal(let previous) = pieces.last {
                    pieces[pieces.count - 1] = .literal(previous + word)
                } else {
                    pieces.append(.literal(word))
                }
            }
        }
        return TextLiteral(pieces: pieces, quote: quote, modifiers: modifiers)
    }

    static func number(_ rng: inout some RandomNumberGenerator) -> Double {
        switch Int.random(in: 0...3, using: &rng) {
        case 0: Double(Int.random(in: -3...6, using: &rng))
        case 1: Double(Int.random(in: -100...100, using: &rng)) / 8
        case 2: Double.random(in: -1e300...1e300, using: &rng)
        default: Double(bitPattern: UInt64.random(in: 0...UInt64.max, using: &rng) & 0x7FEF_FFFF_FFFF_FFFF)
        }
    }

    static func time(_ rng: inout some RandomNumberGenerator) -> TimeExpression {
        let offset = Int64.random(in: -3...3, using: &rng)
        switch Int.random(in: 0...7, using: &rng) {
        case 0: return .now(offset: offset * 3600)
        case 1: return .today(offset: offset)
        case 2: return .yesterday(offset: offset)
        case 3: return .thisWeek(offset: offset)
        case 4: return .lastWeek(offset: offset)
        case 5: return .thisMonth(offset: offset)
        case 6: return .thisYear(offset: offset)
        default:
            return .iso(instant.adding(milliseconds: Int64.random(in: -40...40, using: &rng) * 86_400_000))
        }
    }

    public static func item<R: RandomNumberGenerator>(_ rng: inout R, number: Int) -> SearchableItem {
        var values: [AttributeKey: AttributeValue] = [:]
        func maybe(_ key: AttributeKey, _ make: (inout R) -> AttributeValue) {
            if Int.random(in: 0...2, using: &rng) > 0 { values[key] = make(&rng) }
        }
        func phrase(_ rng: inout R) -> String {
            (0..<Int.random(in: 1...3, using: &rng)).map { _ in words.randomElement(using: &rng)! }
                .joined(separator: [" ", "", "-", "_"].randomElement(using: &rng)!)
        }
        maybe(.title) { .string(phrase(&$0)) }
        maybe(.displayName) { .string(phrase(&$0)) }
        maybe(.contentDescription) { .string(phrase(&$0)) }
        maybe(.keywords) { rng in .strings((0..<Int.random(in: 0...3, using: &rng)).map { _ in phrase(&rng) }) }
        maybe(.rating) { .number(Double(Int.random(in: -3...6, using: &$0))) }
        maybe(.rankingHint) { .number(Double(Int.random(in: 0...8, using: &$0)) / 8) }
        maybe(.startDate) { .date(instant.adding(milliseconds: Int64.random(in: -40...40, using: &$0) * 86_400_000)) }
        maybe(.supportsNavigation) { .bool(Bool.random(using: &$0)) }
        maybe(.custom("mood")) { rng in
            switch Int.random(in: 0...2, using: &rng) {
            case 0: .string(phrase(&rng))
            case 1: .number(Double(Int.random(in: -3...6, using: &rng)))
            default: .date(instant.adding(milliseconds: Int64.random(in: -40...40, using: &rng) * 3_600_000))
            }
        }
        maybe(.custom(textContentAttribute)) { .string(phrase(&$0)) }
        let domain = Bool.random(using: &rng) ? lineWords.filter { !$0.isEmpty }.randomElement(using: &rng)! : nil
        return SearchableItem(uniqueIdentifier: "item-\(number)-" + lineWords.randomElement(using: &rng)!,
                              domainIdentifier: domain, attributes: AttributeSet(values))
    }
}
