import IndexModel

/// Compiles a query to a SQL condition over a `SQLTarget`.
///
/// Numbers and dates held in columns are compared by SQL itself. Strings are
/// matched by `sightline_text_match` and ordered by `sightline_text_compare`,
/// which apply the modifiers' Unicode folding and word boundaries (SQLite's own
/// LIKE and lower() know ASCII only). Attributes that are not columns, and `*`
/// and `**`, are tested by `sightline_attribute_test` on the encoded attribute
/// set. Every predicate yields 0 or 1, never NULL, so `!` negates exactly as the
/// in-memory evaluator does. The store registers the three functions with
/// `QueryFunctions`.
public enum QuerySQLCompiler {
    public static func compile(_ query: CompiledQuery, target: SQLTarget) -> SQLCondition {
        var compiler = Compiler(target: target)
        let sql = compiler.compile(query.expression)
        return SQLCondition(sql: sql, arguments: compiler.arguments)
    }
}

private struct Compiler {
    let target: SQLTarget
    var arguments: [SQLCondition.Argument] = []

    mutating func bind(_ argument: SQLCondition.Argument) -> String {
        arguments.append(argument)
        return "?"
    }

    mutating func compile(_ expression: QueryExpression) -> String {
        switch expression {
        case .and(let left, let right): "(\(compile(left)) AND \(compile(right)))"
        case .or(let left, let right): "(\(compile(left)) OR \(compile(right)))"
        case .not(let inner): "(NOT \(compile(inner)))"
        case .comparison(let comparison): compile(comparison)
        case .inRange(let range): compile(range)
        }
    }

    mutating func blobTest(_ predicate: QueryExpression) -> String {
        let column = target.attributesColumn
        return "\(QueryFunctions.attributeTest)(\(column), \(bind(.text(predicate.description))))"
    }

    func column(for scope: AttributeScope) -> SQLTarget.Column? {
        guard case .named(let name) = scope else { return nil }
        return target.columns[name]
    }

    mutating func compile(_ comparison: Comparison) -> String {
        guard let column = column(for: comparison.scope) else { return blobTest(.comparison(comparison)) }
        let name = column.name
        let op = comparison.op == .notEqual ? "<>" : (comparison.op == .equal ? "=" : comparison.op.rawValue)
        switch (column.kind, comparison.value) {
        case (.text, .text(let literal)):
            let operand = bind(.text(QueryValue.text(literal).description))
            switch comparison.op {
            case .equal:
                return "\(QueryFunctions.textMatch)(\(name), \(operand))"
            case .notEqual:
                return "(\(name) IS NOT NULL AND NOT \(QueryFunctions.textMatch)(\(name), \(operand)))"
            default:
                return "coalesce(\(QueryFunctions.textCompare)(\(name), \(operand)) \(op) 0, 0)"
            }
        case (.number, .number(let number)):
            return "coalesce(\(name) \(op) \(bind(.real(number))), 0)"
        case (.date, .time(let time)):
            let milliseconds = time.resolve(now: Timestamp(millisecondsSince1970: 0)).millisecondsSince1970
            return "coalesce(\(name) \(op) \(bind(.integer(milliseconds))), 0)"
        default:
            // A value of another kind than the column's is never comparable.
            return "0"
        }
    }

    mutating func compile(_ range: RangePredicate) -> String {
        guard let column = column(for: range.scope) else { return blobTest(.inRange(range)) }
        let name = column.name
        switch (column.kind, range.lower, range.upper) {
        case (.text, .text(let lower), .text(let upper)):
            let low = bind(.text(QueryValue.text(lower).description))
            let high = bind(.text(QueryValue.text(upper).description))
            return "coalesce(\(QueryFunctions.textCompare)(\(name), \(low)) >= 0 AND \(QueryFunctions.textCompare)(\(name), \(high)) <= 0, 0)"
        case (.number, .number(let lower), .number(let upper)):
            return "coalesce(\(name) BETWEEN \(bind(.real(lower))) AND \(bind(.real(upper))), 0)"
        case (.date, .time(let lower), .time(let upper)):
            let epoch = Timestamp(millisecondsSince1970: 0)
            let low = bind(.integer(lower.resolve(now: epoch).millisecondsSince1970))
            let high = bind(.integer(upper.resolve(now: epoch).millisecondsSince1970))
            return "coalesce(\(name) BETWEEN \(low) AND \(high), 0)"
        default:
            return "0"
        }
    }
}
