import NIOCore

extension PostgresValue {
    /// Decodes a column value sent in PostgreSQL's binary format.
    ///
    /// Every length is checked against the bytes at hand, so a malformed value
    /// is an error, never a trap.
    ///
    /// - Returns: the value, or a reason it cannot be decoded (a type this layer
    ///   does not read, a wrong length, text that is not UTF-8).
    static func decodeBinary(type: UInt32, bytes: ByteBuffer?) -> Result<PostgresValue, DecodingProblem> {
        guard var bytes else { return .success(.null) }
        if let element = TypeOID.element(ofArray: type) {
            return decodeArray(element: element, arrayType: type, bytes: &bytes)
        }
        return decodeScalar(type: type, bytes: &bytes)
    }

    /// Why a column value cannot be decoded.
    struct DecodingProblem: Error {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    private static func decodeScalar(type: UInt32, bytes: inout ByteBuffer) -> Result<PostgresValue, DecodingProblem> {
        func sized<T: FixedWidthInteger>(_: T.Type) -> T? {
            bytes.readableBytes == MemoryLayout<T>.size ? bytes.readInteger(as: T.self) : nil
        }
        // Made only on failure: building its message for every column of every row costs more than the decoding.
        func wrongLength() -> DecodingProblem { DecodingProblem("a \(TypeOID.typeName(type)) value of \(bytes.readableBytes) bytes") }
        switch type {
        case TypeOID.int8:
            guard let value = sized(Int64.self) else { return .failure(wrongLength()) }
            return .success(.int64(value))
        case TypeOID.int4:
            guard let value = sized(Int32.self) else { return .failure(wrongLength()) }
            return .success(.int64(Int64(value)))
        case TypeOID.int2:
            guard let value = sized(Int16.self) else { return .failure(wrongLength()) }
            return .success(.int64(Int64(value)))
        case TypeOID.oid:
            guard let value = sized(UInt32.self) else { return .failure(wrongLength()) }
            return .success(.int64(Int64(value)))
        case TypeOID.bool:
            guard let value = sized(UInt8.self) else { return .failure(wrongLength()) }
            return .success(.bool(value != 0))
        case TypeOID.float8:
            guard let bits = sized(UInt64.self) else { return .failure(wrongLength()) }
            return .success(.double(Double(bitPattern: bits)))
        case TypeOID.float4:
            guard let bits = sized(UInt32.self) else { return .failure(wrongLength()) }
            return .success(.double(Double(Float(bitPattern: bits))))
        case TypeOID.bytea:
            return .success(.bytea(Array(bytes.readableBytesView)))
        case TypeOID.jsonb:
            guard bytes.readInteger(as: UInt8.self) == 1 else {
                return .failure(DecodingProblem("a jsonb value in an unknown binary format version"))
            }
            return decodeText(&bytes).map { .text($0) }
        case _ where TypeOID.isText(type):
            return decodeText(&bytes).map { .text($0) }
        default:
            return .failure(DecodingProblem(
                "its type, \(TypeOID.typeName(type)), is not one this layer reads; cast it in the SQL (::int8, ::text, ::bytea)"))
        }
    }

    private static func decodeText(_ bytes: inout ByteBuffer) -> Result<String, DecodingProblem> {
        guard let text = String(validating: bytes.readableBytesView, as: UTF8.self) else {
            return .failure(DecodingProblem("text that is not valid UTF-8"))
        }
        return .success(text)
    }

    /// A one-dimensional array (or an empty one) in the binary array format
    /// that `PostgresValue+Binary.swift` writes.
    private static func decodeArray(element: UInt32, arrayType: UInt32, bytes: inout ByteBuffer)
        -> Result<PostgresValue, DecodingProblem>
    {
        let name = TypeOID.typeName(arrayType)
        guard let (dimensions, _, elementType) = bytes.readMultipleIntegers(as: (Int32, Int32, UInt32).self) else {
            return .failure(DecodingProblem("a \(name) value shorter than its header"))
        }
        guard elementType == element else {
            return .failure(DecodingProblem("a \(name) value whose elements are \(TypeOID.typeName(elementType))"))
        }
        var elements: [PostgresValue] = []
        switch dimensions {
        case 0:
            break
        case 1:
            guard let (count, _) = bytes.readMultipleIntegers(as: (Int32, Int32).self), count >= 0 else {
                return .failure(DecodingProblem("a \(name) value with a malformed dimension"))
            }
            // Each element takes at least its 4-byte length: a count larger than
            // that allows is malformed, and is refused before reserving room.
            guard Int(count) <= bytes.readableBytes / 4 else {
                return .failure(DecodingProblem("a \(name) value claiming \(count) elements in \(bytes.readableBytes) bytes"))
            }
            elements.reserveCapacity(Int(count))
            for _ in 0..<count {
                guard let length = bytes.readInteger(as: Int32.self) else {
                    return .failure(DecodingProblem("a \(name) value cut short"))
                }
                if length == -1 {
                    elements.append(.null)
                    continue
                }
                guard length >= 0, var slice = bytes.readSlice(length: Int(length)) else {
                    return .failure(DecodingProblem("a \(name) value cut short"))
                }
                switch decodeScalar(type: element, bytes: &slice) {
                case .success(let value): elements.append(value)
                case .failure(let problem): return .failure(DecodingProblem("an element of a \(name) value: \(problem.reason)"))
                }
            }
        default:
            return .failure(DecodingProblem("a \(name) value of \(dimensions) dimensions; this layer reads one"))
        }
        guard bytes.readableBytes == 0 else {
            return .failure(DecodingProblem("a \(name) value followed by \(bytes.readableBytes) stray bytes"))
        }
        return .success(collect(elements, element: element))
    }

    /// The array case for decoded elements: the plain one unless one is NULL.
    private static func collect(_ elements: [PostgresValue], element: UInt32) -> PostgresValue {
        let hasNull = elements.contains(.null)
        switch element {
        case TypeOID.int8, TypeOID.int4, TypeOID.int2, TypeOID.oid:
            let values = elements.map { value -> Int64? in if case .int64(let number) = value { number } else { nil } }
            return hasNull ? .optionalInt64Array(values) : .int64Array(values.compactMap { $0 })
        case TypeOID.bool:
            let values = elements.map { value -> Bool? in if case .bool(let flag) = value { flag } else { nil } }
            return hasNull ? .optionalBoolArray(values) : .boolArray(values.compactMap { $0 })
        case TypeOID.bytea:
            let values = elements.map { value -> [UInt8]? in if case .bytea(let bytes) = value { bytes } else { nil } }
            return hasNull ? .optionalByteaArray(values) : .byteaArray(values.compactMap { $0 })
        default:
            // The text types, the only other elements TypeOID.element(ofArray:) names.
            let values = elements.map { value -> String? in if case .text(let text) = value { text } else { nil } }
            return hasNull ? .optionalTextArray(values) : .textArray(values.compactMap { $0 })
        }
    }
}
