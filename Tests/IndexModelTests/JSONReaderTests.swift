import IndexModel
import Testing

private func expectSyntaxError(_ text: String, column: Int, _ message: String? = nil,
                               sourceLocation: SourceLocation = #_sourceLocation) {
    expectSyntaxError(Array(text.utf8), column: column, message, sourceLocation: sourceLocation)
}

private func expectSyntaxError(_ bytes: [UInt8], column: Int, _ message: String? = nil,
                               sourceLocation: SourceLocation = #_sourceLocation) {
    do {
        let value = try JSONReader.parse(bytes)
        Issue.record("parsed \(value) from invalid JSON", sourceLocation: sourceLocation)
    } catch {
        #expect(error.column == column, "\(error)", sourceLocation: sourceLocation)
        if let message {
            #expect(error.message == message, sourceLocation: sourceLocation)
        }
    }
}

@Test func parsesEveryKindOfValue() throws {
    let document = #" { "s" : "a\"b\\c\/\n\t\u00e9\ud83d\ude00" , "i":-12, "d":1.5e2, "t":true, "f":false, "n":null, "a":[1,[],{}] } "#
    let expected: JSONObject = [
        "s": .string("a\"b\\c/\n\té😀"),
        "i": .integer(-12),
        "d": .double(150),
        "t": .bool(true),
        "f": .bool(false),
        "n": .null,
        "a": .array([.integer(1), .array([]), .object([:])]),
    ]
    #expect(try JSONReader.parse(document) == .object(expected))
}

