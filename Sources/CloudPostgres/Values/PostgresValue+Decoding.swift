import NIOCore
import PostgresNIO

/// A column value comes back from postgres-nio as a ``PostgresValue``:
/// `PostgresRow.decode` and `PostgresCell.decode` take it as they take an
/// `Int64` (`PostgresValue?` for a column that may be NULL).
///
/// Integers (`int2`, `int4`, `int8`), `bool` and floats are read by
/// postgres-nio's own decoders. Text is read here, and must be valid UTF-8
/// (postgres-nio's would repair it silently); arrays are read here too,
/// since postgres-nio's refuse NULL elements and reserve room for the count
/// an array claims before checking the bytes hold it. Every length is checked
/// against the bytes at hand, so a malformed value is an error, never a trap.
extension PostgresValue: PostgresDecodable {
    public init<JSONDecoder: PostgresJSONDecoder>(
        from buffer: inout ByteBuffer, type: PostgresDataType, format: PostgresFormat,
        context: PostgresDecodingContext<JSONDecoder>
    ) throws {
        guard format == .binary else {
            throw DecodingProblem("a \(Self.typeName(type)) value in text format; this layer reads the binary format")
        }
        if let element = Self.element(ofArray: type) {
            self = try Self.decodeArray(element: element, arrayType: type, bytes: &buffer, context: context)
        } else {
            self = try Self.decodeScalar(type: type, bytes: &buffer, context: context)
        }
    }

    /// Why a column value cannot be decoded.
    struct DecodingProblem: Error {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    private static func decodeScalar<JSONDecoder: PostgresJSONDecoder>(
        type: PostgresDataType, bytes: inout ByteBuffer, context: PostgresDecodingContext<JSONDecoder>
    ) throws(DecodingProblem) -> PostgresValue {
        do {
            switch type {
            case .int8, .int4, .int2:
                return .int64(try Int64(from: &bytes, type: type, format: .binary, context: context))
            case .bool:
                return .bool(try Bool(from: &bytes, type: type, format: .binary, context: context))
            case .float8, .float4:
                return .double(try Double(from: &bytes, type: type, format: .binary, context: context))
            case .bytea:
                return .bytea(Array(bytes.readableBytesView))
            case .jsonb:
                guard bytes.readInteger(as: UInt8.self) == 1 else {
                    throw DecodingProblem("a jsonb value in an unknown binary format version")
                }
                return .text(try decodeText(&bytes))
            case .text, .varchar, .bpchar, .name, .json:
                return .text(try decodeText(&bytes))
            default:
                throw DecodingProblem(
                    "its type, \(typeName(type)), is not one this layer reads; cast it in the SQL (::int8, ::text, ::bytea)")
            }
        } catch let problem as DecodingProblem {
            throw problem
        } catch {
            throw DecodingProblem("a \(typeName(type)) value of \(bytes.readableBytes) bytes")
        }
    }

    private static func decodeText(_ bytes: inout ByteBuffer) throws(DecodingProblem) -> String {
        guard let text = String(validating: bytes.readableBytesView, as: UTF8.self) else {
            throw DecodingProblem("text that is not valid UTF-8")
        }
        return text
    }

