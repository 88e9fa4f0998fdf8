/// Bounds on what a query may ask, so that no query (typed, generated or
/// hostile) can make the parser or a match run unboundedly. Matching is
/// O(value length × pattern length) whatever the wildcards, so these bounds also
/// bound the work per attribute value. `docs/QUERY.md` lists them.
public enum QueryLimits {
    /// The longest query, in characters.
    public static let queryCharacters = 8_192
    /// The deepest nesting of parentheses and `!`.
    public static let nestingDepth = 64
    /// The most predicates (comparisons and InRange) in one query.
    public static let predicates = 256
    /// The longest quoted string, in characters after escapes.
    public static let textCharacters = 1_024
    /// The most wildcards in one quoted string.
    public static let wildcards = 64
    /// The largest `$time` offset, in its unit (seconds, days, weeks, months, years).
    public static let timeOffset: Int64 = 1_000_000
}
