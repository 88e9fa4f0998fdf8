import Foundation
import GRDB

/// What a SQLite store file keeps of text, read two ways: GRDB reads text as
/// a C string, which ends at a NUL, and `CAST(… AS BLOB)` reads its bytes.
/// Every TEXT column reads back as its bytes when no NUL got in.
public enum StoredText {
    /// Every TEXT (or ANY) column of every table of the SQLite file at `path`, as `table.column`.
    public static func textColumns(_ path: String) throws -> [String] {
        try DatabaseQueue(path: path).read { db in
            var found: [String] = []
            for table in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'") {
                for row in try Row.fetchAll(db, sql: "SELECT name, type FROM pragma_table_info(?)", arguments: [table]) {
                    let type: String = row[1]
                    if type.uppercased() == "TEXT" || type.uppercased() == "ANY" { found.append("\(table).\(row[0] as String)") }
                }
            }
            return found
        }
    }

    /// The text values of `columns` that read back otherwise than their bytes.
    public static func cutValues(_ path: String, _ columns: [String]) throws -> [String] {
        try DatabaseQueue(path: path).read { db in
            var cut: [String] = []
            for column in columns {
                let parts = column.split(separator: ".").map(String.init)
                for row in try Row.fetchAll(db, sql: """
                    SELECT "\(parts[1])", CAST("\(parts[1])" AS BLOB) FROM "\(parts[0])" WHERE typeof("\(parts[1])") = 'text'
                    """) {
                    let read: String = row[0]
                    let bytes: Data = row[1]
                    if Array(read.utf8) != [UInt8](bytes) { cut.append("\(column): \(String(reflecting: read))") }
                }
            }
            return cut
        }
    }
}
