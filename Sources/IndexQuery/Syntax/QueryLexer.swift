import IndexModel

/// Splits a query into tokens. Strings are read whole, with their escapes,
/// wildcards and modifiers; `$time` values are read whole, with their offset.
///
/// The lexer reads Unicode scalars, not characters: a combining mark after an
/// escape (`\t` then U+0301) or after a quote would otherwise fuse with it into
/// one character and change what the query says. Offsets count scalars.
struct QueryLexer {
    private let characters: [Unicode.Scalar]
    private var position = 0

    init(_ query: String) {
        characters = Array(query.unicodeScalars)
    }

    static func tokens(_ query: String) throws(QueryError) -> [QueryToken] {
        var lexer = QueryLexer(query)
        guard lexer.characters.count <= QueryLimits.queryCharacters else {
            throw QueryError(at: QueryLimits.queryCharacters,
                             "the query is \(lexer.characters.count) characters (Unicode scalars) long; the limit is \(QueryLimits.queryCharacters)")
        }
        var tokens: [QueryToken] = []
        while true {
            let token = try lexer.next()
            tokens.append(token)
            if token.kind == .end { return tokens }
        }
    }

    private func peek(_ ahead: Int = 0) -> Unicode.Scalar? {
        let index = position + ahead
        return index < characters.count ? characters[index] : nil
    }

    private mutating func next() throws(QueryError) -> QueryToken {
        while let character = peek(), character.properties.isWhitespace { position += 1 }
        let start = position
        guard let character = peek() else { return QueryToken(kind: .end, offset: start) }
        func token(_ kind: QueryToken.Kind, length: Int) -> QueryToken {
            position += length
            return QueryToken(kind: kind, offset: start)
        }
        switch character {
        case "(": return token(.openParenthesis, length: 1)
        case ")": return token(.closeParenthesis, length: 1)
        case ",": return token(.comma, length: 1)
        case "*":
            if peek(1) == "*" {
                if peek(2) == "*" { throw QueryError(at: start + 2, "expected an attribute, * or **; found ***") }
                return token(.doubleStar, length: 2)
            }
            return token(.star, length: 1)
        case "&":
            guard peek(1) == "&" else { throw QueryError(at: start, "expected && (a single & is not an operator)") }
            return token(.and, length: 2)
        case "|":
            guard peek(1) == "|" else { throw QueryError(at: start, "expected || (a single | is not an operator)") }
            return token(.or, length: 2)
        case "!":
            return peek(1) == "=" ? token(.comparison(.notEqual), length: 2) : token(.not, length: 1)
        case "=":
            // Apple's own examples write a single `=`; it means `==`.
            return peek(1) == "=" ? token(.comparison(.equal), length: 2) : token(.comparison(.equal), length: 1)
        case "<":
            return peek(1) == "=" ? token(.comparison(.lessOrEqual), length: 2) : token(.comparison(.less), length: 1)
        case ">":
            return peek(1) == "=" ? token(.comparison(.greaterOrEqual), length: 2) : token(.comparison(.greater), length: 1)
        case "\"", "'":
            return QueryToken(kind: .text(try readText()), offset: start)
        case "$":
            return QueryToken(kind: .time(try readTime()), offset: start)
        default:
            if QueryLexer.isDigit(character) || (character == "-" && peek(1).map(QueryLexer.isDigit) == true) {
                return QueryToken(kind: .number(try readNumber()), offset: start)
            }
            if QueryLexer.startsName(character) {
                var name = ""
                while let next = peek(), QueryLexer.continuesName(next) {
                    name.unicodeScalars.append(next)
                    position += 1
                }
                return QueryToken(kind: .identifier(name), offset: start)
            }
            throw QueryError(at: start, "unexpected character \(QueryLexer.quoted(character))")
        }
    }

    static func isDigit(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value >= 0x30 && scalar.value <= 0x39
    }

