import GRDB
import IndexModel

// Apps and devices are stored as the text of their names, epochs and outbox
// seqs as integers, in GRDB's arguments and rows and in the statements bound
// directly alike: the store code passes typed identifiers, and the conversion
// happens here, where a value is bound or read.
//
// An epoch or seq is at most 2^53 − 1 wherever it enters (a frame, a store
// file, a snapshot), so it is bound unchanged; one past `Int64.max`, which
// nothing makes, would be bound as `Int64.max` rather than trap, and refused
// as out of range when read back. Stores read positions through their own
// checked readers (`StoredValue.position`, `Stored.position`), which name the
// column of a value out of range; decoding one here refuses only what is not
// a whole number from 0 up.

extension AppID: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { rawValue.databaseValue }

    public static func fromDatabaseValue(_ dbValue: DatabaseValue) -> AppID? {
        String.fromDatabaseValue(dbValue).map(AppID.init)
    }
}

extension DeviceID: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { rawValue.databaseValue }

    public static func fromDatabaseValue(_ dbValue: DatabaseValue) -> DeviceID? {
        String.fromDatabaseValue(dbValue).map(DeviceID.init)
    }
}

extension Epoch: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { Int64(clamping: rawValue).databaseValue }

    public static func fromDatabaseValue(_ dbValue: DatabaseValue) -> Epoch? {
        Int64.fromDatabaseValue(dbValue).flatMap { $0 >= 0 ? Epoch(UInt64($0)) : nil }
    }
}

extension OutboxSeq: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { Int64(clamping: rawValue).databaseValue }

    public static func fromDatabaseValue(_ dbValue: DatabaseValue) -> OutboxSeq? {
        Int64.fromDatabaseValue(dbValue).flatMap { $0 >= 0 ? OutboxSeq(UInt64($0)) : nil }
    }
}

extension DirectStatement {
    public func bind(_ index: Int32, _ value: AppID) {
        bind(index, value.rawValue)
    }

    public func bind(_ index: Int32, _ value: DeviceID) {
        bind(index, value.rawValue)
    }

    public func bind(_ index: Int32, _ value: Epoch) {
        bind(index, Int64(clamping: value.rawValue))
    }

    public func bind(_ index: Int32, _ value: OutboxSeq) {
        bind(index, Int64(clamping: value.rawValue))
    }
}
