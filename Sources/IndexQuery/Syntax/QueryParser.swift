/// A recursive-descent parser for the Core Spotlight query language:
///
///     query      := or END
///     or         := and ( "||" and )*
///     and        := unary ( "&&" unary )*
///     unary      := "!" unary | primary
///     primary    := "(" or ")" | range | comparison
///     range      := "InRange" "(" scope "," value "," value ")"
///     comparison := scope ( "==" | "=" | "!=" | "<" | "<=" | ">" | ">=" ) value
///     scope      := NAME | "*" | "**"
///     value      := STRING MODIFIERS? | NUMBER | TIME
///
/// Every error names the column and what was expected there. Nesting, predicate
/// count and length are bounded by `QueryLimits`.
public enum QueryParser {
    /// The attribute names a query compares, each once, with the offset of
    /// its first use: what a caller checks against the names its subjects
    /// answer to. A query that does not lex has none.
    public static func attributeNames(in query: String) -> [(name: String, offset: Int)] {
        guard let tokens = try? QueryLexer.tokens(query) else { return [] }
        var seen = Set<String>()
        var names: [(name: String, offset: Int)] = []
        for token in tokens {
            guard case .identifier(let name) = token.kind, name != "InRange", seen.insert(name).inserted else { continue }
            names.append((name, token.offset))
        }
        return names
    }

    public static func parse(_ query: String) throws(QueryError) -> QueryExpression {
        var parser = Parser(tokens: try QueryLexer.tokens(query))
        let expression = try parser.parseOr(depth: 0)
        let token = parser.current
        guard token.kind == .end else {
            if case .closeParenthesis = token.kind {
                throw QueryError(at: token.offset, "this ) has no matching (")
            }
            if case .identifier(let name) = token.kind, !name.isEmpty,
               name.allSatisfy({ letter in TextModifiers.letters.contains { $0.0 == letter } }) {
                throw QueryError(at: token.offset, "expected &&, || or the end of the query; modifiers must follow the closing quote with no space")
            }
            throw QueryError(at: token.offset, "expected &&, || or the end of the query; found \(token.described)")
        }
        return expression
    }
}

private struct Parser {
    let tokens: [QueryToken]
    var index = 0
    var predicates = 0

    init(tokens: [QueryToken]) {
        self.tokens = tokens
    }

    var current: QueryToken { tokens[index] }

    mutating func advance() { if index < tokens.count - 1 { index += 1 } }

    func checkDepth(_ depth: Int) throws(QueryError) {
        guard depth <= QueryLimits.nestingDepth else {
            throw QueryError(at: current.offset, "the query nests deeper than \(QueryLimits.nestingDepth) levels")
        }
    }

    mutating func parseOr(depth: Int) throws(QueryError) -> QueryExpression {
        var left = try parseAnd(depth: depth)
        while current.kind == .or {
            advance()
            left = .or(left, try parseAnd(depth: depth))
        }
        return left
    }

    mutating func parseAnd(depth: Int) throws(QueryError) -> QueryExpression {
        var left = try parseUnary(depth: depth)
        while current.kind == .and {
            advance()
            left = .and(left, try parseUnary(depth: depth))
        }
        return left
    }

    mutating func parseUnary(depth: Int) throws(QueryError) -> QueryExpression {
        try checkDepth(depth)
        if current.kind == .not {
            advance()
            return .not(try parseUnary(depth: depth + 1))
        }
        return try parsePrimary(depth: depth)
    }

    mutating func parsePrimary(depth: Int) throws(QueryError) -> QueryExpression {
        let token = current
        switch token.kind {
        case .openParenthesis:
            advance()
            let inner = try parseOr(depth: depth + 1)
            guard current.kind == .closeParenthesis else {
                throw QueryError(at: current.offset, "expected ) to close the ( at column \(token.offset + 1); found \(current.described)")
            }
            advance()
            return inner
        case .identifier(let name):
            if index + 1 < tokens.count, tokens[index + 1].kind == .openParenthesis {
                guard name == "InRange" else {
                    throw QueryError(at: token.offset, "unknown function \(name); the only function is InRange(attribute, min, max)")
                }
                return try parseRange()
            }
            return try parseComparison()
        case .star, .doubleStar:
            return try parseComparison()
        case .end:
            throw QueryError(at: token.offset, "expected a predicate such as title == \"Paris\"; the query ends here")
        default:
            throw QueryError(at: token.offset, "expected an attribute, *, **, InRange, ! or (; found \(token.described)")
        }
    }

