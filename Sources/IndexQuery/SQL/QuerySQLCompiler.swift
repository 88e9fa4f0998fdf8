import IndexModel

/// Compiles a query to a SQL condition over a `SQLTarget`.
///
/// Numbers and dates held in columns are compared by SQL itself. Strings are
/// matched by `sightline_text_match` and ordered by `sightline_text_compare`,
/// which apply the modifiers' Unicode folding and word boundaries (SQLite's own
/// LIKE and lower() know ASCII only). Attributes that are not columns, and `*`
/// and `**`, are tested by `sightline_attribute_test` on the encoded attribute
/// set. Every predicate yields 0 or 1, never NULL, so `!` negates exactly as the
/// in-memory evaluator does. The store registers the functions with
/// `QueryFunctions`.
///
/// Every query the language allows compiles to SQL that SQLite's parser
/// takes. Its parser stack holds 100 entries, and each level of nesting
/// takes several (a condition nested 22 levels of `(… AND (… OR …))` deep
/// overflows it), so a chain of one operator (`a || b || c`, 256
/// predicates) is written flat, and a part nested deeper than
/// `maximumDepth` levels is handed whole to `sightline_subject_test`,
/// which evaluates it in memory over the row.
public enum QuerySQLCompiler {
    /// The deepest nesting of AND, OR and NOT written as SQL.
    public static let maximumDepth = 8

    public static func compile(_ query: CompiledQuery, target: SQLTarget) -> SQLCondition {
        var compiler = Compiler(target: target)
        let sql = compiler.compile(query.expression, depth: 0)
        return SQLCondition(sql: sql, arguments: compiler.arguments, inMemory: compiler.inMemory)
    }
}

private struct Compiler {
    let target: SQLTarget
    var arguments: [SQLCondition.Argument] = []
    var inMemory: [CompiledQuery] = []

    mutating func bind(_ argument: SQLCondition.Argument) -> String {
        arguments.append(argument)
        return "?"
    }

    mutating func compile(_ expression: QueryExpression, depth: Int) -> String {
        switch expression {
        case .and, .or, .not:
            guard depth < QuerySQLCompiler.maximumDepth else { return subjectTest(expression) }
        case .comparison, .inRange:
            break
        }
        switch expression {
        case .and:
            return "(" + Compiler.chain(expression, isAnd: true).map { compile($0, depth: depth + 1) }.joined(separator: " AND ") + ")"
        case .or:
            return "(" + Compiler.chain(expression, isAnd: false).map { compile($0, depth: depth + 1) }.joined(separator: " OR ") + ")"
        case .not(let inner): return "(NOT \(compile(inner, depth: depth + 1)))"
        case .comparison(let comparison): return compile(comparison)
        case .inRange(let range): return compile(range)
        }
    }

    /// The operands of a chain of one operator, in order: `a && b && c`
    /// (parsed as `(a && b) && c`) is a, b and c. Walked with a stack, as a
    /// chain may be 256 predicates long.
    static func chain(_ expression: QueryExpression, isAnd: Bool) -> [QueryExpression] {
        var operands: [QueryExpression] = []
        var pending = [expression]
        while let next = pending.popLast() {
            switch (next, isAnd) {
            case (.and(let left, let right), true), (.or(let left, let right), false):
                pending.append(right)
                pending.append(left)
            default:
                operands.append(next)
            }
        }
        return operands
    }

    /// `expression`, evaluated in memory over the row
    /// (`QueryFunctions.subjectTest`): its number in `inMemory` is bound.
    mutating func subjectTest(_ expression: QueryExpression) -> String {
        // Its times are resolved already: the instant given here is unused.
        inMemory.append(CompiledQuery(expression, now: Timestamp(millisecondsSince1970: 0)))
        let columns = target.columns.keys.sorted().compactMap { target.columns[$0]?.name }
        let arguments = ([target.attributesColumn] + columns).joined(separator: ", ")
        return "\(QueryFunctions.subjectTest)(\(arguments), \(bind(.integer(Int64(inMemory.count - 1)))))"
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
