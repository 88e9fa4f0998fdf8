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
///
/// Bytes are stored through a raw pointer and copied into a `ByteBuffer` once
/// per chunk: writing them one `ByteBuffer` call at a time costs several times
/// more, most of all in debug builds, where `swift test` runs it.
struct CopyTextEncoder {
    /// Buffers ready to send, in order.
    private(set) var chunks: [ByteBuffer] = []
    private(set) var rowCount = 0
    private let output: ByteWriter
    private let chunkBytes: Int
    private let columnCount: Int

    init(columnCount: Int, chunkBytes: Int = 1 << 20) {
        self.columnCount = columnCount
        self.chunkBytes = chunkBytes
        self.output = ByteWriter(capacity: chunkBytes + chunkBytes / 4)
    }

    mutating func append(_ row: [PostgresValue]) throws(PostgresFailure) {
        guard row.count == columnCount else {
            throw PostgresFailure(.binding, "COPY row \(rowCount) has \(row.count) values for \(columnCount) columns")
        }
        var first = true
        for value in row {
            if !first { output.append(UInt8(ascii: "\t")) }
            first = false
            write(value)
        }
        output.append(UInt8(ascii: "\n"))
        rowCount += 1
        if output.count >= chunkBytes {
            chunks.append(output.takeBuffer())
        }
    }

    /// Every buffer, the last partial one included.
    mutating func finish() -> [ByteBuffer] {
        if output.count > 0 { chunks.append(output.takeBuffer()) }
        return chunks
    }

    private func write(_ value: PostgresValue) {
        switch value {
        case .null: output.append("\\N")
        case .int64(let number): output.appendDecimal(number)
        case .bool(let flag): output.append(flag ? UInt8(ascii: "t") : UInt8(ascii: "f"))
        case .double(let number): writeDouble(number)
        case .text(let text): writeEscaped(text, quoted: false)
        case .bytea(let bytes):
            output.append("\\\\x")
            output.appendHex(bytes)
        case .int64Array(let values): writeArray(values) { $0.appendDecimal($1) }
        case .optionalInt64Array(let values): writeArray(values) { $0.appendDecimal($1) }
        case .boolArray(let values): writeArray(values) { $0.append($1 ? UInt8(ascii: "t") : UInt8(ascii: "f")) }
        case .optionalBoolArray(let values): writeArray(values) { $0.append($1 ? UInt8(ascii: "t") : UInt8(ascii: "f")) }
        case .textArray(let values): writeArray(values) { _ = $0; writeEscaped($1, quoted: true) }
        case .optionalTextArray(let values): writeArray(values) { _ = $0; writeEscaped($1, quoted: true) }
        case .byteaArray(let values): writeArray(values) { _ = $0; writeByteaElement($1) }
        case .optionalByteaArray(let values): writeArray(values) { _ = $0; writeByteaElement($1) }
        }
    }

    private func writeArray<Element>(_ values: [Element], _ writeElement: (ByteWriter, Element) -> Void) {
        output.append(UInt8(ascii: "{"))
        var first = true
        for value in values {
            if !first { output.append(UInt8(ascii: ",")) }
            first = false
            writeElement(output, value)
        }
        output.append(UInt8(ascii: "}"))
    }

    private func writeArray<Element>(_ values: [Element?], _ writeElement: (ByteWriter, Element) -> Void) {
        output.append(UInt8(ascii: "{"))
        var first = true
        for value in values {
            if !first { output.append(UInt8(ascii: ",")) }
            first = false
            if let value { writeElement(output, value) } else { output.append("NULL") }
        }
        output.append(UInt8(ascii: "}"))
    }

    private func writeDouble(_ number: Double) {
        if number.isNaN {
            output.append("NaN")
        } else if number.isInfinite {
            output.append(number < 0 ? "-Infinity" : "Infinity")
        } else {
            var text = number.description
            text.withUTF8 { output.append(UnsafeRawBufferPointer($0)) }
        }
    }

