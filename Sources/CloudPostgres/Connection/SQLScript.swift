/// Splits a script of SQL statements at the semicolons that end them.
///
/// postgres-nio speaks only PostgreSQL's extended query protocol, which takes
/// one statement per message, so a script (a schema, a migration) is sent a
/// statement at a time. A semicolon ends a statement unless it is inside a
/// string ('…', E'…' with backslash escapes), a quoted identifier ("…"), a
/// dollar-quoted body ($$…$$, $tag$…$tag$) or a comment (-- to the end of
/// the line, /* … */ nested). Statements that are empty or only comments are
/// dropped.
enum SQLScript {
    static func statements(_ script: String) -> [String] {
        let bytes = Array(script.utf8)
        var statements: [String] = []
        var start = 0
        var index = 0

        func flush(upTo end: Int) {
            let text = String(decoding: bytes[start..<end], as: UTF8.self)
            if hasCode(Array(bytes[start..<end])) {
                statements.append(text.trimmingWhitespace())
            }
        }

        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: ";"):
                flush(upTo: index)
                index += 1
                start = index
            case UInt8(ascii: "'"):
                let escapes = index > 0 && (bytes[index - 1] == UInt8(ascii: "E") || bytes[index - 1] == UInt8(ascii: "e"))
                    && (index < 2 || !isIdentifierByte(bytes[index - 2]))
                index = skipQuoted(bytes, from: index, quote: UInt8(ascii: "'"), backslashEscapes: escapes)
            case UInt8(ascii: "\""):
                index = skipQuoted(bytes, from: index, quote: UInt8(ascii: "\""), backslashEscapes: false)
            case UInt8(ascii: "-") where index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "-"):
                index = skipLineComment(bytes, from: index)
            case UInt8(ascii: "/") where index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "*"):
                index = skipBlockComment(bytes, from: index)
            case UInt8(ascii: "$") where index == 0 || !isIdentifierByte(bytes[index - 1]):
                index = skipDollarQuoted(bytes, from: index)
            default:
                index += 1
            }
        }
        flush(upTo: bytes.count)
        return statements
    }

    private static func isIdentifierByte(_ byte: UInt8) -> Bool {
        byte >= 0x80 || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "$")
            || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    /// The index after the closing quote; a doubled quote stands for one.
    private static func skipQuoted(_ bytes: [UInt8], from start: Int, quote: UInt8, backslashEscapes: Bool) -> Int {
        var index = start + 1
        while index < bytes.count {
            let byte = bytes[index]
            if backslashEscapes && byte == UInt8(ascii: "\\") {
                index += 2
            } else if byte == quote {
                if index + 1 < bytes.count && bytes[index + 1] == quote {
                    index += 2
                } else {
                    return index + 1
                }
            } else {
                index += 1
            }
        }
        return bytes.count
    }

    private static func skipLineComment(_ bytes: [UInt8], from start: Int) -> Int {
        var index = start + 2
        while index < bytes.count && bytes[index] != UInt8(ascii: "\n") { index += 1 }
        return index
    }

    private static func skipBlockComment(_ bytes: [UInt8], from start: Int) -> Int {
        var depth = 0
        var index = start
        while index + 1 < bytes.count {
            if bytes[index] == UInt8(ascii: "/") && bytes[index + 1] == UInt8(ascii: "*") {
                depth += 1
                index += 2
            } else if bytes[index] == UInt8(ascii: "*") && bytes[index + 1] == UInt8(ascii: "/") {
                depth -= 1
                index += 2
                if depth == 0 { return index }
            } else {
                index += 1
            }
        }
        return bytes.count
    }

    /// After `$tag$ … $tag$`, or just past the `$` when it opens no dollar
    /// quote (a parameter such as `$1`).
    private static func skipDollarQuoted(_ bytes: [UInt8], from start: Int) -> Int {
        var tagEnd = start + 1
        while tagEnd < bytes.count && bytes[tagEnd] != UInt8(ascii: "$") {
            let byte = bytes[tagEnd]
            let digit = (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            // A tag is an identifier without $, and does not start with a digit.
            guard isIdentifierByte(byte) && byte != UInt8(ascii: "$") && !(digit && tagEnd == start + 1) else {
                return start + 1
            }
            tagEnd += 1
        }
        guard tagEnd < bytes.count else { return start + 1 }
        let tag = bytes[start...tagEnd]
        var index = tagEnd + 1
        while index + tag.count <= bytes.count {
            if bytes[index] == UInt8(ascii: "$") && bytes[index..<(index + tag.count)].elementsEqual(tag) {
                return index + tag.count
            }
            index += 1
        }
        return bytes.count
    }

    /// Whether a statement holds anything but white space and comments.
    private static func hasCode(_ bytes: [UInt8]) -> Bool {
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r") {
                index += 1
            } else if byte == UInt8(ascii: "-") && index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "-") {
                index = skipLineComment(bytes, from: index)
            } else if byte == UInt8(ascii: "/") && index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "*") {
                index = skipBlockComment(bytes, from: index)
            } else {
                return true
            }
        }
        return false
    }
}

extension String {
    fileprivate func trimmingWhitespace() -> String {
        let isSpace: (Character) -> Bool = { $0.isWhitespace }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }
}
