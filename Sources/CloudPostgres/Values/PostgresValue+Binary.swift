import NIOCore
import PostgresNIO

extension PostgresValue {
    /// The value in PostgreSQL's binary format, as the type `parameterType`
    /// when the statement's parameter has a known type (a prepared
    /// statement's), or as the value's own type when it does not (nil).
    ///
    /// An integer is narrowed to `int4` or `int2` when the parameter has that
    /// type and the value fits; text goes as any of the text types and as
    /// `jsonb`. Nothing else is converted.
    ///
    /// - Throws: ``PostgresFailure`` with code `.binding` when the value does
    ///   not fit the parameter's type, naming the parameter (`$1` for index 0)
    ///   and both types, never the value.
    func binaryData(for parameterType: UInt32?, parameter index: Int) throws(PostgresFailure) -> PostgresData {
        let target = parameterType ?? naturalType
        func mismatch(_ reason: String = "") -> PostgresFailure {
            PostgresFailure(
                .binding,
                "parameter $\(index + 1) is \(TypeOID.typeName(target)) in the statement, but a \(typeName) value was bound"
                    + (reason.isEmpty ? "; cast it in the SQL ($\(index + 1)::\(typeName))" : ": \(reason)"))
        }
        var buffer = ByteBuffer()
        switch self {
        case .null:
            return PostgresData(type: PostgresDataType(target), formatCode: .binary, value: nil)
        case .int64(let value):
            switch target {
            case TypeOID.int8: buffer.writeInteger(value, as: Int64.self)
            case TypeOID.int4:
                guard let narrow = Int32(exactly: value) else { throw mismatch("the value does not fit in int4") }
                buffer.writeInteger(narrow, as: Int32.self)
            case TypeOID.int2:
                guard let narrow = Int16(exactly: value) else { throw mismatch("the value does not fit in int2") }
                buffer.writeInteger(narrow, as: Int16.self)
            default: throw mismatch()
            }
        case .bool(let value):
            guard target == TypeOID.bool else { throw mismatch() }
            buffer.writeInteger(value ? 1 : 0, as: UInt8.self)
        case .double(let value):
            switch target {
            case TypeOID.float8: buffer.writeInteger(value.bitPattern, as: UInt64.self)
            case TypeOID.float4: buffer.writeInteger(Float(value).bitPattern, as: UInt32.self)
            default: throw mismatch()
            }
        case .text(let value):
            if target == TypeOID.jsonb {
                buffer.writeInteger(1, as: UInt8.self)  // jsonb's binary format version
            } else if !TypeOID.isText(target) {
                throw mismatch()
            }
            buffer.writeString(value)
        case .bytea(let value):
            guard target == TypeOID.bytea else { throw mismatch() }
            buffer.writeBytes(value)
        case .int64Array(let values):
            try Self.writeIntegerArray(values.lazy.map { Optional($0) }, count: values.count, hasNull: false,
                                       into: &buffer, target: target, mismatch: mismatch)
        case .optionalInt64Array(let values):
            try Self.writeIntegerArray(values, count: values.count, hasNull: values.contains(nil),
                                       into: &buffer, target: target, mismatch: mismatch)
        case .boolArray(let values):
            guard target == TypeOID.boolArray else { throw mismatch() }
            try Self.writeArray(values.lazy.map { Optional($0) }, count: values.count, hasNull: false,
                                element: TypeOID.bool, into: &buffer) { value, output in
                output.append(value ? 1 : 0)
            }
        case .optionalBoolArray(let values):
            guard target == TypeOID.boolArray else { throw mismatch() }
            try Self.writeArray(values, count: values.count, hasNull: values.contains(nil),
                                element: TypeOID.bool, into: &buffer) { value, output in
                output.append(value ? 1 : 0)
            }
        case .textArray(let values):
            guard let element = Self.textElement(of: target) else { throw mismatch() }
            try Self.writeArray(values.lazy.map { Optional($0) }, count: values.count, hasNull: false,
                                element: element, into: &buffer) { value, output in output.append(value) }
        case .optionalTextArray(let values):
            guard let element = Self.textElement(of: target) else { throw mismatch() }
            try Self.writeArray(values, count: values.count, hasNull: values.contains(nil),
                                element: element, into: &buffer) { value, output in output.append(value) }
        case .byteaArray(let values):
            guard target == TypeOID.byteaArray else { throw mismatch() }
            try Self.writeArray(values.lazy.map { Optional($0) }, count: values.count, hasNull: false,
                                element: TypeOID.bytea, into: &buffer) { value, output in output.append(value) }
        case .optionalByteaArray(let values):
            guard target == TypeOID.byteaArray else { throw mismatch() }
            try Self.writeArray(values, count: values.count, hasNull: values.contains(nil),
                                element: TypeOID.bytea, into: &buffer) { value, output in output.append(value) }
        }
        return PostgresData(type: PostgresDataType(target), formatCode: .binary, value: buffer)
    }

