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

    private let lock = NSLock()
    private var patterns: [String: TextPattern] = [:]
    private var operands: [String: ([UInt32], TextModifiers)] = [:]
    private var predicates: [String: CompiledPredicate] = [:]
    /// Bounds each cache; queries bind a few operands, so this is only reached
    /// by a long-lived store serving many different queries.
    private let capacity = 512

    public init() {}

    public func textMatch(_ value: String, literal: String) throws(QueryError) -> Bool {
        let pattern = try cached(\.patterns, literal) { () throws(QueryError) in TextPattern(try Self.literal(literal)) }
        return pattern.matches(value)
    }

    public func textCompare(_ value: String, literal: String) throws(QueryError) -> Int {
        let (operand, folding) = try cached(\.operands, literal) { () throws(QueryError) in
            let text = try Self.literal(literal)
            return (CompiledPredicate.fold(text), text.modifiers)
        }
        return TextPattern.compare(value, operand, folding: folding)
    }

    public func attributeTest(_ attributes: AttributeSet, predicate: String) throws(QueryError) -> Bool {
        let compiled = try cached(\.predicates, predicate) { () throws(QueryError) in
            switch try QueryParser.parse(predicate) {
            case .comparison(let comparison): return CompiledPredicate(comparison)
            case .inRange(let range): return CompiledPredicate(range)
            default: throw QueryError(at: 0, "expected one predicate")
            }
        }
        return compiled.matches(attributes)
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
