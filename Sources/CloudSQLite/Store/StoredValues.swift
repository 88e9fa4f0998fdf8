import CloudCore
import Foundation
import GRDB
import IndexModel
import SyncWire

/// The checked reading of a SQLite cloud store's rows: every number with
/// GRDB's throwing decoding and the checks of `Stored`.
extension Stored {
    /// Column `index` of `row`, decoded with GRDB's throwing decoding (which
    /// refuses a NULL where a value is required, or a REAL that is not a whole
    /// number where an integer is).
    package static func column<Value: DatabaseValueConvertible>(_ row: Row, _ index: Int, _ what: @autoclosure () -> String,
                                                        as type: Value.Type = Value.self) throws(CloudError) -> Value {
        do {
            return try row.decode(Value.self, atIndex: index)
        } catch {
            throw CloudError(.corruptStore, "\(what()) cannot be read as \(Value.self): \(row[index] as DatabaseValue)")
        }
    }
}

extension Stored {
    /// Column `index` of `row`, selected as `CAST(column AS BLOB)`, as the
    /// text it holds byte for byte. GRDB reads text as a C string, which
    /// ends at a NUL: a name an older build let into the log with one would
    /// read back as another, and its row would no longer match its hash.
    package static func exactText(_ row: Row, _ index: Int, _ what: @autoclosure () -> String) throws(CloudError) -> String {
        let bytes: Data = try column(row, index, what())
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw CloudError(.corruptStore, "\(what()) is not valid UTF-8")
        }
        return text
    }
}

extension StoredLogRow {
    /// The columns `init(_:)` reads, in its order; a query may add more after
    /// them. The names are read as their bytes (`Stored.exactText`).
    package static let columns = """
        CAST(app AS BLOB), seq, CAST(device AS BLOB), epoch, first_seq, last_seq, accepted_from, codec, uncompressed_length, \
        digest, payload, received_at
        """

    /// Reads a row selected with `columns` first; throws `corruptLog` naming
    /// the row and the field when a value is missing, of the wrong type or out
    /// of range.
    package init(_ row: Row) throws(CloudError) {
        let app: AppID
        let seq: Int64
        do {
            seq = try row.decode(Int64.self, atIndex: 1)
        } catch {
            throw CloudError(.corruptLog, "a cloud log row has no integer seq")
        }
        do {
            app = AppID(try Stored.exactText(row, 0, "cloud_log.app"))
        } catch {
            throw CloudError(.corruptLog, "log seq \(seq): \(error.message)")
        }
        func field<Value: DatabaseValueConvertible>(_ index: Int, _ name: String) throws(CloudError) -> Value {
            do {
                return try Stored.column(row, index, name)
            } catch {
                throw CloudError(.corruptLog, "app \(app) log seq \(seq): \(error.message)")
            }
        }
        let device: String
        do {
            device = try Stored.exactText(row, 2, "device")
        } catch {
            throw CloudError(.corruptLog, "app \(app) log seq \(seq): \(error.message)")
        }
        try self.init(app: app, seq: seq, device: DeviceID(device), epoch: field(3, "epoch"), firstSeq: field(4, "first_seq"),
                      lastSeq: field(5, "last_seq"), acceptedFrom: field(6, "accepted_from"), codec: field(7, "codec"),
                      uncompressedLength: field(8, "uncompressed_length"), digest: [UInt8](field(9, "digest") as Data),
                      payload: [UInt8](field(10, "payload") as Data), receivedAt: field(11, "received_at"))
    }
}
