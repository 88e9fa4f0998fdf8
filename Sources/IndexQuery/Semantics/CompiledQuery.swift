import IndexModel

/// A query ready to evaluate in memory: times resolved, patterns folded.
///
/// What a predicate means:
/// - A string value matches string attributes (each element of a list); a number
///   matches number attributes (and booleans as 0 and 1); a `$time` matches dates.
///   A value of another kind is not comparable and never matches.
/// - `==`, `<`, `<=`, `>`, `>=` and InRange hold when *some* comparable value of
///   the attribute satisfies them (for `*` and `**`, some value of any attribute).
/// - `!=` holds when the attribute has comparable values and *none* equals the
///   operand; an item without the attribute matches neither `==` nor `!=`.
/// - `!` negates a whole predicate, so `!(title == "x")` also matches items
///   without a title.
public struct CompiledQuery: Sendable {
    /// The query as evaluated, with every `$time` replaced by its instant.
    public let expression: QueryExpression
    private let root: Node

    public init(_ expression: QueryExpression, now: Timestamp) {
        self.expression = expression.resolvingTimes(now: now)
        root = Node(self.expression)
    }

    /// Whether `subject` matches, spending `budget` on the work
    /// (`QueryBudget`); throws when the budget or its deadline runs out.
    public func matches(_ subject: some QuerySubject, budget: QueryBudget) throws(QueryTooExpensive) -> Bool {
        try root.matches(subject, budget)
    }

    private indirect enum Node: Sendable {
        case predicate(CompiledPredicate)
        case and(Node, Node)
        case or(Node, Node)
        case not(Node)

        init(_ expression: QueryExpression) {
            switch expression {
            case .comparison(let comparison): self = .predicate(CompiledPredicate(comparison))
            case .inRange(let range): self = .predicate(CompiledPredicate(range))
            case .and(let left, let right): self = .and(Node(left), Node(right))
            case .or(let left, let right): self = .or(Node(left), Node(right))
            case .not(let inner): self = .not(Node(inner))
            }
        }

        func matches(_ subject: some QuerySubject, _ budget: QueryBudget) throws(QueryTooExpensive) -> Bool {
            switch self {
            case .predicate(let predicate): return try predicate.matches(subject, budget)
            case .and(let left, let right):
                guard try left.matches(subject, budget) else { return false }
                return try right.matches(subject, budget)
            case .or(let left, let right):
                if try left.matches(subject, budget) { return true }
                return try right.matches(subject, budget)
            case .not(let inner): return try !inner.matches(subject, budget)
            }
        }
    }
}

/// One comparison or InRange, compiled. Times must already be resolved.
struct CompiledPredicate: Sendable {
    enum Test: Sendable {
        case textMatch(TextPattern)
        case textOrder(ComparisonOperator, [UInt32], TextModifiers)
        case textRange([UInt32], [UInt32], TextModifiers)
        case number(ComparisonOperator, Double)
        case numberRange(Double, Double)
        case date(ComparisonOperator, Int64)
        case dateRange(Int64, Int64)
    }

    let scope: AttributeScope
    let test: Test
    let negated: Bool

    init(_ comparison: Comparison) {
        scope = comparison.scope
        negated = comparison.op == .notEqual
        let op = negated ? ComparisonOperator.equal : comparison.op
        switch comparison.value {
        case .text(let literal):
            if op == .equal {
                test = .textMatch(TextPattern(literal))
            } else {
                test = .textOrder(op, CompiledPredicate.fold(literal), literal.modifiers)
            }
        case .number(let number):
            test = .number(op, number)
        case .time(let time):
            test = .date(op, time.resolve(now: Timestamp(millisecondsSince1970: 0)).millisecondsSince1970)
        }
    }

    init(_ range: RangePredicate) {
        scope = range.scope
        negated = false
        switch (range.lower, range.upper) {
        case (.number(let lower), .number(let upper)):
            test = .numberRange(lower, upper)
        case (.time(let lower), .time(let upper)):
            let epoch = Timestamp(millisecondsSince1970: 0)
            test = .dateRange(lower.resolve(now: epoch).millisecondsSince1970, upper.resolve(now: epoch).millisecondsSince1970)
        case (.text(let lower), .text(let upper)):
            test = .textRange(CompiledPredicate.fold(lower), CompiledPredicate.fold(upper), lower.modifiers)
        default:
            // The parser refuses mixed bounds; a hand-built tree with them matches nothing.
            test = .numberRange(1, 0)
        }
    }

