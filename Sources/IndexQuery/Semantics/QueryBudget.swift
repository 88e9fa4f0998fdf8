/// How much work one run of a query may do, and until when.
///
/// A query's cost is its users' choice, so it is bounded where it runs, not
/// where it is parsed: a string predicate's automaton takes up to (value
/// length + 1) × (pattern length + 1) steps per value it looks at, and a
/// query of 256 such predicates over a large store or journal can ask for
/// minutes, and folding a value beyond ASCII costs far more per byte than a
/// step. Every value a predicate looks at is charged both bounds before it
/// is looked at (`matchCost`; a number or a date costs 1), every predicate evaluated
/// 1 more, and every attribute set decoded for a predicate its bytes, so the
/// charge depends only on the query and the data: the same query over the
/// same store spends the same units, whatever the machine. Past `units` the
/// run stops with `QueryTooExpensive`.
///
/// The optional deadline bounds the wall time too, for a server whose
/// machine may be slow or busy; it is checked every `deadlineStride` units,
/// so it is the one part of a run that is not deterministic, and the
/// simulator never sets one.
///
/// A budget is spent by one run on one thread (a store's connection, a
/// search, a `journal grep`); it is a class so that the SQL functions a
/// store registers once can charge the run in progress.
public final class QueryBudget: @unchecked Sendable {
    /// Units a run may spend when its caller names no other budget. A unit
    /// is about one step of the automaton, a few nanoseconds on one core
    /// (`bench linear` prints it), so this is some seconds of matching.
    /// `device query` and `journal grep` take `--budget`.
    public static let defaultUnits = 2_000_000_000
    /// Units one public search may spend by default (`cloud serve
    /// --search-budget`): a tenth of the default, a fraction of a second.
    public static let publicSearchUnits = defaultUnits / 10
    /// Units between two looks at the clock.
    static let deadlineStride = 1 << 20

    public let units: Int
    public let deadline: ContinuousClock.Instant?
    public private(set) var spent = 0
    /// Why the run stopped, once a charge threw: for callers that see the
    /// stop only as another layer's error (a SQL function's, through SQLite).
    public private(set) var exhaustion: QueryTooExpensive?
    private var nextClockLook: Int

    public init(units: Int = QueryBudget.defaultUnits, deadline: ContinuousClock.Instant? = nil) {
        self.units = max(units, 0)
        self.deadline = deadline
        nextClockLook = QueryBudget.deadlineStride
    }

    /// A budget no query exhausts, for callers whose queries are their own
    /// (tests, the simulator's oracle).
    public static var unlimited: QueryBudget { QueryBudget(units: .max) }

    /// Spends `cost` units, or throws when the budget or the deadline is
    /// past; nothing is spent by a charge that throws.
    public func charge(_ cost: Int) throws(QueryTooExpensive) {
        let (total, overflow) = spent.addingReportingOverflow(cost)
        guard !overflow, total <= units else {
            throw stop(.work)
        }
        spent = total
        if deadline != nil, total >= nextClockLook {
            nextClockLook = total.addingReportingOverflow(QueryBudget.deadlineStride).partialValue
            try checkDeadline()
        }
    }

    /// Throws when the deadline is past.
    public func checkDeadline() throws(QueryTooExpensive) {
        if let deadline, ContinuousClock.now >= deadline {
            throw stop(.deadline)
        }
    }

    private func stop(_ reason: QueryTooExpensive.Reason) -> QueryTooExpensive {
        let stop = QueryTooExpensive(units: units, reason: reason)
        exhaustion = stop
        return stop
    }

    /// Units per byte of a value beyond the automaton's steps: reading and
    /// folding it (`FoldedText`) and the automaton's own work per position.
    /// An ASCII byte is read directly; a character beyond ASCII goes
    /// through Foundation's normalization one character at a time, and
    /// through its case and diacritic folding and character properties when
    /// a modifier asks for them, which costs far more.
    static let asciiByteUnits = 10
    static let otherByteUnits = 200
    static let otherFoldedByteUnits = 700

    /// What matching the string `value` against a pattern of
    /// `patternLength` elements with `modifiers` costs, at most: its bytes
    /// at the per-byte rates above, plus (its bytes + 1) × (the pattern's
    /// length + 1) steps of the automaton.
    static func matchCost(_ value: String, patternLength: Int, modifiers: TextModifiers) -> Int {
        var other = 0
        for byte in value.utf8 where byte >= 0x80 { other += 1 }
        let bytes = value.utf8.count
        let (steps, overflow) = (bytes + 1).multipliedReportingOverflow(by: patternLength + 1)
        guard !overflow else { return .max }
        let otherUnits = modifiers.isEmpty ? otherByteUnits : otherFoldedByteUnits
        let reading = (bytes - other) * asciiByteUnits + other * otherUnits
        let (cost, sumOverflow) = steps.addingReportingOverflow(reading)
        return sumOverflow ? .max : cost
    }
}

/// A query run stopped because it would do more work than its budget
/// allows, or ran past its deadline (`QueryBudget`). The CLI exits 2 and
/// the public search route answers 422: the query is valid, and asking it
/// again gets the same answer.
public struct QueryTooExpensive: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Reason: Hashable, Sendable {
        /// More work than the budget's units.
        case work
        /// Past the budget's deadline.
        case deadline
    }

    public let units: Int
    public let reason: Reason

    public init(units: Int, reason: Reason) {
        self.units = units
        self.reason = reason
    }

    public var description: String {
        switch reason {
        case .work:
            return """
                query too expensive: it needs more than \(units) units of work (each value a string predicate \
                looks at costs its length times the pattern's); use fewer or shorter wildcard patterns, \
                name attributes instead of * and **, or narrow the query
                """
        case .deadline:
            return "query too expensive: it ran past its deadline; use fewer or shorter wildcard patterns, or narrow the query"
        }
    }
}
