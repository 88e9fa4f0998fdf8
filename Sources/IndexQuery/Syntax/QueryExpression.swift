import IndexModel

/// A parsed Core Spotlight query: predicates joined by `&&`, `||` and `!`.
///
/// `&&` and `||` are binary and left-associative as parsed, so `a && b && c` is
/// `and(and(a, b), c)`; the printer (`description`) adds parentheses only where
/// the tree needs them, and parsing what it prints gives back the same tree.
public indirect enum QueryExpression: Hashable, Sendable {
    case comparison(Comparison)
    case inRange(RangePredicate)
    case and(QueryExpression, QueryExpression)
    case or(QueryExpression, QueryExpression)
    case not(QueryExpression)
}

/// What a predicate looks at: one named attribute, any attribute (`*`), or any
/// attribute or the item's text content (`**`).
public enum AttributeScope: Hashable, Sendable {
    case named(String)
    case anyAttribute
    case anyAttributeOrContent
}

/// The operator of a comparison; its raw value is how a query writes it.
public enum ComparisonOperator: String, Hashable, Sendable, CaseIterable {
    case equal = "=="
    case notEqual = "!="
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="

    /// True for the operators that order values rather than match them.
    public var isOrdering: Bool { self != .equal && self != .notEqual }
}

/// `attribute op value`.
public struct Comparison: Hashable, Sendable {
    public var scope: AttributeScope
    public var op: ComparisonOperator
    public var value: QueryValue

    public init(_ scope: AttributeScope, _ op: ComparisonOperator, _ value: QueryValue) {
        self.scope = scope
        self.op = op
        self.value = value
    }
}

/// `InRange(attribute, lower, upper)`: lower ≤ value ≤ upper.
public struct RangePredicate: Hashable, Sendable {
    public var scope: AttributeScope
    public var lower: QueryValue
    public var upper: QueryValue

    public init(_ scope: AttributeScope, _ lower: QueryValue, _ upper: QueryValue) {
        self.scope = scope
        self.lower = lower
        self.upper = upper
    }
}

/// A value on the right of a comparison.
public enum QueryValue: Hashable, Sendable {
    case text(TextLiteral)
    /// A finite number.
    case number(Double)
    case time(TimeExpression)
}

/// A quoted string with its modifiers. Double quotes allow `*` wildcards; single
/// quotes match the whole value literally.
public struct TextLiteral: Hashable, Sendable {
    /// The quote the literal is written in: double allows wildcards, single does not.
    public enum Quote: Hashable, Sendable { case double, single }
    /// A run of literal text, or a `*` that matches any run of characters.
    public enum Piece: Hashable, Sendable {
        case literal(String)
        case wildcard
    }

    /// Literal runs and wildcards in order; never two literals in a row, never an
    /// empty literal. Single-quoted literals have no wildcards.
    public var pieces: [Piece]
    public var quote: Quote
    public var modifiers: TextModifiers

    public init(pieces: [Piece], quote: Quote = .double, modifiers: TextModifiers = []) {
        self.pieces = pieces
        self.quote = quote
        self.modifiers = modifiers
    }

    /// A literal without wildcards.
    public init(_ text: String, quote: Quote = .double, modifiers: TextModifiers = []) {
        self.init(pieces: text.isEmpty ? [] : [.literal(text)], quote: quote, modifiers: modifiers)
    }

    public var hasWildcard: Bool { pieces.contains(.wildcard) }
}

/// The string modifiers `c`, `d`, `w` and `t`, written after the closing quote.
public struct TextModifiers: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// `c`: case-insensitive.
    public static let caseInsensitive = TextModifiers(rawValue: 1)
    /// `d`: diacritic-insensitive.
    public static let diacriticInsensitive = TextModifiers(rawValue: 2)
    /// `w`: word-based; the match starts and ends on word boundaries, where a
    /// lower-to-upper case change is also a boundary.
    public static let wordBased = TextModifiers(rawValue: 4)
    /// `t`: tokenized; every word of the value must match a word of the attribute,
    /// in any order.
    public static let tokenized = TextModifiers(rawValue: 8)

    /// The letters in canonical order, as the printer writes them.
    public static let letters: [(Character, TextModifiers)] = [
        ("c", .caseInsensitive), ("d", .diacriticInsensitive), ("w", .wordBased), ("t", .tokenized),
    ]

    public var letters: String {
        String(TextModifiers.letters.filter { contains($0.1) }.map(\.0))
    }
}

/// A `$time` value, resolved against the injected clock when a query runs.
/// Offsets count in the unit of the period: seconds for `now`, days for `today`
/// and `yesterday`, weeks, months, years.
public enum TimeExpression: Hashable, Sendable {
    case now(offset: Int64)
    case today(offset: Int64)
    case yesterday(offset: Int64)
    case thisWeek(offset: Int64)
    case lastWeek(offset: Int64)
    case thisMonth(offset: Int64)
    case thisYear(offset: Int64)
    case iso(Timestamp)
}
