import Crypto
import GRDB
import IndexModel

/// A SHA-256 digest of query results, value by value in a typed encoding, for
/// comparing a store's projections with a rebuild of them (device and cloud).
public enum RowDigest {
    /// The digest of the rows of each query, in order; each query's rows are
    /// preceded by its position so that rows cannot move between tables unseen.
    public static func compute(_ db: Database, _ queries: [(sql: String, arguments: StatementArguments)]) throws -> [UInt8] {
        var hasher = SHA256()
        for (table, query) in queries.enumerated() {
            var writer = BinaryWriter(capacity: 4096)
            writer.uvarint(UInt64(table))
            let rows = try Row.fetchCursor(db.cachedStatement(sql: query.sql), arguments: query.arguments)
            while let row = try rows.next() {
                for value in row.databaseValues { encode(value, into: &writer) }
                if writer.bytes.count > 1 << 16 {
                    hasher.update(data: writer.bytes)
                    writer = BinaryWriter(capacity: 4096)
                }
            }
            hasher.update(data: writer.bytes)
        }
        return Array(hasher.finalize())
    }

    /// Writes one value as the digest takes it: a tag byte (0 NULL, 1
    /// integer, 2 real, 3 text, 4 blob), then its `svarint`, `double`,
    /// `string` or `data` encoding. Every digest of stored rows, whichever
    /// database held them, encodes values this way.
    public static func encode(_ value: DatabaseValue, into writer: inout BinaryWriter) {
        switch value.storage {
        case .null: writer.byte(0)
        case .int64(let integer):
            writer.byte(1)
            writer.svarint(integer)
        case .double(let double):
            writer.byte(2)
            writer.double(double)
        case .string(let text):
            writer.byte(3)
            writer.string(text)
        case .blob(let data):
            writer.byte(4)
            writer.data([UInt8](data))
        }
    }

    /// A digest as lowercase hexadecimal digits, as stores report it.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef")
        var text = ""
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xF)])
        }
        return text
    }
}
