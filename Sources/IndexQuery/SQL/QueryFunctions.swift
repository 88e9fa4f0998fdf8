import Foundation
import IndexModel

/// The SQL functions compiled queries call, as plain Swift: a store registers
/// each under its name with its SQLite binding. Arguments are the texts the
/// compiler bound (a printed string literal, or a printed predicate with its
/// times already resolved); compiled forms are cached per text, so a query over
/// many rows parses each operand once.
public final class QueryFunctions: @unchecked Sendable {
    /// `sightline_text_match(value TEXT, literal TEXT) -> 0 | 1`; 0 when value is NULL.
    public static let textMatch = "sightline_text_match"
    /// `sightline_text_compare(value TEXT, literal TEXT) -> -1 | 0 | 1`; NULL when value is NULL.
    public static let textCompare = "sightline_text_compare"
    /// `sightline_attribute_test(attributes BLOB, predicate TEXT) -> 0 | 1`.
    public static let attributeTest = "sightline_attribute_test"

    /// `sightline_subject_test(attributes BLOB, column…, part INTEGER) -> 0 | 1`:
    /// a part of a query nested too deep for SQLite's parser
    /// (`QuerySQLCompiler`), by its number in the run's `SQLCondition.inMemory`,
    /// evaluated over the row's attribute set and the target's columns in
    /// the order of their names.
    public static let subjectTest = "sightline_subject_test"

    private let lock = NSLock()
    /// What the run in progress on the connection may spend, and the parts
    /// of its query evaluated in memory (`spending`).
    private var budget = QueryBudget.unlimited
    private var parts: [CompiledQuery] = []
    private var patterns: [String: TextPattern] = [:]
    private var operands: [String: ([UInt32], TextModifiers)] = [:]
    private var predicates: [String: CompiledPredicate] = [:]
    /// Bounds each cache; queries bind a few operands, so this is only reached
    /// by a long-lived store serving many different queries.
    private let capacity = 512

    public init() {}

    /// Runs `body`, a statement of `condition` whose SQL calls these
    /// functions, charging `budget` for their work; a charge past it fails
    /// the statement, and `budget.exhaustion` says why. The connection runs
    /// one statement at a time, so one run is current at a time.
    public func spending<T>(_ budget: QueryBudget, on condition: SQLCondition, _ body: () throws -> T) rethrows -> T {
        let previous = lock.withLock { () -> (QueryBudget, [CompiledQuery]) in
            defer { (self.budget, parts) = (budget, condition.inMemory) }
            return (self.budget, parts)
        }
        defer { lock.withLock { (self.budget, parts) = previous } }
        return try body()
    }

    private var current: QueryBudget { lock.withLock { budget } }

    /// Charges the run for decoding a row's attribute set of `bytes` bytes,
    /// which `attributeTest` and `subjectTest` need before they test it.
    public func chargeDecoding(bytes: Int) throws {
        try current.charge(bytes + 1)
    }

    public func textMatch(_ value: String, literal: String) throws -> Bool {
        let pattern = try cached(\.patterns, literal) { () throws(QueryError) in TextPattern(try Self.literal(literal)) }
        try current.charge(QueryBudget.matchCost(value, patternLength: pattern.length, modifiers: pattern.modifiers))
        return pattern.matches(value)
    }

    public func textCompare(_ value: String, literal: String) throws -> Int {
        let (operand, folding) = try cached(\.operands, literal) { () throws(QueryError) in
            let text = try Self.literal(literal)
            return (CompiledPredicate.fold(text), text.modifiers)
        }
        try current.charge(QueryBudget.matchCost(value, patternLength: 1, modifiers: folding))
        return TextPattern.compare(value, operand, folding: folding)
    }

    public func attributeTest(_ attributes: AttributeSet, predicate: String) throws -> Bool {
        let compiled = try cached(\.predicates, predicate) { () throws(QueryError) in
            switch try QueryParser.parse(predicate) {
            case .comparison(let comparison): return CompiledPredicate(comparison)
            case .inRange(let range): return CompiledPredicate(range)
            default: throw QueryError(at: 0, "expected one predicate")
            }
        }
        return try compiled.matches(attributes, current)
    }

    /// Evaluates the run's part `number` over a subject made of
    /// `attributes` and the target's `columns`: each named column's value
    /// stands for the attribute of its name.
    public func subjectTest(_ attributes: AttributeSet, columns: [String: AttributeValue], part number: Int64) throws -> Bool {
        let (budget, parts) = lock.withLock { (self.budget, self.parts) }
        guard number >= 0, number < Int64(parts.count) else {
            throw QueryError(at: 0, "no part \(number) of a query is being run")
        }
        return try parts[Int(number)].matches(ColumnSubject(attributes: attributes, columns: columns), budget: budget)
    }

    private func cached<Value>(_ cache: ReferenceWritableKeyPath<QueryFunctions, [String: Value]>, _ key: String,
                               _ make: () throws(QueryError) -> Value) throws(QueryError) -> Value {
        if let value = lock.withLock({ self[keyPath: cache][key] }) { return value }
        let value = try make()
        lock.withLock {
            if self[keyPath: cache].count >= capacity { self[keyPath: cache].removeAll(keepingCapacity: true) }
            self[keyPath: cache][key] = value
        }
        return value
    }

    private static func literal(_ text: String) throws(QueryError) -> TextLiteral {
        let tokens = try QueryLexer.tokens(text)
        guard tokens.count == 2, case .text(let literal) = tokens[0].kind else {
            throw QueryError(at: 0, "expected one string literal")
        }
        return literal
    }
}

/// A row as `sightline_subject_test` sees it: the attributes of its set,
/// with each column standing for the attribute of its name. `*` and `**`
/// look at the attribute set, which holds every attribute (`SQLTarget`).
private struct ColumnSubject: QuerySubject {
    let attributes: AttributeSet
    let columns: [String: AttributeValue]

    func value(of attribute: String) -> AttributeValue? {
        columns[attribute] ?? attributes.value(of: attribute)
    }

    func values(includingContent: Bool) -> [AttributeValue] {
        attributes.values(includingContent: includingContent)
    }
}
