import CloudCore
import CloudSQLite
import IndexModel

/// The checked reading of a cloud store's rows in PostgreSQL: a database is
/// outside bytes like a frame (anyone with its password can write
/// anything), so a NULL where a value belongs, another type, or a number
/// out of range is a `corruptStore` error naming the table and column,
/// never a trap (`docs/SECURITY.md`).
extension PostgresRowValues {
    func integer(_ index: Int, _ what: @autoclosure () -> String) throws(CloudError) -> Int64 {
        do {
            return try self[index].int64
        } catch {
            throw CloudError(.corruptStore, "\(what()) is not an integer: \(error.message)")
        }
    }

    func optionalInteger(_ index: Int, _ what: @autoclosure () -> String) throws(CloudError) -> Int64? {
        do {
            return try self[index].optionalInt64
        } catch {
            throw CloudError(.corruptStore, "\(what()) is not an integer: \(error.message)")
        }
    }

    func bytes(_ index: Int, _ what: @autoclosure () -> String) throws(CloudError) -> [UInt8] {
        do {
            return try self[index].bytea
        } catch {
            throw CloudError(.corruptStore, "\(what()) is not bytes: \(error.message)")
        }
    }

    func optionalBytes(_ index: Int, _ what: @autoclosure () -> String) throws(CloudError) -> [UInt8]? {
        do {
            return try self[index].optionalBytea
        } catch {
            throw CloudError(.corruptStore, "\(what()) is not bytes: \(error.message)")
        }
    }

    func text(_ index: Int, _ what: @autoclosure () -> String) throws(CloudError) -> String {
        do {
            return try self[index].text
        } catch {
            throw CloudError(.corruptStore, "\(what()) is not text: \(error.message)")
        }
    }

    func optionalText(_ index: Int, _ what: @autoclosure () -> String) throws(CloudError) -> String? {
        do {
            return try self[index].optionalText
        } catch {
            throw CloudError(.corruptStore, "\(what()) is not text: \(error.message)")
        }
    }

    /// A count: 0 through `Stored.maximumCount`.
    func count(_ index: Int, _ what: @autoclosure () -> String) throws(CloudError) -> Int64 {
        try Stored.count(integer(index, what()), what())
    }

    /// An epoch or seq: 0 through `WireLimits.maximumPosition`.
    func position(_ index: Int, _ what: @autoclosure () -> String) throws(CloudError) -> UInt64 {
        try Stored.position(integer(index, what()), what())
    }

    /// Whether the column holds a true boolean.
    func flag(_ index: Int, _ what: @autoclosure () -> String) throws(CloudError) -> Bool {
        do {
            return try self[index].bool
        } catch {
            throw CloudError(.corruptStore, "\(what()) is not a boolean: \(error.message)")
        }
    }

    /// A column as the neutral value both backends digest and copy.
    func storeValue(_ index: Int, table: String) throws(CloudError) -> StoreValue {
        guard values.indices.contains(index) else {
            throw CloudError(.corruptStore, "a row of \(table) has \(values.count) columns; there is no column \(index)")
        }
        switch values[index] {
        case .null: return .null
        case .int64(let integer): return .integer(integer)
        case .text(let text): return .text(text)
        case .bytea(let bytes): return .blob(bytes)
        default:
            throw CloudError(.corruptStore, "\(table).\(columnNames[index]) holds \(values[index].typeName), which no cloud table has")
        }
    }
}

extension StoreValue {
    /// The value bound for a column of a cloud table.
    package var postgresValue: PostgresValue {
        switch self {
        case .null: .null
        case .integer(let integer): .int64(integer)
        case .text(let text): .text(text)
        case .blob(let bytes): .bytea(bytes)
        }
    }
}
