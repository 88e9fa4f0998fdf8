import Foundation

/// What a string from outside a process may hold: the one check every
/// string meets where it is parsed (an app call or an operations line, a
/// frame, an enrolment, a crawled page, a query, a snapshot's manifest, a
/// command-line name), on the device and in the cloud alike.
///
/// No string that enters holds a NUL. SQLite's C API takes and gives text
/// as C strings wherever a length is not passed (GRDB binds and reads text
/// that way), so a NUL ends the string early: `a\0x` and `a` would be stored
/// as one identifier, a name read back would no longer match the hash its
/// log row was chained with; PostgreSQL refuses the byte outright. Cutting
/// or mapping it would make two inputs one, so it is refused.
///
/// A `line` (a name, an identifier, a URL, an activity type) holds no
/// control character either: none of U+0000–U+001F, U+007F–U+009F, U+2028
/// and U+2029. Lines are printed in logs, error messages and terminals, one
/// to a line. `text` (a title, a description, a keyword, an attribute's
/// value) may hold tabs and line breaks.
///
/// A `String` is valid Unicode by construction; bytes are checked as UTF-8
/// by `string(utf8:)`, which never repairs them (a lone surrogate's three
/// bytes, an overlong form, a cut sequence are refused where they start).
public struct TextRule: Hashable, Sendable {
    /// Which characters the rule admits besides any other scalar.
    public enum Shape: Hashable, Sendable {
        /// No control character and no line or paragraph separator.
        case line
        /// Anything but NUL.
        case text
    }

    public let shape: Shape
    /// The allowed lengths in UTF-8 bytes.
    public let bytes: ClosedRange<Int>

    public init(_ shape: Shape, bytes: ClosedRange<Int>) {
        self.shape = shape
        self.bytes = bytes
    }

    /// An app or device name: 1 to 256 bytes on one line.
    public static let name = TextRule(.line, bytes: 1...256)
    /// A name read back from where this process wrote it (a store, a
    /// snapshot's manifest): 1 to 256 bytes without a NUL. An older build
    /// took names with other control characters, which must still read;
    /// only what no store keeps as written is refused.
    public static let storedName = TextRule(.text, bytes: 1...256)
    /// An item or domain identifier, an index name, an activity type, a
    /// result reference, an attribute name or a userInfo key.
    public static let identifier = TextRule(.line, bytes: 1...Limits.identifierBytes)
    /// An activity's web page URL as an app gives it.
    public static let url = TextRule(.line, bytes: 1...Limits.textBytes)
    /// One string attribute value, title or keyword as an app gives it.
    public static let text = TextRule(.text, bytes: 0...Limits.textBytes)

    /// The first thing about `value` this rule refuses, or nil.
    @inlinable
    public func problem(_ value: String) -> TextError? {
        var value = value
        let count = value.utf8.count
        guard count >= bytes.lowerBound else { return TextError(.empty) }
        guard count <= bytes.upperBound else { return TextError(.tooLong(bytes: count, limit: bytes.upperBound)) }
        return value.withUTF8 { TextRule.firstProblem(in: UnsafeRawBufferPointer($0), shape: shape) }
    }

    /// Throws the first thing about `value` this rule refuses.
    @inlinable
    public func check(_ value: String) throws(TextError) {
        if let problem = problem(value) { throw problem }
    }

    /// Whether this rule admits `value`.
    @inlinable
    public func admits(_ value: String) -> Bool {
        problem(value) == nil
    }