    static func fold(_ literal: TextLiteral) -> [UInt32] {
        var text = ""
        for case .literal(let run) in literal.pieces { text += run }
        return FoldedText(text, folding: literal.modifiers, wantBoundaries: false).scalars
    }

    /// What looking at `value` costs at most (`QueryBudget`).
    func cost(of value: AttributeValue) -> Int {
        switch (test, value) {
        case (.textMatch(let pattern), .string(let text)):
            return QueryBudget.matchCost(text, patternLength: pattern.length, modifiers: pattern.modifiers)
        case (.textOrder(_, _, let folding), .string(let text)), (.textRange(_, _, let folding), .string(let text)):
            return QueryBudget.matchCost(text, patternLength: 1, modifiers: folding)
        default:
            return 1
        }
    }

    func matches(_ subject: some QuerySubject, _ budget: QueryBudget) throws(QueryTooExpensive) -> Bool {
        // Looking the attribute up costs 1 whether or not the subject has it,
        // so a query of predicates on absent attributes spends too.
        try budget.charge(1)
        var comparable = false
        func visit(_ value: AttributeValue) throws(QueryTooExpensive) -> Bool? {
            switch value {
            case .strings(let list):
                for element in list {
                    if let result = try visit(.string(element)) { return result }
                }
                return nil
            default:
                try budget.charge(cost(of: value))
                guard let satisfied = evaluate(value) else { return nil }
                comparable = true
                // `==`-like: the first satisfying value decides. `!=`: the first
                // equal value decides against.
                if satisfied { return !negated }
                return nil
            }
        }
        switch scope {
        case .named(let name):
            if let value = subject.value(of: name), let decided = try visit(value) { return decided }
        case .anyAttribute, .anyAttributeOrContent:
            for value in subject.values(includingContent: scope == .anyAttributeOrContent) {
                if let decided = try visit(value) { return decided }
            }
        }
        return negated && comparable
    }

    /// Whether one value satisfies the test; nil when it is not comparable.
    func evaluate(_ value: AttributeValue) -> Bool? {
        switch (test, value) {
        case (.textMatch(let pattern), .string(let text)):
            return pattern.matches(text)
        case (.textOrder(let op, let operand, let folding), .string(let text)):
            return CompiledPredicate.holds(op, TextPattern.compare(text, operand, folding: folding))
        case (.textRange(let lower, let upper, let folding), .string(let text)):
            return TextPattern.compare(text, lower, folding: folding) >= 0 && TextPattern.compare(text, upper, folding: folding) <= 0
        case (.number(let op, let operand), _):
            guard let number = CompiledPredicate.number(value) else { return nil }
            return CompiledPredicate.holds(op, number < operand ? -1 : (number == operand ? 0 : 1))
        case (.numberRange(let lower, let upper), _):
            guard let number = CompiledPredicate.number(value) else { return nil }
            return lower <= number && number <= upper
        case (.date(let op, let operand), .date(let date)):
            let milliseconds = date.millisecondsSince1970
            return CompiledPredicate.holds(op, milliseconds < operand ? -1 : (milliseconds == operand ? 0 : 1))
        case (.dateRange(let lower, let upper), .date(let date)):
            return lower <= date.millisecondsSince1970 && date.millisecondsSince1970 <= upper
        default:
            return nil
        }
    }

    static func number(_ value: AttributeValue) -> Double? {
        switch value {
        case .number(let number): number
        case .bool(let flag): flag ? 1 : 0
        default: nil
        }
    }

    static func holds(_ op: ComparisonOperator, _ order: Int) -> Bool {
        switch op {
        case .equal: order == 0
        case .notEqual: order != 0
        case .less: order < 0
        case .lessOrEqual: order <= 0
        case .greater: order > 0
        case .greaterOrEqual: order >= 0
        }
    }
}