    mutating func countPredicate(at offset: Int) throws(QueryError) {
        predicates += 1
        guard predicates <= QueryLimits.predicates else {
            throw QueryError(at: offset, "the query has more than \(QueryLimits.predicates) predicates")
        }
    }

    mutating func parseScope() throws(QueryError) -> AttributeScope {
        let token = current
        switch token.kind {
        case .identifier(let name):
            advance()
            return .named(name)
        case .star:
            advance()
            return .anyAttribute
        case .doubleStar:
            advance()
            return .anyAttributeOrContent
        default:
            throw QueryError(at: token.offset, "expected an attribute name, * or **; found \(token.described)")
        }
    }

    mutating func parseComparison() throws(QueryError) -> QueryExpression {
        let start = current.offset
        try countPredicate(at: start)
        let scope = try parseScope()
        guard case .comparison(let op) = current.kind else {
            throw QueryError(at: current.offset, "expected a comparison (==, !=, <, <=, >, >=) after the attribute; found \(current.described)")
        }
        advance()
        let valueToken = current
        let value = try parseValue(after: op.rawValue)
        if op.isOrdering, case .text(let text) = value {
            try Parser.checkOrderable(text, at: valueToken.offset, what: op.rawValue)
        }
        return .comparison(Comparison(scope, op, value))
    }

    mutating func parseRange() throws(QueryError) -> QueryExpression {
        let start = current.offset
        try countPredicate(at: start)
        advance()  // InRange
        advance()  // (
        let scope = try parseScope()
        try expect(.comma, "expected , after the attribute of InRange")
        let lowerToken = current
        let lower = try parseValue(after: "InRange(attribute,")
        try expect(.comma, "expected , between the bounds of InRange")
        let upperToken = current
        let upper = try parseValue(after: "InRange(attribute, min,")
        guard current.kind == .closeParenthesis else {
            throw QueryError(at: current.offset, "expected ) to close InRange; found \(current.described)")
        }
        advance()
        switch (lower, upper) {
        case (.number, .number), (.time, .time):
            break
        case (.text(let low), .text(let high)):
            try Parser.checkOrderable(low, at: lowerToken.offset, what: "InRange")
            try Parser.checkOrderable(high, at: upperToken.offset, what: "InRange")
            guard low.modifiers == high.modifiers else {
                throw QueryError(at: upperToken.offset, "both bounds of InRange must have the same modifiers")
            }
        default:
            throw QueryError(at: upperToken.offset, "the bounds of InRange must be of one kind: two numbers, two $time values or two strings")
        }
        return .inRange(RangePredicate(scope, lower, upper))
    }

    /// Ordering compares whole values: wildcards, `w` and `t` have no meaning there.
    static func checkOrderable(_ text: TextLiteral, at offset: Int, what: String) throws(QueryError) {
        guard !text.hasWildcard else {
            throw QueryError(at: offset, "\(what) compares whole values; wildcards only apply to == and != (escape a literal star as \\*)")
        }
        guard !text.modifiers.contains(.wordBased), !text.modifiers.contains(.tokenized) else {
            throw QueryError(at: offset, "\(what) compares whole values; the w and t modifiers only apply to == and !=")
        }
    }

    mutating func expect(_ kind: QueryToken.Kind, _ message: String) throws(QueryError) {
        guard current.kind == kind else {
            throw QueryError(at: current.offset, "\(message); found \(current.described)")
        }
        advance()
    }

    mutating func parseValue(after what: String) throws(QueryError) -> QueryValue {
        let token = current
        switch token.kind {
        case .text(let text):
            advance()
            return .text(text)
        case .number(let number):
            advance()
            return .number(number)
        case .time(let time):
            advance()
            return .time(time)
        default:
            throw QueryError(at: token.offset, "expected a value after \(what): a \"string\", a 'string', a number or a $time value; found \(token.described)")
        }
    }
}
