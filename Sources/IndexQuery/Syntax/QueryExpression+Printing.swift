import IndexModel

extension QueryExpression: CustomStringConvertible {
    /// The query in canonical form: `==` for equality, modifiers in `cdwt` order,
    /// parentheses only where the tree needs them. `QueryParser.parse` of this
    /// text gives back an equal expression.
    public var description: String {
        var text = ""
        QueryPrinter.write(self, to: &text)
        return text
    }
}

extension Comparison: CustomStringConvertible {
    public var description: String { QueryExpression.comparison(self).description }
}

extension RangePredicate: CustomStringConvertible {
    public var description: String { QueryExpression.inRange(self).description }
}

extension QueryValue: CustomStringConvertible {
    public var description: String {
        var text = ""
        QueryPrinter.write(self, to: &text)
        return text
    }
}

enum QueryPrinter {
    private static func precedence(_ expression: QueryExpression) -> Int {
        switch expression {
        case .or: 1
        case .and: 2
        case .not: 3
        case .comparison, .inRange: 4
        }
    }

    static func write(_ expression: QueryExpression, to text: inout String) {
        switch expression {
        case .comparison(let comparison):
            write(comparison.scope, to: &text)
            text += " \(comparison.op.rawValue) "
            write(comparison.value, to: &text)
        case .inRange(let range):
            text += "InRange("
            write(range.scope, to: &text)
            text += ", "
            write(range.lower, to: &text)
            text += ", "
            write(range.upper, to: &text)
            text += ")"
        case .and(let left, let right):
            writeOperand(left, parenthesizedBelow: 2, to: &text)
            text += " && "
            writeOperand(right, parenthesizedBelow: 3, to: &text)
        case .or(let left, let right):
            writeOperand(left, parenthesizedBelow: 1, to: &text)
            text += " || "
            writeOperand(right, parenthesizedBelow: 2, to: &text)
        case .not(let inner):
            text += "!"
            writeOperand(inner, parenthesizedBelow: 3, to: &text)
        }
    }

    private static func writeOperand(_ expression: QueryExpression, parenthesizedBelow level: Int, to text: inout String) {
        if precedence(expression) < level {
            text += "("
            write(expression, to: &text)
            text += ")"
        } else {
            write(expression, to: &text)
        }
    }

    static func write(_ scope: AttributeScope, to text: inout String) {
        switch scope {
        case .named(let name): text += name
        case .anyAttribute: text += "*"
        case .anyAttributeOrContent: text += "**"
        }
    }

    static func write(_ value: QueryValue, to text: inout String) {
        switch value {
        case .text(let literal): write(literal, to: &text)
        case .number(let number): text += number.description
        case .time(let time): write(time, to: &text)
        }
    }

    static func write(_ literal: TextLiteral, to text: inout String) {
        // Scalar by scalar, as the lexer reads: escapes stay escapes even when a
        // combining mark follows them.
        let quote: Unicode.Scalar = literal.quote == .double ? "\"" : "'"
        text.unicodeScalars.append(quote)
        for piece in literal.pieces {
            switch piece {
            case .wildcard:
                text += "*"
            case .literal(let run):
                for scalar in run.unicodeScalars {
                    switch scalar {
                    case "\\": text += "\\\\"
                    case "\n": text += "\\n"
                    case "\t": text += "\\t"
                    case "*" where literal.quote == .double: text += "\\*"
                    case quote: text += "\\\(quote)"
                    default: text.unicodeScalars.append(scalar)
                    }
                }
            }
        }
        text.unicodeScalars.append(quote)
        text += literal.modifiers.letters
    }

    static func write(_ time: TimeExpression, to text: inout String) {
        func period(_ name: String, _ offset: Int64) {
            text += "$time." + name
            if offset != 0 { text += "(\(offset))" }
        }
        switch time {
        case .now(let offset): period("now", offset)
        case .today(let offset): period("today", offset)
        case .yesterday(let offset): period("yesterday", offset)
        case .thisWeek(let offset): period("this_week", offset)
        case .lastWeek(let offset): period("last_week", offset)
        case .thisMonth(let offset): period("this_month", offset)
        case .thisYear(let offset): period("this_year", offset)
        case .iso(let timestamp): text += "$time.iso(\(ISO8601.format(timestamp)))"
        }
    }
}
