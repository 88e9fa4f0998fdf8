/// One result row, decoded: each column's name and value.
///
/// Read a column by position or name, then as the type expected:
/// `try row[0].int64`, `try row["title"].optionalText`. Each read throws
/// ``PostgresFailure`` (code `.decoding`) naming the column when it is
/// missing, NULL where a value was expected, or of another type: rows come
/// from a database that someone else may have edited, so a surprise there
/// is an error, never a trap.
public struct PostgresRowValues: Hashable, Sendable {
    /// The columns' names, in order (shared by every row of a result).
    public let columnNames: [String]
    /// The columns' values, in the same order.
    public let values: [PostgresValue]

    public init(columnNames: [String], values: [PostgresValue]) {
        precondition(columnNames.count == values.count, "a row needs one name per value")
        self.columnNames = columnNames
        self.values = values
    }

    /// The column at `index`, counted from 0.
    public subscript(index: Int) -> PostgresField {
        get throws(PostgresFailure) {
            guard values.indices.contains(index) else {
                throw PostgresFailure(.decoding, "the row has \(values.count) columns; there is no column \(index)")
            }
            return PostgresField(value: values[index], columnIndex: index, columnName: columnNames[index])
        }
    }

    /// The first column named `name`.
    public subscript(name: String) -> PostgresField {
        get throws(PostgresFailure) {
            guard let index = columnNames.firstIndex(of: name) else {
                throw PostgresFailure(.decoding, "the row has no column named \(name)")
            }
            return PostgresField(value: values[index], columnIndex: index, columnName: name)
        }
    }
}

/// One column of a result row, read as the type the caller expects.
///
/// Each accessor throws ``PostgresFailure`` (code `.decoding`) naming the
/// column when the value is NULL where one was expected or of another type.
/// The `optional…` accessors return nil for NULL.
public struct PostgresField: Hashable, Sendable {
    public let value: PostgresValue
    public let columnIndex: Int
    public let columnName: String

    public var isNull: Bool { value == .null }

    public var int64: Int64 { get throws(PostgresFailure) { try required(optionalInt64, "int8") } }
    public var optionalInt64: Int64? {
        get throws(PostgresFailure) {
            switch value {
            case .null: return nil
            case .int64(let number): return number
            default: throw mismatch("an integer")
            }
        }
    }

    public var bool: Bool { get throws(PostgresFailure) { try required(optionalBool, "bool") } }
    public var optionalBool: Bool? {
        get throws(PostgresFailure) {
            switch value {
            case .null: return nil
            case .bool(let flag): return flag
            default: throw mismatch("a bool")
            }
        }
    }

    public var double: Double { get throws(PostgresFailure) { try required(optionalDouble, "float8") } }
    public var optionalDouble: Double? {
        get throws(PostgresFailure) {
            switch value {
            case .null: return nil
            case .double(let number): return number
            default: throw mismatch("a float")
            }
        }
    }

    public var text: String { get throws(PostgresFailure) { try required(optionalText, "text") } }
    public var optionalText: String? {
        get throws(PostgresFailure) {
            switch value {
            case .null: return nil
            case .text(let text): return text
            default: throw mismatch("text")
            }
        }
    }

    public var bytea: [UInt8] { get throws(PostgresFailure) { try required(optionalBytea, "bytea") } }
    public var optionalBytea: [UInt8]? {
        get throws(PostgresFailure) {
            switch value {
            case .null: return nil
            case .bytea(let bytes): return bytes
            default: throw mismatch("bytea")
            }
        }
    }

    /// An integer array without NULL elements.
    public var int64Array: [Int64] {
        get throws(PostgresFailure) {
            switch value {
            case .int64Array(let values): return values
            case .optionalInt64Array: throw PostgresFailure(.decoding, "\(column) holds a NULL element; read it as optionalInt64Array")
            default: throw mismatch("an integer array")
            }
        }
    }

    /// An integer array whose elements may be NULL.
    public var optionalInt64Array: [Int64?] {
        get throws(PostgresFailure) {
            switch value {
            case .int64Array(let values): return values.map { $0 }
            case .optionalInt64Array(let values): return values
            default: throw mismatch("an integer array")
            }
        }
    }

    public var boolArray: [Bool] {
        get throws(PostgresFailure) {
            switch value {
            case .boolArray(let values): return values
            case .optionalBoolArray: throw PostgresFailure(.decoding, "\(column) holds a NULL element; read it as optionalBoolArray")
            default: throw mismatch("a bool array")
            }
        }
    }

    public var optionalBoolArray: [Bool?] {
        get throws(PostgresFailure) {
            switch value {
            case .boolArray(let values): return values.map { $0 }
            case .optionalBoolArray(let values): return values
            default: throw mismatch("a bool array")
            }
        }
    }

    public var textArray: [String] {
        get throws(PostgresFailure) {
            switch value {
            case .textArray(let values): return values
            case .optionalTextArray: throw PostgresFailure(.decoding, "\(column) holds a NULL element; read it as optionalTextArray")
            default: throw mismatch("a text array")
            }
        }
    }

    public var optionalTextArray: [String?] {
        get throws(PostgresFailure) {
            switch value {
            case .textArray(let values): return values.map { $0 }
            case .optionalTextArray(let values): return values
            default: throw mismatch("a text array")
            }
        }
    }

    public var byteaArray: [[UInt8]] {
        get throws(PostgresFailure) {
            switch value {
            case .byteaArray(let values): return values
            case .optionalByteaArray: throw PostgresFailure(.decoding, "\(column) holds a NULL element; read it as optionalByteaArray")
            default: throw mismatch("a bytea array")
            }
        }
    }

    public var optionalByteaArray: [[UInt8]?] {
        get throws(PostgresFailure) {
            switch value {
            case .byteaArray(let values): return values.map { $0 }
            case .optionalByteaArray(let values): return values
            default: throw mismatch("a bytea array")
            }
        }
    }

    private var column: String { "column \(columnIndex) (\(columnName))" }

    private func required<T>(_ value: T?, _ type: String) throws(PostgresFailure) -> T {
        guard let value else { throw PostgresFailure(.decoding, "\(column) is NULL where a \(type) value was expected") }
        return value
    }

    private func mismatch(_ expected: String) -> PostgresFailure {
        PostgresFailure(.decoding, "\(column) holds \(value.typeName), not \(expected)")
    }
}
