import NIOCore

/// Rows in the text format of `COPY … FROM STDIN`, in buffers of about a
/// mebibyte each.
///
/// The format: columns separated by a tab, rows ended by a newline, NULL as
/// `\N`, and a backslash, tab, newline or carriage return inside a value
/// escaped with a backslash. bytea goes as hexadecimal (`\x…`, its backslash
/// escaped); an array as its literal (`{…}`) with each text or bytea
/// element double-quoted, so that no element is taken for NULL or split at
/// a comma, and both the array's escapes and COPY's applied.
struct CopyTextEncoder {
    /// Buffers ready to send, in order.
    private(set) var chunks: [ByteBuffer] = []
    private(set) var rowCount = 0
    private var buffer: ByteBuffer
    private let chunkBytes: Int
    private let columnCount: Int

    init(columnCount: Int, chunkBytes: Int = 1 << 20) {
        self.columnCount = columnCount
        self.chunkBytes = chunkBytes
        self.buffer = ByteBufferAllocator().buffer(capacity: chunkBytes + chunkBytes / 4)
    }

    mutating func append(_ row: [PostgresValue]) throws(PostgresFailure) {
        guard row.count == columnCount else {
            throw PostgresFailure(.binding, "COPY row \(rowCount) has \(row.count) values for \(columnCount) columns")
        }
        for (index, value) in row.enumerated() {
            if index > 0 { buffer.writeInteger(UInt8(ascii: "\t")) }
            write(value)
        }
        buffer.writeInteger(UInt8(ascii: "\n"))
        rowCount += 1
        if buffer.readableBytes >= chunkBytes {
            chunks.append(buffer)
            buffer = ByteBufferAllocator().buffer(capacity: chunkBytes + chunkBytes / 4)
        }
    }

    /// Every buffer, the last partial one included.
    mutating func finish() -> [ByteBuffer] {
        if buffer.readableBytes > 0 { chunks.append(buffer) }
        buffer.clear()
        return chunks
    }

    private mutating func write(_ value: PostgresValue) {
        switch value {
        case .null: buffer.writeStaticString("\\N")
        case .int64(let number): writeDecimal(number)
        case .bool(let flag): buffer.writeInteger(flag ? UInt8(ascii: "t") : UInt8(ascii: "f"))
        case .double(let number): writeDouble(number)
        case .text(let text): writeEscaped(text)
        case .bytea(let bytes):
            buffer.writeStaticString("\\\\x")
            writeHex(bytes)
        case .int64Array(let values): writeArray(values) { $0.writeDecimal($1) }
        case .optionalInt64Array(let values): writeArray(values) { $0.writeDecimal($1) }
        case .boolArray(let values): writeArray(values) { $0.buffer.writeInteger($1 ? UInt8(ascii: "t") : UInt8(ascii: "f")) }
        case .optionalBoolArray(let values): writeArray(values) { $0.buffer.writeInteger($1 ? UInt8(ascii: "t") : UInt8(ascii: "f")) }
        case .textArray(let values): writeArray(values) { $0.writeQuotedElement($1) }
        case .optionalTextArray(let values): writeArray(values) { $0.writeQuotedElement($1) }
        case .byteaArray(let values): writeArray(values) { $0.writeByteaElement($1) }
        case .optionalByteaArray(let values): writeArray(values) { $0.writeByteaElement($1) }
        }
    }

    private mutating func writeArray<Element>(_ values: [Element], _ writeElement: (inout Self, Element) -> Void) {
        buffer.writeInteger(UInt8(ascii: "{"))
        for (index, value) in values.enumerated() {
            if index > 0 { buffer.writeInteger(UInt8(ascii: ",")) }
            writeElement(&self, value)
        }
        buffer.writeInteger(UInt8(ascii: "}"))
    }

    private mutating func writeArray<Element>(_ values: [Element?], _ writeElement: (inout Self, Element) -> Void) {
        buffer.writeInteger(UInt8(ascii: "{"))
        for (index, value) in values.enumerated() {
            if index > 0 { buffer.writeInteger(UInt8(ascii: ",")) }
            if let value { writeElement(&self, value) } else { buffer.writeStaticString("NULL") }
        }
        buffer.writeInteger(UInt8(ascii: "}"))
    }

    private mutating func writeDecimal(_ number: Int64) {
        // Digits from the lowest, into a scratch space, then copied in order;
        // the magnitude as UInt64 so that Int64.min has one.
        var magnitude = number.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var count = 0
            repeat {
                digits[19 - count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            if number < 0 { buffer.writeInteger(UInt8(ascii: "-")) }
            buffer.writeBytes(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(digits)[(20 - count)...]))
        }
    }

    private mutating func writeDouble(_ number: Double) {
        if number.isNaN {
            buffer.writeStaticString("NaN")
        } else if number.isInfinite {
            buffer.writeStaticString(number < 0 ? "-Infinity" : "Infinity")
        } else {
            buffer.writeString(number.description)
        }
    }

    /// Text with COPY's escapes: the common case, with nothing to escape, is
    /// one copy.
    private mutating func writeEscaped(_ text: String) {
        let needsEscape = text.utf8.contains { $0 == UInt8(ascii: "\\") || $0 < 0x20 }
        guard needsEscape else {
            buffer.writeString(text)
            return
        }
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\\"): buffer.writeStaticString("\\\\")
            case UInt8(ascii: "\n"): buffer.writeStaticString("\\n")
            case UInt8(ascii: "\r"): buffer.writeStaticString("\\r")
            case UInt8(ascii: "\t"): buffer.writeStaticString("\\t")
            default: buffer.writeInteger(byte)
            }
        }
    }

    /// An array element in double quotes: the array literal escapes `"` and
    /// `\` with a backslash, then COPY doubles every backslash.
    private mutating func writeQuotedElement(_ text: String) {
        buffer.writeInteger(UInt8(ascii: "\""))
        let needsEscape = text.utf8.contains { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\"") || $0 < 0x20 }
        if needsEscape {
            for byte in text.utf8 {
                switch byte {
                case UInt8(ascii: "\\"): buffer.writeStaticString("\\\\\\\\")
                case UInt8(ascii: "\""): buffer.writeStaticString("\\\\\"")
                case UInt8(ascii: "\n"): buffer.writeStaticString("\\n")
                case UInt8(ascii: "\r"): buffer.writeStaticString("\\r")
                case UInt8(ascii: "\t"): buffer.writeStaticString("\\t")
                default: buffer.writeInteger(byte)
                }
            }
        } else {
            buffer.writeString(text)
        }
        buffer.writeInteger(UInt8(ascii: "\""))
    }

    /// A bytea array element: `"\x…"` in the array literal, its backslash
    /// escaped for the array and again for COPY.
    private mutating func writeByteaElement(_ bytes: [UInt8]) {
        buffer.writeStaticString("\"\\\\\\\\x")
        writeHex(bytes)
        buffer.writeInteger(UInt8(ascii: "\""))
    }

    private mutating func writeHex(_ bytes: [UInt8]) {
        let digits: StaticString = "0123456789abcdef"
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: bytes.count * 2) { target in
            digits.withUTF8Buffer { hex in
                for (index, byte) in bytes.enumerated() {
                    target[2 * index] = hex[Int(byte >> 4)]
                    target[2 * index + 1] = hex[Int(byte & 0x0f)]
                }
            }
            return bytes.count * 2
        }
    }
}
