// Fuzz target text-rule: IndexModel's `TextRule`, the check every string from
// outside meets, over raw bytes as they arrive (a frame's string field, a
// store's text column read as its bytes).
//
// Bytes that are not UTF-8 are refused at the offset where they stop being it;
// bytes a rule admits read back as exactly those bytes, with no NUL, and as a
// line with no control character or line break; `printable` shows any string
// as one line.
import IndexModel

enum Target {
    static let rules: [TextRule] = [.name, .identifier, .text, TextRule(.line, bytes: 0...64)]

    static func run(_ bytes: [UInt8]) {
        let invalid = TextRule.firstInvalidUTF8(bytes)
        for rule in rules {
            do {
                let text = try rule.string(utf8: bytes)
                contract(invalid == nil, "bytes that stop being UTF-8 at \(invalid ?? -1) were admitted")
                contract(Array(text.utf8) == bytes, "admitted bytes read back otherwise")
                contract(rule.bytes.contains(bytes.count) && !bytes.contains(0), "a NUL or a length out of range was admitted")
                if rule.shape == .line {
                    contract(!text.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0.value == 0x2028 || $0.value == 0x2029 },
                             "a line holds a control character or a line break")
                }
                contract(rule.admits(text), "check refuses what string(utf8:) admitted")
            } catch {
                if case .invalidUTF8 = error.reason { contract(error.offset == invalid, "invalid UTF-8 named at \(error.offset ?? -1), not \(invalid ?? -1)") }
                if let offset = error.offset { contract(offset >= 0 && offset < bytes.count, "a refusal names byte \(offset) of \(bytes.count)") }
            }
        }
        let shown = TextRule.printable(String(decoding: bytes, as: UTF8.self), limit: 64)
        contract(!shown.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }, "printable shows a control character")
    }

    /// Names, identifiers and text: plain, with each character a line may
    /// not hold, with a NUL, and bytes that are not UTF-8.
    static func seeds() throws -> [(String, [UInt8])] {
        [
            ("name", Array("com.example.app".utf8)),
            ("unusual", Array("e\u{301}日本🏳️‍🌈\u{202E}\u{FEFF}\u{FFFF}\u{10FFFF}".utf8)),
            ("tab", Array("a\tb".utf8)),
            ("c1", Array("a\u{85}b".utf8)),
            ("separator", Array("a\u{2028}b".utf8)),
            ("nul", Array("nul".utf8) + [0] + Array("a".utf8)),
            ("surrogate", [0x61, 0xED, 0xA0, 0x80]),
            ("overlong", [0xC0, 0xAF]),
            ("cut", [0xE2, 0x82]),
        ]
    }
}