    /// The string `utf8` spells, when it is valid UTF-8 that this rule admits.
    public func string(utf8: some Collection<UInt8>) throws(TextError) -> String {
        let bytes = Array(utf8)
        guard bytes.count >= self.bytes.lowerBound else { throw TextError(.empty) }
        guard bytes.count <= self.bytes.upperBound else {
            throw TextError(.tooLong(bytes: bytes.count, limit: self.bytes.upperBound))
        }
        if let invalid = TextRule.firstInvalidUTF8(bytes) { throw TextError(.invalidUTF8, at: invalid) }
        if let problem = bytes.withUnsafeBytes({ TextRule.firstProblem(in: $0, shape: shape) }) { throw problem }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The first byte of `bytes`, valid UTF-8, that `shape` refuses.
    @usableFromInline
    static func firstProblem(in bytes: UnsafeRawBufferPointer, shape: Shape) -> TextError? {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return nil }
        switch shape {
        case .text:
            guard let nul = memchr(base, 0, bytes.count) else { return nil }
            return TextError(.nul, at: base.distance(to: UnsafeRawPointer(nul)))
        case .line:
            var offset = 0
            while offset < bytes.count {
                let byte = bytes[offset]
                if byte < 0x20 || byte == 0x7F {
                    return byte == 0 ? TextError(.nul, at: offset) : TextError(.control(UInt32(byte)), at: offset)
                }
                // U+0080–U+009F are C2 80–C2 9F; U+2028 and U+2029 are E2 80 A8 and E2 80 A9.
                if byte == 0xC2, offset + 1 < bytes.count, (0x80...0x9F).contains(bytes[offset + 1]) {
                    return TextError(.control(UInt32(bytes[offset + 1])), at: offset)
                }
                if byte == 0xE2, offset + 2 < bytes.count, bytes[offset + 1] == 0x80, bytes[offset + 2] == 0xA8 || bytes[offset + 2] == 0xA9 {
                    return TextError(.control(0x2000 + UInt32(bytes[offset + 2] & 0x3F)), at: offset)
                }
                offset += 1
            }
            return nil
        }
    }

    /// `value` as an error message or a log line may show it: every
    /// character a line may not hold (a NUL, a control character, a line
    /// break) written as `\u{…}`, and at most `limit` characters, the cut
    /// marked with `…`. For names and keys that came from outside, which a
    /// message must name without letting them write to the terminal.
    public static func printable(_ value: String, limit: Int = 256) -> String {
        var shown = ""
        var count = 0
        for scalar in value.unicodeScalars {
            guard count < limit else { return shown + "…" }
            count += 1
            let code = scalar.value
            if code < 0x20 || (0x7F...0x9F).contains(code) || code == 0x2028 || code == 0x2029 {
                shown += "\\u{" + String(code, radix: 16, uppercase: true) + "}"
            } else {
                shown.unicodeScalars.append(scalar)
            }
        }
        return shown
    }

    /// The offset of the first byte that does not start or continue valid
    /// UTF-8 (RFC 3629: no overlong form, no surrogate, nothing past
    /// U+10FFFF), or nil when all of `bytes` is valid.
    public static func firstInvalidUTF8(_ bytes: some Collection<UInt8>) -> Int? {
        var decoder = UTF8()
        var iterator = bytes.makeIterator()
        var consumed = 0
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): consumed += UTF8.width(scalar)
            case .emptyInput: return nil
            case .error: return consumed
            }
        }
    }
}

/// A string a `TextRule` refuses: why, and at which byte (from 0) when the
/// reason is one character. The description names neither the string nor
/// the field; callers add the field (`items[0].id: holds a NUL at byte 2`).
public struct TextError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Reason: Hashable, Sendable {
        case empty
        case tooLong(bytes: Int, limit: Int)
        case nul
        /// A control character or a line or paragraph separator, by its scalar value.
        case control(UInt32)
        case invalidUTF8
    }

    public let reason: Reason
    /// The offset in UTF-8 bytes of the character refused, from 0.
    public let offset: Int?

    public init(_ reason: Reason, at offset: Int? = nil) {
        self.reason = reason
        self.offset = offset
    }

    public var description: String {
        let at = offset.map { " at byte \($0 + 1)" } ?? ""
        switch reason {
        case .empty:
            return "must not be empty"
        case .tooLong(let bytes, let limit):
            return "is \(bytes) bytes; the limit is \(limit)"
        case .nul:
            return "holds a NUL character\(at), which no text may hold"
        case .control(let scalar):
            let hex = String(scalar, radix: 16, uppercase: true)
            let name = String(repeating: "0", count: max(0, 4 - hex.count)) + hex
            return "holds U+\(name)\(at), a control character or line break, which a name or identifier may not hold"
        case .invalidUTF8:
            return "is not valid UTF-8\(at)"
        }
    }
}
