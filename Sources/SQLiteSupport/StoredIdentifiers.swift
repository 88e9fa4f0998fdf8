import GRDB
import IndexModel

// Apps and devices are stored as the text of their names, in GRDB's
// arguments and rows and in the statements bound directly alike: the store
// code passes typed identifiers, and the conversion happens here, where a
// value is bound or read.

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

extension DirectStatement {
    public func bind(_ index: Int32, _ value: AppID) {
        bind(index, value.rawValue)
    }

    public func bind(_ index: Int32, _ value: DeviceID) {
        bind(index, value.rawValue)
    }
}
