import Foundation

/// Reads the primitives written by `BinaryWriter`, refusing anything that is not
/// the canonical encoding: truncated input, overlong varints, invalid UTF-8,
/// lengths beyond the input.
public struct BinaryReader {
    public let bytes: [UInt8]
    public private(set) var offset: Int

    public init(_ bytes: [UInt8], offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    public var isAtEnd: Bool { offset == bytes.count }
    public var remaining: Int { bytes.count - offset }

    public mutating func byte() throws(CodecError) -> UInt8 {
        guard offset < bytes.count else {
            throw CodecError(.truncated, at: offset, "input ends where a byte was expected")
        }
        defer { offset += 1 }
        return bytes[offset]
    }

    public mutating func uvarint() throws(CodecError) -> UInt64 {
        let start = offset
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard offset < bytes.count else {
                throw CodecError(.truncated, at: start, "input ends inside a varint")
            }
            let byte = bytes[offset]
            offset += 1
            if shift == 63 && byte > 1 {
                throw CodecError(.overlongVarint, at: start, "varint does not fit in 64 bits")
            }
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 {
                if byte == 0 && shift > 0 {
                    throw CodecError(.overlongVarint, at: start, "varint has a redundant zero byte")
                }
                return value
            }
            shift += 7
        }
    }

    public mutating func svarint() throws(CodecError) -> Int64 {
        let raw = try uvarint()
        return Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1)))
    }

    public mutating func bool() throws(CodecError) -> Bool {
        let start = offset
        switch try byte() {
        case 0: return false
        case 1: return true
        case let other: throw CodecError(.nonCanonical, at: start, "boolean byte is \(other), expected 0 or 1")
        }
    }

    public mutating func fixed64() throws(CodecError) -> UInt64 {
        guard remaining >= 8 else {
            throw CodecError(.truncated, at: offset, "input ends inside an 8-byte value")
        }
        var value: UInt64 = 0
        for index in 0..<8 {
            value |= UInt64(bytes[offset + index]) << (8 * UInt64(index))
        }
        offset += 8
        return value
    }

    public mutating func double() throws(CodecError) -> Double {
        Double(bitPattern: try fixed64())
    }

    /// A length prefix, checked against the bytes that remain so a corrupt length
    /// cannot make the reader allocate or scan past the input.
    public mutating func length(maximum: Int = Int(Int32.max)) throws(CodecError) -> Int {
        let start = offset
        let length = try uvarint()
        guard length <= UInt64(maximum) else {
            throw CodecError(.limitExceeded, at: start, "length \(length) exceeds the limit of \(maximum)")
        }
        return Int(length)
    }

    /// Reads a length prefix and steps over that many bytes, returning where
    /// they are; `what` names the field in the error.
    private mutating func lengthPrefixed(_ what: String) throws(CodecError) -> Range<Int> {
        let start = offset
        let count = try length()
        guard count <= remaining else {
            throw CodecError(.truncated, at: start, "\(what) \(count) runs past the end of the input")
        }
        offset += count
        return offset - count..<offset
    }

    public mutating func data() throws(CodecError) -> [UInt8] {
        Array(bytes[try lengthPrefixed("length")])
    }

    /// The next `count` bytes, for fixed-size fields (hashes, tokens, MACs).
    public mutating func fixedBytes(_ count: Int, _ what: String) throws(CodecError) -> [UInt8] {
        guard remaining >= count else {
            throw CodecError(.truncated, at: offset, "\(what) needs \(count) bytes, \(remaining) left")
        }
        offset += count
        return Array(bytes[offset - count..<offset])
    }

    /// Steps over a length-prefixed field (a string or data) without decoding it.
    public mutating func skipLengthPrefixed() throws(CodecError) {
        _ = try lengthPrefixed("length")
    }

    public mutating func string() throws(CodecError) -> String {
        let start = offset
        let range = try lengthPrefixed("string length")
        guard let text = BinaryReader.validUTF8(bytes, range) else {
            throw CodecError(.invalidUTF8, at: start, "string is not valid UTF-8")
        }
        return text
    }

    /// The string `bytes[range]` spells, nil when it is not valid UTF-8.
    ///
    /// `String(decoding:as:)` is the standard library's fast path, but it
    /// repairs invalid UTF-8 instead of refusing it; a repaired string's bytes
    /// differ from the input, so comparing them refuses exactly what
    /// `String(validating:as:)` refuses. (That one goes through an unspecialized
    /// generic on every call, which was the largest single cost of decoding a
    /// journal.) The bytes are compared with `memcmp`, not element by element:
    /// this runs for every string of every journal row a restore decodes.
    private static func validUTF8(_ bytes: [UInt8], _ range: Range<Int>) -> String? {
        bytes.withUnsafeBufferPointer { buffer in
            let input = UnsafeBufferPointer(rebasing: buffer[range])
            var text = String(decoding: input, as: UTF8.self)
            let unchanged = text.withUTF8 { decoded in
                guard decoded.count == input.count, let left = decoded.baseAddress, let right = input.baseAddress else {
                    return decoded.count == input.count
                }
                return memcmp(left, right, input.count) == 0
            }
            return unchanged ? text : nil
        }
    }

    public mutating func optional<T>(_ read: (inout BinaryReader) throws(CodecError) -> T) throws(CodecError) -> T? {
        let start = offset
        switch try byte() {
        case 0: return nil
        case 1: return try read(&self)
        case let other: throw CodecError(.nonCanonical, at: start, "presence byte is \(other), expected 0 or 1")
        }
    }
}
