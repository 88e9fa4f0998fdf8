import NIOCore
import PostgresNIO

/// A bound value goes to postgres-nio as itself: `PostgresBindings.append`
/// and `PostgresQuery` interpolation take a ``PostgresValue`` as they take an
/// `Int64` or a `String`, in PostgreSQL's binary format, typed by its case
/// (``PostgresValue/dataType``). A NULL goes as `PostgresBindings.appendNull()`
/// (see ``PostgresValue/bind(into:parameter:)``), untyped, so the statement
/// gives it its type.
///
/// Scalars are written by postgres-nio's own encoders. Arrays are written
/// here: postgres-nio's cannot hold NULL elements, and its `[UInt8]` is a
/// `char[]`, not a `bytea`.
extension PostgresValue: PostgresThrowingDynamicTypeEncodable {
    /// The PostgreSQL type the value is sent as; `.null` for NULL.
    public var dataType: PostgresDataType {
        switch self {
        case .null: .null
        case .int64: .int8
        case .bool: .bool
        case .double: .float8
        case .text: .text
        case .bytea: .bytea
        case .int64Array, .optionalInt64Array: .int8Array
        case .boolArray, .optionalBoolArray: .boolArray
        case .textArray, .optionalTextArray: .textArray
        case .byteaArray, .optionalByteaArray: .byteaArray
        }
    }

    public var psqlType: PostgresDataType { dataType }
    public var psqlFormat: PostgresFormat { .binary }

    public func encode<JSONEncoder: PostgresJSONEncoder>(
        into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>
    ) throws {
        switch self {
        case .null:
            // PostgresBindings writes NULL as a length of -1 with no bytes; a
            // value's encoding cannot say that.
            throw PostgresFailure(.binding, "NULL is bound with PostgresValue.bind(into:parameter:), not encoded")
        case .int64(let value): value.encode(into: &buffer, context: context)
        case .bool(let value): value.encode(into: &buffer, context: context)
        case .double(let value): value.encode(into: &buffer, context: context)
        case .text(let value): value.encode(into: &buffer, context: context)
        case .bytea(let value): buffer.writeBytes(value)
        case .int64Array(let values):
            try Self.writeArray(values.lazy.map { $0 }, count: values.count, hasNull: false, element: .int8, into: &buffer) {
                $1.writeInteger($0)
            }
        case .optionalInt64Array(let values):
            try Self.writeArray(values, count: values.count, hasNull: values.contains(nil), element: .int8, into: &buffer) {
                $1.writeInteger($0)
            }
        case .boolArray(let values):
            try Self.writeArray(values.lazy.map { $0 }, count: values.count, hasNull: false, element: .bool, into: &buffer) {
                $1.writeInteger($0 ? 1 : 0, as: UInt8.self)
            }
        case .optionalBoolArray(let values):
            try Self.writeArray(values, count: values.count, hasNull: values.contains(nil), element: .bool, into: &buffer) {
                $1.writeInteger($0 ? 1 : 0, as: UInt8.self)
            }
        case .textArray(let values):
            try Self.writeArray(values.lazy.map { $0 }, count: values.count, hasNull: false, element: .text, into: &buffer) {
                $1.writeString($0)
            }
        case .optionalTextArray(let values):
            try Self.writeArray(values, count: values.count, hasNull: values.contains(nil), element: .text, into: &buffer) {
                $1.writeString($0)
            }
        case .byteaArray(let values):
            try Self.writeArray(values.lazy.map { $0 }, count: values.count, hasNull: false, element: .bytea, into: &buffer) {
                $1.writeBytes($0)
            }
        case .optionalByteaArray(let values):
            try Self.writeArray(values, count: values.count, hasNull: values.contains(nil), element: .bytea, into: &buffer) {
                $1.writeBytes($0)
            }
        }
    }

    /// Appends the value to `bindings` as parameter `$index+1`: NULL as an
    /// untyped NULL, anything else as its own type.
    ///
    /// - Throws: ``PostgresFailure`` with code `.binding`, naming the
    ///   parameter and never the value, for an array or element longer than
    ///   PostgreSQL's lengths allow.
    func bind(into bindings: inout PostgresBindings, parameter index: Int) throws(PostgresFailure) {
        guard self != .null else {
            bindings.appendNull()
            return
        }
        do {
            try bindings.append(self)
        } catch let failure as PostgresFailure {
            throw PostgresFailure(.binding, "parameter $\(index + 1): \(failure.message)")
        } catch {
            throw PostgresFailure(.binding, "parameter $\(index + 1) could not be encoded as \(typeName)")
        }
    }

    /// Writes a one-dimensional array starting at 1, or an empty array (no
    /// dimensions), in PostgreSQL's binary array format: dimensions, a
    /// has-NULL flag, the element type, the dimension's length and lower
    /// bound, then each element as its length (-1 for NULL) and its bytes.
    private static func writeArray<Element>(
        _ values: some Sequence<Element?>, count: Int, hasNull: Bool, element: PostgresDataType, into buffer: inout ByteBuffer,
        _ writeElement: (Element, inout ByteBuffer) -> Void
    ) throws(PostgresFailure) {
        guard let length = Int32(exactly: count) else {
            throw PostgresFailure(.binding, "an array of \(count) elements is longer than PostgreSQL allows")
        }
        buffer.writeMultipleIntegers(Int32(count == 0 ? 0 : 1), Int32(hasNull ? 1 : 0), element.rawValue)
        guard count > 0 else { return }
        buffer.writeMultipleIntegers(length, Int32(1))
        for value in values {
            guard let value else {
                buffer.writeInteger(Int32(-1))
                continue
            }
            // The element's length goes before it: a placeholder, filled in
            // once the element is written.
            let lengthIndex = buffer.writerIndex
            buffer.writeInteger(Int32(0))
            writeElement(value, &buffer)
            guard let elementLength = Int32(exactly: buffer.writerIndex - lengthIndex - 4) else {
                throw PostgresFailure(.binding, "an array element is longer than PostgreSQL allows")
            }
            buffer.setInteger(elementLength, at: lengthIndex)
        }
    }
}
