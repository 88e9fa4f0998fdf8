/// A syntax error in a JSON document: the byte offset (0-based) and what was expected.
public struct JSONSyntaxError: Error, Hashable, Sendable, CustomStringConvertible {
    public let offset: Int
    public let message: String

    /// The 1-based column of the offending byte, for messages about one-line documents.
    public var column: Int { offset + 1 }

    public var description: String { "column \(column): \(message)" }
}

/// A strict RFC 8259 reader. It refuses invalid UTF-8, unpaired surrogates,
/// repeated object keys, control characters in strings, and nesting deeper than
/// `maximumDepth`, each with the offset of the offending byte.
public struct JSONReader {
    public static let maximumDepth = 64

    private let bytes: [UInt8]
    private var offset = 0

    public static func parse(_ text: String) throws(JSONSyntaxError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    public static func parse(_ bytes: [UInt8]) throws(JSONSyntaxError) -> JSONValue {
        var reader = JSONReader(bytes: bytes)
        if let invalid = TextRule.firstInvalidUTF8(bytes) {
            throw JSONSyntaxError(offset: invalid, message: "invalid UTF-8")
        }
        reader.skipWhitespace()
        let value = try reader.value(depth: 0)
        reader.skipWhitespace()
        guard reader.offset == bytes.count else {
            throw reader.error("unexpected text after the JSON value")
        }
        return value
    }

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    private func error(_ message: String) -> JSONSyntaxError {
        JSONSyntaxError(offset: offset, message: message)
    }

    private var current: UInt8? { offset < bytes.count ? bytes[offset] : nil }

    private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 {
            offset += 1
        }
    }

    private mutating func value(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard depth < JSONReader.maximumDepth else {
            throw error("nesting deeper than \(JSONReader.maximumDepth) levels")
        }
        guard let byte = current else { throw error("expected a value, found the end of the line") }
        switch byte {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw error("expected a value (object, array, string, number, true, false or null)")
        }
    }

    private mutating func literal(_ word: String) throws(JSONSyntaxError) {
        for expected in word.utf8 {
            guard current == expected else { throw error("expected \(word)") }
            offset += 1
        }
    }

    private mutating func object(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        offset += 1
        var object = JSONObject()
        var seen = Set<String>()
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            offset += 1
            return .object(object)
        }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw error("expected a member name in double quotes") }
            let keyOffset = offset
            let key = try string()
            guard seen.insert(key).inserted else {
                throw JSONSyntaxError(offset: keyOffset, message: "member \"\(TextRule.printable(key, limit: 64))\" appears twice")
            }
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw error("expected ':' after a member name") }
            offset += 1
            skipWhitespace()
            let member = try value(depth: depth + 1)
            object.append(JSONObject.Member(key: key, value: member))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): offset += 1
            case UInt8(ascii: "}"): offset += 1; return .object(object)
            default: throw error("expected ',' or '}' in an object")
            }
        }
    }

    private mutating func array(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        offset += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            offset += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try value(depth: depth + 1))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): offset += 1
            case UInt8(ascii: "]"): offset += 1; return .array(elements)
            default: throw error("expected ',' or ']' in an array")
            }
        }
    }

    private mutating func string() throws(JSONSyntaxError) -> String {
        offset += 1
        var runStart = offset
        var text = ""
        func flushRun(_ end: Int) {
            if end > runStart { text += String(decoding: bytes[runStart..<end], as: UTF8.self) }
        }
        while true {
            guard let byte = current else { throw error("unterminated string") }
            switch byte {
            case UInt8(ascii: "\""):
                flushRun(offset)
                offset += 1
                return text
            case UInt8(ascii: "\\"):
                flushRun(offset)
                offset += 1
                guard let escape = current else { throw error("unterminated escape") }
                offset += 1
                switch escape {
                case UInt8(ascii: "\""): text += "\""
                case UInt8(ascii: "\\"): text += "\\"
                case UInt8(ascii: "/"): text += "/"
                case UInt8(ascii: "b"): text += "\u{08}"
                case UInt8(ascii: "f"): text += "\u{0C}"
                case UInt8(ascii: "n"): text += "\n"
                case UInt8(ascii: "r"): text += "\r"
                case UInt8(ascii: "t"): text += "\t"
                case UInt8(ascii: "u"):
                    let escapeOffset = offset - 2
                    let first = try hex4()
                    var scalarValue = UInt32(first)
                    if (0xD800...0xDBFF).contains(first) {
                        guard current == UInt8(ascii: "\\"), offset + 1 < bytes.count, bytes[offset + 1] == UInt8(ascii: "u") else {
                            throw JSONSyntaxError(offset: escapeOffset, message: "unpaired surrogate in \\u escape")
                        }
                        offset += 2
                        let second = try hex4()
                        guard (0xDC00...0xDFFF).contains(second) else {
                            throw JSONSyntaxError(offset: escapeOffset, message: "unpaired surrogate in \\u escape")
                        }
                        scalarValue = 0x10000 + ((UInt32(first) - 0xD800) << 10) + (UInt32(second) - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(first) {
                        throw JSONSyntaxError(offset: escapeOffset, message: "unpaired surrogate in \\u escape")
                    }
                    guard let scalar = Unicode.Scalar(scalarValue) else {
                        throw JSONSyntaxError(offset: escapeOffset, message: "invalid \\u escape")
                    }
                    text.unicodeScalars.append(scalar)
                default:
                    offset -= 1
                    throw error("invalid escape character")
                }
                runStart = offset
            case 0x00..<0x20:
                throw error("control character in a string (escape it)")
            default:
                offset += 1
            }
        }
    }

    private mutating func hex4() throws(JSONSyntaxError) -> UInt16 {
        var value: UInt16 = 0
        for _ in 0..<4 {
            guard let byte = current else { throw error("expected four hex digits") }
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("expected four hex digits")
            }
            value = value << 4 | UInt16(digit)
            offset += 1
        }
        return value
    }

    private mutating func number() throws(JSONSyntaxError) -> JSONValue {
        let start = offset
        var isInteger = true
        if current == UInt8(ascii: "-") { offset += 1 }
        guard let first = current, first >= 0x30, first <= 0x39 else { throw error("expected a digit") }
        if first == UInt8(ascii: "0") {
            offset += 1
            if let next = current, next >= 0x30, next <= 0x39 { throw error("a number cannot start with 0") }
        } else {
            while let digit = current, digit >= 0x30, digit <= 0x39 { offset += 1 }
        }
        if current == UInt8(ascii: ".") {
            isInteger = false
            offset += 1
            guard let digit = current, digit >= 0x30, digit <= 0x39 else { throw error("expected a digit after '.'") }
            while let digit = current, digit >= 0x30, digit <= 0x39 { offset += 1 }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            isInteger = false
            offset += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { offset += 1 }
            guard let digit = current, digit >= 0x30, digit <= 0x39 else { throw error("expected a digit in the exponent") }
            while let digit = current, digit >= 0x30, digit <= 0x39 { offset += 1 }
        }
        let literal = String(decoding: bytes[start..<offset], as: UTF8.self)
        if isInteger, let integer = Int64(literal) {
            return .integer(integer)
        }
        guard let double = Double(literal), double.isFinite else {
            throw JSONSyntaxError(offset: start, message: "number is out of range")
        }
        return .double(double)
    }
}
