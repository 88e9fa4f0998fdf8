import IndexModel
import PropertyBased
import Testing
import TextTestSupport

/// `TextRule`, the one check of every string that enters: no NUL in any
/// text, no control character or line break in a line, lengths in bytes,
/// and bytes that are UTF-8 or refused where they stop being it.
@Suite struct TextRuleTests {
    /// Over random hostile strings, each rule admits exactly what the
    /// reference says: text anything without a NUL, a line anything without
    /// a control character or a line break; both within their bytes.
    @Test func eachRuleAdmitsExactlyWhatItsShapeAndLengthAllow() async {
        let rules: [TextRule] = [.name, .identifier, .url, .text, TextRule(.text, bytes: 0...8), TextRule(.line, bytes: 2...16)]
        await propertyCheck(count: 3000, input: HostileText.string) { text in
            for rule in rules {
                let fits = rule.bytes.contains(text.utf8.count)
                let shaped = rule.shape == .text ? !text.utf8.contains(0) : HostileText.isLine(text)
                #expect(rule.admits(text) == (fits && shaped), "\(rule.shape) \(rule.bytes) \(String(reflecting: text))")
                if rule.admits(text) {
                    #expect((try? rule.string(utf8: Array(text.utf8))) == text)
                }
            }
        }
    }

    /// A refusal says why and at which byte, without the string itself.
    @Test func aRefusalNamesTheCharacterAndItsByte() throws {
        for (text, offset) in HostileText.refusedByLines {
            #expect(throws: TextError.self) { try TextRule.identifier.check(text) }
            do {
                try TextRule.identifier.check(text)
            } catch {
                #expect(error.offset == offset, "\(String(reflecting: text))")
                #expect(error.description.contains("at byte \(offset + 1)"), "\(error)")
                #expect(HostileText.isLine(error.description), "the message is one line without controls: \(error)")
            }
        }
        #expect(throws: TextError(.nul, at: 1)) { try TextRule.text.check("a\u{0}b") }
        #expect(throws: TextError(.control(0x2028), at: 1)) { try TextRule.name.check("a\u{2028}b") }
        #expect(throws: TextError(.control(0x85), at: 1)) { try TextRule.name.check("a\u{85}b") }
        #expect(throws: TextError(.empty)) { try TextRule.name.check("") }
        #expect(throws: TextError(.tooLong(bytes: 257, limit: 256))) { try TextRule.name.check(String(repeating: "x", count: 257)) }
        // Bytes, not characters: 128 two-byte characters are 256 bytes.
        try TextRule.name.check(String(repeating: "é", count: 128))
        #expect(throws: TextError(.tooLong(bytes: 258, limit: 256))) { try TextRule.name.check(String(repeating: "é", count: 129)) }
    }

    /// Text may hold what a line may not: tabs, line breaks, other controls.
    @Test func textHoldsWhatALineMayNot() throws {
        for text in HostileText.legalTexts {
            try TextRule.text.check(text)
        }
        for name in HostileText.legalNames {
            try TextRule.name.check(name)
        }
        for breaker in HostileText.lineBreakers {
            try TextRule.text.check("a" + breaker)
            #expect(!TextRule.identifier.admits("a" + breaker), "\(String(reflecting: breaker))")
        }
    }

    /// Bytes that are not UTF-8 (a lone surrogate's encoding, an overlong
    /// form, a cut sequence, a scalar past U+10FFFF) are refused where they
    /// start, never repaired into U+FFFD.
    @Test func bytesThatAreNotUTF8AreRefusedWhereTheyStart() {
        for (bytes, offset) in HostileText.invalidUTF8 {
            #expect(TextRule.firstInvalidUTF8(bytes) == offset, "\(bytes)")
            #expect(throws: TextError(.invalidUTF8, at: offset)) { try TextRule.text.string(utf8: bytes) }
        }
    }

    /// What `printable` shows of a hostile name is one line a terminal
    /// cannot be steered by, cut at its limit.
    @Test func printableShowsEveryControlAsAnEscapeAndCutsAtItsLimit() async {
        await propertyCheck(count: 1000, input: HostileText.string) { text in
            let shown = TextRule.printable(text, limit: 64)
            #expect(HostileText.isLine(shown), "\(String(reflecting: shown))")
            #expect(shown.unicodeScalars.count <= 64 * 8 + 1)
        }
        #expect(TextRule.printable("a\u{0}b\u{1B}[2J") == "a\\u{0}b\\u{1B}[2J")
        #expect(TextRule.printable("abcdef", limit: 3) == "abc…")
    }
}
