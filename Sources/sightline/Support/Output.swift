import Foundation
import IndexModel

/// Writes to stdout and stderr without buffering: each line is one write(2), so a process killed right after reporting a commit has
/// already delivered that report (the crash test relies on this).
enum Output {
    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    /// One JSON document `{"NAME": [ … ]}` written an element at a time, so
    /// that a command can print a whole journal as `--json` without holding
    /// it: `begin`, then `element` for each, then `end` (also after a stop).
    struct JSONArrayStream {
        private var count = 0

        init(name: String) {
            Output.line("{\"\(name)\": [")
        }

        mutating func element(_ value: JSONValue) {
            Output.line((count == 0 ? "  " : ", ") + JSONWriter.compact(value))
            count += 1
        }

        func end() {
            Output.line("]}")
        }
    }

    static func error(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    static func json(_ value: JSONValue, pretty: Bool = true) {
        line(pretty ? JSONWriter.pretty(value) : JSONWriter.compact(value))
    }

    /// The first `limit` of `names`, joined with commas, then how many more
    /// there are, and `whole` (where to find them all) when any were left
    /// out: a purge of 50,000 activities reads as one short line, not 3 MB.
    static func list(_ names: [String], limit: Int = 10, whole: String? = nil) -> String {
        guard names.count > limit else { return names.joined(separator: ", ") }
        return names.prefix(limit).joined(separator: ", ") + " and \(names.count - limit) more" + (whole.map { " (\($0))" } ?? "")
    }

    /// Left-aligned columns for human-readable tables.
    /// Prints `rows` in aligned columns. A cell shows its control characters
    /// and line breaks escaped (`TextRule.printable`): cells hold titles and
    /// URLs that came from outside, which must neither steer the terminal
    /// nor forge a row.
    static func table(_ rows: [[String]]) {
        let rows = rows.map { row in row.map { TextRule.printable($0, limit: 4_096) } }
        guard let width = rows.map(\.count).max() else { return }
        var widths = Array(repeating: 0, count: width)
        for row in rows {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        for row in rows {
            var text = ""
            for (column, cell) in row.enumerated() {
                let isLast = column == row.count - 1
                text += isLast ? cell : cell.padding(toLength: widths[column] + 2, withPad: " ", startingAt: 0)
            }
            line(text)
        }
    }
}
