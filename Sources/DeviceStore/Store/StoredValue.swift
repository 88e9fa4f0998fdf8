import Foundation
import GRDB
import IndexModel
import SQLiteSupport
import SyncWire

/// Numbers read back from a store file, checked: the file is outside bytes
/// (anyone who can write it can put a negative, huge or fractional number
/// where a position belongs), and nothing read from it may trap. A value out
/// of range is `corruptStore`, naming what it is.
enum StoredValue {
    /// `value` as an epoch or seq: 0 through `WireLimits.maximumPosition`.
    static func position(_ value: Int64, _ what: @autoclosure () -> String) throws(DeviceStoreError) -> UInt64 {
        guard value >= 0, UInt64(value) <= WireLimits.maximumPosition else {
            throw DeviceStoreError(.corruptStore, "\(what()) is \(value), not a position from 0 to \(WireLimits.maximumPosition)")
        }
        return UInt64(value)
    }

    /// `epoch` and `seq` as an outbox position, each checked as `position`
    /// checks it and named `prefix` + "epoch" and `prefix` + "seq".
    static func outboxPosition(epoch: Int64, seq: Int64, _ prefix: @autoclosure () -> String) throws(DeviceStoreError) -> OutboxPosition {
        OutboxPosition(epoch: Epoch(try position(epoch, prefix() + "epoch")), seq: OutboxSeq(try position(seq, prefix() + "seq")))
    }

    /// The item in columns `first` through `first + 3` of `row`: item_id,
    /// domain, expires and attributes, in that order.
    static func item(_ row: Row, from first: Int) throws(DeviceStoreError) -> SearchableItem {
        let identifier: String = try column(row, first, "items.item_id")
        let attributes: Data = try column(row, first + 3, "items.attributes of \(identifier)")
        let expires = try column(row, first + 2, "items.expires of \(identifier)", as: Int64?.self)
        let decoded: AttributeSet
        do {
            decoded = try EventCodec.decodeAttributes([UInt8](attributes))
        } catch {
            throw DeviceStoreError(.corruptStore, "items.attributes of \(identifier) does not decode: \(error)")
        }
        return SearchableItem(uniqueIdentifier: identifier,
                              domainIdentifier: try column(row, first + 1, "items.domain of \(identifier)", as: String?.self),
                              attributes: decoded, expirationDate: expires.map { Timestamp(millisecondsSince1970: $0) })
    }

    /// Column `column` of the row `statement` is on, which this build only
    /// ever fills with text: anything else is `corruptStore` naming `what`.
    static func text(_ statement: DirectStatement, _ column: Int32, _ what: @autoclosure () -> String) throws(DeviceStoreError) -> String {
        guard statement.isText(column), let text = statement.text(column) else {
            throw DeviceStoreError(.corruptStore, "\(what()) is not text")
        }
        return text
    }

    /// Column `column` of the row `statement` is on, which this build only
    /// ever fills with an integer: anything else is `corruptStore` naming `what`.
    static func integer(_ statement: DirectStatement, _ column: Int32, _ what: @autoclosure () -> String) throws(DeviceStoreError) -> Int64 {
        guard statement.isInteger(column) else { throw DeviceStoreError(.corruptStore, "\(what()) is not an integer") }
        return statement.int64(column)
    }

    /// Column `index` of `row`, decoded with GRDB's throwing decoding, which
    /// refuses a NULL where a value is required and a REAL that is not whole
    /// where an integer is.
    static func column<Value: DatabaseValueConvertible>(_ row: Row, _ index: Int, _ what: @autoclosure () -> String,
                                                        as type: Value.Type = Value.self) throws(DeviceStoreError) -> Value {
        do {
            return try row.decode(Value.self, atIndex: index)
        } catch {
            throw DeviceStoreError(.corruptStore, "\(what()) cannot be read as \(Value.self): \(row[index] as DatabaseValue)")
        }
    }
}
