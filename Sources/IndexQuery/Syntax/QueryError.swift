/// A query that cannot be parsed or run: where it went wrong and what was expected.
///
/// The message never repeats the query's text (it may be private content);
/// `rendered(query:)` shows the query with a caret under the offending column for
/// the user who typed it.
public struct QueryError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The offset of the offending character, in Unicode scalars from the start.
    public let offset: Int
    /// What is wrong and, where it helps, what was expected.
    public let message: String

    public init(at offset: Int, _ message: String) {
        self.offset = offset
        self.message = message
    }

    public var description: String { "column \(offset + 1): \(message)" }

    /// The error, the query (a window of it around the error when it is long),
    /// and a caret under the offending column:
    ///
    ///     invalid query at column 10: expected a value after ==
    ///       title == && x
    ///                ^
    public func rendered(query: String) -> String {
        // Offsets count Unicode scalars, as the lexer does; the caret's column
        // counts the characters shown before it.
        let scalars = Array(query.unicodeScalars)
        let window = 60
        let target = min(offset, scalars.count)
        var start = max(0, target - window / 2)
        let end = min(scalars.count, start + window)
        start = max(0, min(start, end - window))
        func shown(_ range: Range<Int>) -> String {
            var text = String.UnicodeScalarView()
            for scalar in scalars[range] {
                // Line breaks, tabs and other controls would move the caret or
                // reach the terminal; show them as spaces.
                let control = scalar.properties.generalCategory == .control || scalar.properties.isWhitespace
                text.append(control ? " " : scalar)
            }
            return String(text)
        }
        let prefix = start > 0 ? "…" : ""
        let suffix = end < scalars.count ? "…" : ""
        let caretColumn = prefix.count + shown(start..<target).count
        return """
            invalid query at column \(offset + 1): \(message)
              \(prefix)\(shown(start..<end))\(suffix)
              \(String(repeating: " ", count: caretColumn))^
            """
    }
}
