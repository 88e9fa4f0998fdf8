/// A query that cannot be parsed or run: where it went wrong and what was expected.
///
/// The message never repeats the query's text (it may be private content);
/// `rendered(query:)` shows the query with a caret under the offending column for
/// the user who typed it.
public struct QueryError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The offset of the offending character, in characters from the start.
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
        let characters = Array(query)
        let window = 60
        var start = max(0, offset - window / 2)
        let end = min(characters.count, start + window)
        start = max(0, min(start, end - window))
        var shown = ""
        for character in characters[start..<end] {
            // Tabs and line breaks would move the caret; show them as spaces.
            shown.append(character.isNewline || character == "\t" ? " " : character)
        }
        let prefix = start > 0 ? "…" : ""
        let suffix = end < characters.count ? "…" : ""
        let caretColumn = prefix.count + min(offset, characters.count) - start
        return """
            invalid query at column \(offset + 1): \(message)
              \(prefix)\(shown)\(suffix)
              \(String(repeating: " ", count: caretColumn))^
            """
    }
}
