import IndexModel
import PropertyBased

/// Strings a hostile peer would send, for the tests of every boundary that
/// takes text (`TextRule`): what each rule must refuse, what it must admit
/// and every store must then keep byte for byte, and random mixtures.
public enum HostileText {
    /// Characters a line may hold that are easy to lose: combining marks,
    /// a flag of several scalars, a right-to-left override, a byte order
    /// mark, noncharacters, the last scalar, a backslash and quotes.
    public static let unusualCharacters = ["e\u{301}", "日本", "🏳️‍🌈", "\u{202E}", "\u{FEFF}", "\u{FFFE}", "\u{FFFF}", "\u{10FFFF}",
                                           "\\", "\"", "'", "%00", "~", " "]
    /// Characters a line may not hold but text may: tab, line breaks, other
    /// C0 and C1 controls, DEL, and the Unicode line and paragraph separators.
    public static let lineBreakers = ["\t", "\n", "\r", "\r\n", "\u{1}", "\u{1B}", "\u{1F}", "\u{7F}", "\u{80}", "\u{85}", "\u{9F}",
                                      "\u{2028}", "\u{2029}", "\u{0B}", "\u{0C}"]
    /// The one character no text may hold.
    public static let nul = "\u{0}"

    /// Names every rule admits, of 1 to 256 bytes, the last exactly 256.
    public static let legalNames: [String] = [
        "n" + unusualCharacters.joined(),
        "x~",
        "%00",
        String(repeating: "é", count: 128),
    ]

    /// Text every rule for text admits (no NUL), the last 4,096 bytes.
    public static let legalTexts: [String] = [
        "Zero\tDay\nline\r\nbreak" + lineBreakers.joined() + unusualCharacters.joined(),
        "",
        String(repeating: "日", count: 1365) + "a",
    ]

    /// Strings no line admits, each with the byte offset of the character refused.
    public static let refusedByLines: [(text: String, offset: Int)] =
        (lineBreakers + [nul]).map { ("ab" + $0 + "cd", 2) }

    /// UTF-8 that no rule admits, each with the offset where it stops being
    /// UTF-8: a lone surrogate's encoding, an overlong slash, a cut
    /// sequence, a scalar past U+10FFFF, a stray continuation byte.
    public static let invalidUTF8: [(bytes: [UInt8], offset: Int)] = [
        (Array("ab".utf8) + [0xED, 0xA0, 0x80], 2),
        (Array("ab".utf8) + [0xC0, 0xAF], 2),
        (Array("ab".utf8) + [0xE2, 0x82], 2),
        (Array("ab".utf8) + [0xF4, 0x90, 0x80, 0x80], 2),
        ([0x80] + Array("ab".utf8), 0),
    ]

    /// Whether a line admits `text`, as a reference the rules are checked
    /// against: no scalar below U+0020, none from U+007F to U+009F, no U+2028
    /// or U+2029.
    public static func isLine(_ text: String) -> Bool {
        !text.unicodeScalars.contains { scalar in
            scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029
        }
    }

    /// Random strings of 0 to 12 pieces, each plain, unusual, a line breaker
    /// or (one time in eight) a NUL, sometimes padded to a limit's edge.
    public static let string = Generator<String, Shrink.None<String>>(run: { rng in
        var text = ""
        for _ in 0..<Int.random(in: 0...12, using: &rng) {
            switch Int.random(in: 0...7, using: &rng) {
            case 0: text += nul
            case 1, 2: text += lineBreakers.randomElement(using: &rng)!
            case 3, 4: text += unusualCharacters.randomElement(using: &rng)!
            default: text += ["a", "Paris", "x1", "-", "_", "."].randomElement(using: &rng)!
            }
        }
        switch Int.random(in: 0...9, using: &rng) {
        case 0: text += String(repeating: "x", count: max(0, 256 - text.utf8.count))
        case 1: text += String(repeating: "x", count: max(0, 257 - text.utf8.count))
        default: break
        }
        return text
    })
}