    /// The type PostgreSQL gets when the statement does not say one; 0 for
    /// NULL, which leaves the parameter's type to the statement.
    var naturalType: UInt32 {
        switch self {
        case .null: 0
        case .int64: TypeOID.int8
        case .bool: TypeOID.bool
        case .double: TypeOID.float8
        case .text: TypeOID.text
        case .bytea: TypeOID.bytea
        case .int64Array, .optionalInt64Array: TypeOID.int8Array
        case .boolArray, .optionalBoolArray: TypeOID.boolArray
        case .textArray, .optionalTextArray: TypeOID.textArray
        case .byteaArray, .optionalByteaArray: TypeOID.byteaArray
        }
    }

    private static func textElement(of arrayType: UInt32) -> UInt32? {
        switch arrayType {
        case TypeOID.textArray: TypeOID.text
        case TypeOID.varcharArray: TypeOID.varchar
        case TypeOID.bpcharArray: TypeOID.bpchar
        case TypeOID.nameArray: TypeOID.name
        default: nil
        }
    }

    private static func writeIntegerArray(
        _ values: some Sequence<Int64?>, count: Int, hasNull: Bool, into buffer: inout ByteBuffer, target: UInt32,
        mismatch: (String) -> PostgresFailure
    ) throws(PostgresFailure) {
        switch target {
        case TypeOID.int8Array:
            try writeArray(values, count: count, hasNull: hasNull, element: TypeOID.int8, into: &buffer) { value, output in
                output.appendBigEndian(value)
            }
        case TypeOID.int4Array:
            var overflow = false
            try writeArray(values, count: count, hasNull: hasNull, element: TypeOID.int4, into: &buffer) { value, output in
                if let narrow = Int32(exactly: value) { output.appendBigEndian(narrow) } else {
                    overflow = true
                    output.appendBigEndian(Int32(0))
                }
            }
            if overflow { throw mismatch("an element does not fit in int4") }
        case TypeOID.int2Array:
            var overflow = false
            try writeArray(values, count: count, hasNull: hasNull, element: TypeOID.int2, into: &buffer) { value, output in
                if let narrow = Int16(exactly: value) { output.appendBigEndian(narrow) } else {
                    overflow = true
                    output.appendBigEndian(Int16(0))
                }
            }
            if overflow { throw mismatch("an element does not fit in int2") }
        default:
            throw mismatch("")
        }
    }

    /// Writes a one-dimensional array starting at 1, or an empty array (no
    /// dimensions), in PostgreSQL's binary array format: dimensions, a has-NULL
    /// flag, the element type, each dimension's length and lower bound, then
    /// each element as a length (-1 for NULL) and its bytes. The bytes go
    /// through a ``ByteWriter`` and into one `ByteBuffer` at the end, which
    /// costs a fraction of writing each element with a `ByteBuffer` call.
    private static func writeArray<Element>(
        _ values: some Sequence<Element?>, count: Int, hasNull: Bool, element: UInt32, into buffer: inout ByteBuffer,
        _ writeElement: (Element, ByteWriter) -> Void
    ) throws(PostgresFailure) {
        guard let length = Int32(exactly: count) else {
            throw PostgresFailure(.binding, "an array of \(count) elements is longer than PostgreSQL allows")
        }
        let output = ByteWriter(capacity: 20 + count * 12)
        output.appendBigEndian(Int32(count == 0 ? 0 : 1))
        output.appendBigEndian(Int32(hasNull ? 1 : 0))
        output.appendBigEndian(element)
        if count > 0 {
            output.appendBigEndian(length)
            output.appendBigEndian(Int32(1))
            for value in values {
                guard let value else {
                    output.appendBigEndian(Int32(-1))
                    continue
                }
                // The element's length goes before it; write a placeholder and
                // fill it in once the element's size is known.
                let lengthOffset = output.count
                output.appendBigEndian(Int32(0))
                writeElement(value, output)
                guard let elementLength = Int32(exactly: output.count - lengthOffset - 4) else {
                    throw PostgresFailure(.binding, "an array element is longer than PostgreSQL allows")
                }
                output.setBigEndian(elementLength, at: lengthOffset)
            }
        }
        buffer = output.takeBuffer()
    }
}