    /// A one-dimensional array (or an empty one) in the binary array format
    /// that ``encode(into:context:)`` writes.
    private static func decodeArray<JSONDecoder: PostgresJSONDecoder>(
        element: PostgresDataType, arrayType: PostgresDataType, bytes: inout ByteBuffer,
        context: PostgresDecodingContext<JSONDecoder>
    ) throws(DecodingProblem) -> PostgresValue {
        let name = typeName(arrayType)
        guard let (dimensions, _, elementType) = bytes.readMultipleIntegers(as: (Int32, Int32, UInt32).self) else {
            throw DecodingProblem("a \(name) value shorter than its header")
        }
        guard elementType == element.rawValue else {
            throw DecodingProblem("a \(name) value whose elements are \(typeName(PostgresDataType(elementType)))")
        }
        var elements: [PostgresValue] = []
        switch dimensions {
        case 0:
            break
        case 1:
            guard let (count, _) = bytes.readMultipleIntegers(as: (Int32, Int32).self), count >= 0 else {
                throw DecodingProblem("a \(name) value with a malformed dimension")
            }
            // Each element takes at least its 4-byte length: a count larger than
            // that allows is malformed, and is refused before reserving room.
            guard Int(count) <= bytes.readableBytes / 4 else {
                throw DecodingProblem("a \(name) value claiming \(count) elements in \(bytes.readableBytes) bytes")
            }
            elements.reserveCapacity(Int(count))
            for _ in 0..<count {
                guard let length = bytes.readInteger(as: Int32.self) else {
                    throw DecodingProblem("a \(name) value cut short")
                }
                if length == -1 {
                    elements.append(.null)
                    continue
                }
                guard length >= 0, var slice = bytes.readSlice(length: Int(length)) else {
                    throw DecodingProblem("a \(name) value cut short")
                }
                do {
                    elements.append(try decodeScalar(type: element, bytes: &slice, context: context))
                } catch {
                    throw DecodingProblem("an element of a \(name) value: \(error.reason)")
                }
            }
        default:
            throw DecodingProblem("a \(name) value of \(dimensions) dimensions; this layer reads one")
        }
        guard bytes.readableBytes == 0 else {
            throw DecodingProblem("a \(name) value followed by \(bytes.readableBytes) stray bytes")
        }
        return collect(elements, element: element)
    }

    /// The array case for decoded elements: the plain one unless one is NULL.
    private static func collect(_ elements: [PostgresValue], element: PostgresDataType) -> PostgresValue {
        let hasNull = elements.contains(.null)
        switch element {
        case .int8, .int4, .int2:
            let values = elements.map { value -> Int64? in if case .int64(let number) = value { number } else { nil } }
            return hasNull ? .optionalInt64Array(values) : .int64Array(values.compactMap { $0 })
        case .bool:
            let values = elements.map { value -> Bool? in if case .bool(let flag) = value { flag } else { nil } }
            return hasNull ? .optionalBoolArray(values) : .boolArray(values.compactMap { $0 })
        case .bytea:
            let values = elements.map { value -> [UInt8]? in if case .bytea(let bytes) = value { bytes } else { nil } }
            return hasNull ? .optionalByteaArray(values) : .byteaArray(values.compactMap { $0 })
        default:
            // The text types, the only other elements `element(ofArray:)` names.
            let values = elements.map { value -> String? in if case .text(let text) = value { text } else { nil } }
            return hasNull ? .optionalTextArray(values) : .textArray(values.compactMap { $0 })
        }
    }

    /// The element type of an array type this layer reads, or nil. Arrays of
    /// floating-point numbers are not among them: Sightline stores none.
    private static func element(ofArray type: PostgresDataType) -> PostgresDataType? {
        switch type {
        case .boolArray: .bool
        case .byteaArray: .bytea
        case .nameArray: .name
        case .int2Array: .int2
        case .int4Array: .int4
        case .int8Array: .int8
        case .textArray: .text
        case .bpcharArray: .bpchar
        case .varcharArray: .varchar
        default: nil
        }
    }

    /// The type's name, for messages: PostgreSQL's for the types this layer
    /// knows, its number otherwise (`PostgresDataType`'s own description says
    /// `BIGINT` where PostgreSQL says `int8`).
    static func typeName(_ type: PostgresDataType) -> String {
        switch type {
        case .bool: "bool"
        case .bytea: "bytea"
        case .name: "name"
        case .int8: "int8"
        case .int2: "int2"
        case .int4: "int4"
        case .text: "text"
        case .json: "json"
        case .float4: "float4"
        case .float8: "float8"
        case .bpchar: "bpchar"
        case .varchar: "varchar"
        case .jsonb: "jsonb"
        default:
            if let element = element(ofArray: type) { "\(typeName(element))[]" } else { "type \(type.rawValue)" }
        }
    }
}