    /// Text with COPY's escapes, and when `quoted` (an array element) in double
    /// quotes with the array literal's escapes under COPY's: a backslash
    /// becomes four, a quote `\\"`. The common case, with nothing to escape, is
    /// one scan and one copy.
    private func writeEscaped(_ text: String, quoted: Bool) {
        if quoted { output.append(UInt8(ascii: "\"")) }
        var text = text
        text.withUTF8 { bytes in
            guard let base = bytes.baseAddress else { return }
            var plain = 0
            var index = 0
            while index < bytes.count {
                let byte = base[index]
                let special = byte < 0x20 || byte == UInt8(ascii: "\\") || (quoted && byte == UInt8(ascii: "\""))
                if special {
                    output.append(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[plain..<index])))
                    switch byte {
                    case UInt8(ascii: "\\"): output.append(quoted ? "\\\\\\\\" : "\\\\")
                    case UInt8(ascii: "\""): output.append("\\\\\"")
                    case UInt8(ascii: "\n"): output.append("\\n")
                    case UInt8(ascii: "\r"): output.append("\\r")
                    case UInt8(ascii: "\t"): output.append("\\t")
                    default: output.append(byte)
                    }
                    plain = index + 1
                }
                index += 1
            }
            output.append(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[plain..<bytes.count])))
        }
        if quoted { output.append(UInt8(ascii: "\"")) }
    }

    /// A bytea array element: `"\x…"` in the array literal, its backslash
    /// escaped for the array and again for COPY.
    private func writeByteaElement(_ bytes: [UInt8]) {
        output.append("\"\\\\\\\\x")
        output.appendHex(bytes)
        output.append(UInt8(ascii: "\""))
    }
}

/// A growing run of bytes in memory of its own, handed out as `ByteBuffer`s.
final class ByteWriter {
    private var storage: UnsafeMutableRawPointer
    private var capacity: Int
    private(set) var count = 0

    init(capacity: Int) {
        self.capacity = max(capacity, 64)
        self.storage = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 1)
    }

    deinit {
        storage.deallocate()
    }

    /// The bytes written so far, as a buffer; the writer starts empty again.
    func takeBuffer() -> ByteBuffer {
        let buffer = ByteBuffer(bytes: UnsafeRawBufferPointer(start: storage, count: count))
        count = 0
        return buffer
    }

    private func reserve(_ extra: Int) {
        guard count + extra > capacity else { return }
        var newCapacity = capacity * 2
        while newCapacity < count + extra { newCapacity *= 2 }
        let bigger = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 1)
        bigger.copyMemory(from: storage, byteCount: count)
        storage.deallocate()
        storage = bigger
        capacity = newCapacity
    }

    func append(_ byte: UInt8) {
        reserve(1)
        storage.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    func append(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        reserve(bytes.count)
        (storage + count).copyMemory(from: base, byteCount: bytes.count)
        count += bytes.count
    }

    /// An integer in network byte order, as PostgreSQL's binary format has them.
    func appendBigEndian<Integer: FixedWidthInteger>(_ value: Integer) {
        reserve(MemoryLayout<Integer>.size)
        storage.storeBytes(of: value.bigEndian, toByteOffset: count, as: Integer.self)
        count += MemoryLayout<Integer>.size
    }

    /// Overwrites four bytes written earlier, at `offset`, with `value` in
    /// network byte order.
    func setBigEndian(_ value: Int32, at offset: Int) {
        precondition(offset >= 0 && offset + 4 <= count, "ByteWriter.setBigEndian past the bytes written")
        storage.storeBytes(of: value.bigEndian, toByteOffset: offset, as: Int32.self)
    }

    func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    func append(_ text: String) {
        var text = text
        text.withUTF8 { append(UnsafeRawBufferPointer($0)) }
    }

    func append(_ text: StaticString) {
        append(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// The number in decimal, written from its lowest digit back; the
    /// magnitude is a UInt64, so that Int64.min has one.
    func appendDecimal(_ number: Int64) {
        reserve(20)
        var magnitude = number.magnitude
        var digits = 0
        var scan = magnitude
        repeat {
            digits += 1
            scan /= 10
        } while scan > 0
        if number < 0 {
            storage.storeBytes(of: UInt8(ascii: "-"), toByteOffset: count, as: UInt8.self)
            count += 1
        }
        var offset = count + digits - 1
        repeat {
            storage.storeBytes(of: UInt8(ascii: "0") + UInt8(magnitude % 10), toByteOffset: offset, as: UInt8.self)
            magnitude /= 10
            offset -= 1
        } while magnitude > 0
        count += digits
    }

    func appendHex(_ bytes: [UInt8]) {
        reserve(bytes.count * 2)
        bytes.withUnsafeBufferPointer { source in
            guard let from = source.baseAddress else { return }
            var index = 0
            while index < source.count {
                let byte = from[index]
                storage.storeBytes(of: Self.hexDigit(byte >> 4), toByteOffset: count + 2 * index, as: UInt8.self)
                storage.storeBytes(of: Self.hexDigit(byte & 0x0f), toByteOffset: count + 2 * index + 1, as: UInt8.self)
                index += 1
            }
        }
        count += bytes.count * 2
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }
}