@Test func keepsMembersInDocumentOrder() throws {
    let value = try JSONReader.parse(#"{"z":1,"a":2,"m":3}"#)
    guard case .object(let object) = value else {
        Issue.record("expected an object, found \(value.typeDescription)")
        return
    }
    #expect(object.keys == ["z", "a", "m"])
}

@Test func parsesTopLevelScalarsAndRawUnicode() throws {
    #expect(try JSONReader.parse("\"👩‍👩‍👧 e\u{301}\"") == .string("👩‍👩‍👧 e\u{301}"))
    #expect(try JSONReader.parse("\t\r\n 7 \n") == .integer(7))
    #expect(try JSONReader.parse("\"\u{7F}\"") == .string("\u{7F}"))
}

@Test func integersAndDoublesAreDistinct() throws {
    #expect(try JSONReader.parse("0") == .integer(0))
    #expect(try JSONReader.parse("-0") == .integer(0))
    #expect(try JSONReader.parse("10") == .integer(10))
    #expect(try JSONReader.parse("9223372036854775807") == .integer(Int64.max))
    #expect(try JSONReader.parse("-9223372036854775808") == .integer(Int64.min))
    #expect(try JSONReader.parse("9223372036854775808") == .double(9_223_372_036_854_775_808))
    #expect(try JSONReader.parse("1.0") == .double(1))
    #expect(try JSONReader.parse("1e2") == .double(100))
    #expect(try JSONReader.parse("1E+2") == .double(100))
    #expect(try JSONReader.parse("-2.5e-3") == .double(-0.0025))
    #expect(try JSONReader.parse("0.1") == .double(0.1))
    #expect(try JSONReader.parse("1e-400") == .double(0))
}

@Test func malformedNumbersAreRefusedAtTheRightColumn() {
    expectSyntaxError("01", column: 2, "a number cannot start with 0")
    expectSyntaxError("-01", column: 3, "a number cannot start with 0")
    expectSyntaxError("[00]", column: 3, "a number cannot start with 0")
    expectSyntaxError("-", column: 2, "expected a digit")
    expectSyntaxError("1.", column: 3, "expected a digit after '.'")
    expectSyntaxError(".5", column: 1)
    expectSyntaxError("1e", column: 3, "expected a digit in the exponent")
    expectSyntaxError("1e+", column: 4, "expected a digit in the exponent")
    expectSyntaxError("+1", column: 1)
    expectSyntaxError("1e400", column: 1, "number is out of range")
    expectSyntaxError("[1, -1e999]", column: 5, "number is out of range")
    expectSyntaxError("0x10", column: 2, "unexpected text after the JSON value")
}

@Test func malformedDocumentsReportTheColumnOfTheOffendingByte() {
    expectSyntaxError("", column: 1, "expected a value, found the end of the line")
    expectSyntaxError("   ", column: 4, "expected a value, found the end of the line")
    expectSyntaxError(#"{"a":1,}"#, column: 8, "expected a member name in double quotes")
    expectSyntaxError(#"{"a" 1}"#, column: 6, "expected ':' after a member name")
    expectSyntaxError(#"{"a":1 "b":2}"#, column: 8, "expected ',' or '}' in an object")
    expectSyntaxError("[1 2]", column: 4, "expected ',' or ']' in an array")
    expectSyntaxError("[1,]", column: 4)
    expectSyntaxError("[", column: 2, "expected a value, found the end of the line")
    expectSyntaxError(#"{a:1}"#, column: 2, "expected a member name in double quotes")
    expectSyntaxError("tru", column: 4, "expected true")
    expectSyntaxError("nul", column: 4, "expected null")
    expectSyntaxError("True", column: 1)
    expectSyntaxError(#""abc"#, column: 5, "unterminated string")
    expectSyntaxError(#""a\x""#, column: 4, "invalid escape character")
    expectSyntaxError(#""\u12G4""#, column: 6, "expected four hex digits")
    expectSyntaxError("\"a\nb\"", column: 3, "control character in a string (escape it)")
    expectSyntaxError("\"\u{0}\"", column: 2, "control character in a string (escape it)")
    expectSyntaxError("{} {}", column: 4, "unexpected text after the JSON value")
    expectSyntaxError("'a'", column: 1)
}

@Test func columnsCountBytesNotCharacters() {
    // "é" is two UTF-8 bytes, so the second comma is the seventh byte, not the sixth character.
    expectSyntaxError(#"["é",,]"#, column: 7)
}

@Test func repeatedMemberNamesAreRefusedAtTheRepeat() {
    expectSyntaxError(#"{"a":1,"a":2}"#, column: 8, #"member "a" appears twice"#)
    expectSyntaxError(#"{"x":{"a":1,"b":{},"a":[]}}"#, column: 20, #"member "a" appears twice"#)
    // An escape that spells the same name is the same name.
    expectSyntaxError(#"{"a":1,"\u0061":2}"#, column: 8)
    // Equal names in different objects are fine.
    #expect(throws: Never.self) { try JSONReader.parse(#"[{"a":1},{"a":2}]"#) }
}

@Test func invalidUTF8IsRefusedAtItsOffset() {
    expectSyntaxError([0x22, 0x61, 0xFF, 0x22], column: 3, "invalid UTF-8")
    expectSyntaxError([0x22] + Array("é".utf8) + [0xC3, 0x22], column: 4, "invalid UTF-8")
    // A UTF-8-encoded surrogate and an overlong slash.
    expectSyntaxError([0x22, 0xED, 0xA0, 0x80, 0x22], column: 2, "invalid UTF-8")
    expectSyntaxError([0x22, 0xC0, 0xAF, 0x22], column: 2, "invalid UTF-8")
    // Invalid UTF-8 is reported even where the syntax breaks earlier.
    expectSyntaxError([0x7B, 0x7D, 0x7D, 0xFF], column: 4, "invalid UTF-8")
    #expect(TextRule.firstInvalidUTF8(Array("a👍🏽b".utf8)) == nil)
    #expect(TextRule.firstInvalidUTF8(Array("a👍🏽b".utf8) + [0x80]) == 10)
}

@Test func unpairedSurrogatesAreRefused() throws {
    expectSyntaxError(#""\ud800""#, column: 2, #"unpaired surrogate in \u escape"#)
    expectSyntaxError(#""x\udc00y""#, column: 3, #"unpaired surrogate in \u escape"#)
    expectSyntaxError(#""\ud800\u0041""#, column: 2, #"unpaired surrogate in \u escape"#)
    expectSyntaxError(#""\ud800\n""#, column: 2, #"unpaired surrogate in \u escape"#)
    expectSyntaxError(#""\ud800\ud800""#, column: 2, #"unpaired surrogate in \u escape"#)
    expectSyntaxError(#""\udbff""#, column: 2)
    #expect(try JSONReader.parse(#""\udbff\udfff""#) == .string("\u{10FFFF}"))
    #expect(try JSONReader.parse(#""\u0000""#) == .string("\u{0}"))
}

@Test func nestingIsLimitedToMaximumDepth() throws {
    let depth = JSONReader.maximumDepth
    let deepest = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
    #expect(throws: Never.self) { try JSONReader.parse(deepest) }
    let tooDeep = String(repeating: "[", count: depth + 1) + String(repeating: "]", count: depth + 1)
    expectSyntaxError(tooDeep, column: depth + 1, "nesting deeper than \(depth) levels")
    let objects = String(repeating: #"{"a":"#, count: depth + 1) + "1" + String(repeating: "}", count: depth + 1)
    expectSyntaxError(objects, column: 5 * depth + 1, "nesting deeper than \(depth) levels")
    // A scalar inside the deepest container is one level deeper still.
    let scalarTooDeep = String(repeating: "[", count: depth) + "1" + String(repeating: "]", count: depth)
    expectSyntaxError(scalarTooDeep, column: depth + 1)
    // A huge depth fails the same way instead of overflowing the stack.
    expectSyntaxError(String(repeating: "[", count: 100_000), column: depth + 1)
}

@Test func syntaxErrorDescriptionNamesTheColumn() {
    #expect(throws: JSONSyntaxError.self) { try JSONReader.parse("[1, -]") }
    do {
        _ = try JSONReader.parse("[1, -]")
    } catch {
        #expect(error.offset == 5)
        #expect(error.description == "column 6: expected a digit")
    }
}