    static func startsName(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "_" || scalar.properties.isAlphabetic
    }

    /// Letters, digits, `_` and `.`, and combining marks, so that a name written
    /// with decomposed accents is one name.
    static func continuesName(_ scalar: Unicode.Scalar) -> Bool {
        if scalar == "_" || scalar == "." || scalar.properties.isAlphabetic || scalar.properties.numericType != nil {
            return true
        }
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .spacingMark, .enclosingMark: return true
        default: return false
        }
    }

    /// A scalar for an error message: printable ASCII as is, anything else as its
    /// code point, so that no terminal control reaches the user's screen.
    static func quoted(_ scalar: Unicode.Scalar) -> String {
        if scalar.value >= 0x20, scalar.value < 0x7F { return "'\(scalar)'" }
        return "U+" + String(scalar.value, radix: 16, uppercase: true)
    }

    // MARK: Strings

    private mutating func readText() throws(QueryError) -> TextLiteral {
        let open = position
        let quoteCharacter = characters[position]
        let quote: TextLiteral.Quote = quoteCharacter == "\"" ? .double : .single
        position += 1
        var pieces: [TextLiteral.Piece] = []
        var literal = ""
        var length = 0
        var wildcards = 0
        func flush() {
            if !literal.isEmpty { pieces.append(.literal(literal)) }
            literal = ""
        }
        while true {
            guard let character = peek() else {
                throw QueryError(at: open, "this string is not closed; expected \(quoteCharacter) before the end of the query")
            }
            let at = position
            position += 1
            if character == quoteCharacter { break }
            guard character.value != 0 else {
                // No store can hold a NUL (`TextRule`), so none can match one.
                throw QueryError(at: at, "a string holds U+0, a NUL character, which no text may hold")
            }
            var resolved = character
            if character == "\\" {
                guard let escaped = peek() else {
                    throw QueryError(at: at, "a \\ at the end of the query escapes nothing")
                }
                position += 1
                switch escaped {
                case "\\", "\"", "'", "*": resolved = escaped
                case "n": resolved = "\n"
                case "t": resolved = "\t"
                default:
                    throw QueryError(at: at, "unknown escape \\ followed by \(QueryLexer.quoted(escaped)); expected \\\\, \\\", \\', \\* , \\n or \\t")
                }
            } else if character == "*" && quote == .double {
                wildcards += 1
                guard wildcards <= QueryLimits.wildcards else {
                    throw QueryError(at: at, "more than \(QueryLimits.wildcards) wildcards in one string")
                }
                flush()
                pieces.append(.wildcard)
                continue
            }
            length += 1
            guard length <= QueryLimits.textCharacters else {
                throw QueryError(at: at, "this string is longer than \(QueryLimits.textCharacters) characters")
            }
            literal.unicodeScalars.append(resolved)
        }
        flush()
        var modifiers: TextModifiers = []
        while let character = peek(), QueryLexer.continuesName(character) {
            guard let modifier = TextModifiers.letters.first(where: { $0.0.unicodeScalars.first == character })?.1 else {
                throw QueryError(at: position, "unknown string modifier \(QueryLexer.quoted(character)); expected c, d, w or t")
            }
            guard !modifiers.contains(modifier) else {
                throw QueryError(at: position, "the modifier \(character) is given twice")
            }
            modifiers.insert(modifier)
            position += 1
        }
        return TextLiteral(pieces: pieces, quote: quote, modifiers: modifiers)
    }

    // MARK: Numbers

    private mutating func readNumber() throws(QueryError) -> Double {
        let start = position
        var text = ""
        func digits() {
            while let character = peek(), QueryLexer.isDigit(character) {
                text.unicodeScalars.append(character)
                position += 1
            }
        }
        if peek() == "-" {
            text.append("-")
            position += 1
        }
        digits()
        if peek() == ".", let after = peek(1), QueryLexer.isDigit(after) {
            text.append(".")
            position += 1
            digits()
        }
        if let e = peek(), e == "e" || e == "E" {
            var ahead = 1
            if let sign = peek(1), sign == "+" || sign == "-" { ahead = 2 }
            if let digit = peek(ahead), QueryLexer.isDigit(digit) {
                for _ in 0..<ahead {
                    text.unicodeScalars.append(peek()!)
                    position += 1
                }
                digits()
            }
        }
        if let after = peek(), QueryLexer.continuesName(after) {
            throw QueryError(at: position, "unexpected \(QueryLexer.quoted(after)) after a number")
        }
        guard let value = Double(text), value.isFinite else {
            throw QueryError(at: start, "this number is out of range")
        }
        return value
    }

    // MARK: Times

    private static let timeNames: [(String, @Sendable (Int64) -> TimeExpression)] = [
        ("now", { .now(offset: $0) }),
        ("today", { .today(offset: $0) }),
        ("yesterday", { .yesterday(offset: $0) }),
        ("this_week", { .thisWeek(offset: $0) }),
        ("last_week", { .lastWeek(offset: $0) }),
        ("this_month", { .thisMonth(offset: $0) }),
        ("this_year", { .thisYear(offset: $0) }),
    ]

    static let timeNameList = "$time.now, $time.today, $time.yesterday, $time.this_week, $time.last_week, "
        + "$time.this_month, $time.this_year or $time.iso(…)"

    private mutating func readTime() throws(QueryError) -> TimeExpression {
        let start = position
        position += 1
        var name = ""
        while let character = peek(), character == "_" || character == "." || (character.isASCII && character.properties.isAlphabetic) {
            name.unicodeScalars.append(character)
            position += 1
        }
        guard name.hasPrefix("time.") else {
            throw QueryError(at: start, "unknown variable $\(name); expected \(QueryLexer.timeNameList)")
        }
        let period = String(name.dropFirst(5))
        if period == "iso" {
            guard peek() == "(" else { throw QueryError(at: position, "expected ( after $time.iso") }
            position += 1
            let dateStart = position
            var text = ""
            while let character = peek(), character != ")" {
                text.unicodeScalars.append(character)
                position += 1
            }
            guard peek() == ")" else { throw QueryError(at: dateStart, "expected ) to close $time.iso(") }
            position += 1
            guard let timestamp = ISO8601.parse(text.trimmingWhitespace) else {
                throw QueryError(at: dateStart, "expected an ISO 8601 date-time such as 2026-11-22T09:30:00Z")
            }
            return .iso(timestamp)
        }
        guard let make = QueryLexer.timeNames.first(where: { $0.0 == period })?.1 else {
            throw QueryError(at: start, "unknown time $\(name); expected \(QueryLexer.timeNameList)")
        }
        guard peek() == "(" else { return make(0) }
        position += 1
        while let character = peek(), character.properties.isWhitespace { position += 1 }
        let numberStart = position
        var text = ""
        if let sign = peek(), sign == "-" || sign == "+" {
            text.unicodeScalars.append(sign)
            position += 1
        }
        while let digit = peek(), QueryLexer.isDigit(digit) {
            text.unicodeScalars.append(digit)
            position += 1
        }
        while let character = peek(), character.properties.isWhitespace { position += 1 }
        guard let offset = Int64(text), peek() == ")" else {
            throw QueryError(at: numberStart, "expected a whole-number offset and ) after $\(name)(")
        }
        guard offset.magnitude <= QueryLimits.timeOffset.magnitude else {
            throw QueryError(at: numberStart, "the offset is larger than \(QueryLimits.timeOffset)")
        }
        position += 1
        return make(offset)
    }
}

extension String {
    var trimmingWhitespace: String {
        var slice = Substring(self)
        while let first = slice.first, first.isWhitespace { slice = slice.dropFirst() }
        while let last = slice.last, last.isWhitespace { slice = slice.dropLast() }
        return String(slice)
    }
}
