import Foundation

/// A string prepared for matching: its Unicode scalars after the folding the
/// modifiers ask for (NFC always; case folding for `c`; diacritics removed for
/// `d`), and where its word boundaries are.
///
/// Boundaries are found on the original characters, so folding that changes a
/// character's length (ß → ss) cannot move them. A boundary lies between a word
/// character (letter or digit) and a non-word character, at either end of the
/// string, and — as Core Spotlight's `w` modifier does — between a lowercase and
/// an uppercase letter ("MyWindowClass" has words My, Window, Class).
struct FoldedText {
    var scalars: [UInt32]
    /// `boundaries[i]` is true when position i (before `scalars[i]`, or the end
    /// when i == count) is a word boundary. Empty when not asked for.
    var boundaries: [Bool]

    init(_ text: String, folding: TextModifiers, wantBoundaries: Bool) {
        if text.utf8.allSatisfy({ $0 < 0x80 }) {
            self.init(ascii: text, folding: folding, wantBoundaries: wantBoundaries)
        } else {
            self.init(characters: text, folding: folding, wantBoundaries: wantBoundaries)
        }
    }

    /// The general path: one character at a time, each folded on its own so
    /// that boundaries stay where the original characters put them.
    init(characters text: String, folding: TextModifiers, wantBoundaries: Bool) {
        scalars = []
        scalars.reserveCapacity(text.utf8.count)
        boundaries = []
        if wantBoundaries { boundaries.reserveCapacity(text.utf8.count + 1) }
        var previous: Character?
        var pendingBoundary = false
        for character in text {
            if wantBoundaries {
                let boundary = pendingBoundary || (previous.map { FoldedText.isBoundary($0, character) } ?? true)
                let before = scalars.count
                FoldedText.append(character, folding: folding, to: &scalars)
                // A character that folds away entirely passes its boundary on.
                pendingBoundary = scalars.count == before && boundary
                for index in before..<scalars.count { boundaries.append(index == before && boundary) }
            } else {
                FoldedText.append(character, folding: folding, to: &scalars)
            }
            previous = character
        }
        if wantBoundaries { boundaries.append(true) }
    }

    /// The same result as the general path for a string of ASCII bytes,
    /// read byte by byte: every ASCII character is one byte except CR LF,
    /// which Swift reads as one character whose ASCII value is LF.
    init(ascii text: String, folding: TextModifiers, wantBoundaries: Bool) {
        let caseInsensitive = folding.contains(.caseInsensitive)
        scalars = []
        scalars.reserveCapacity(text.utf8.count)
        boundaries = []
        if wantBoundaries { boundaries.reserveCapacity(text.utf8.count + 1) }
        var previous: UInt8?
        var pendingCR = false
        for byte in text.utf8 {
            if pendingCR {
                pendingCR = false
                if byte == 0x0A {
                    // CR LF is one character, LF; its boundary was decided at CR.
                    scalars.append(0x0A)
                    previous = 0x0A
                    continue
                }
                scalars.append(0x0D)
            }
            if wantBoundaries {
                boundaries.append(previous.map { FoldedText.isBoundary($0, byte) } ?? true)
            }
            if byte == 0x0D {
                pendingCR = true
            } else {
                let upper = byte >= 0x41 && byte <= 0x5A
                scalars.append(UInt32(caseInsensitive && upper ? byte + 0x20 : byte))
            }
            previous = byte
        }
        if pendingCR { scalars.append(0x0D) }
        if wantBoundaries { boundaries.append(true) }
    }

    private static func isBoundary(_ previous: UInt8, _ next: UInt8) -> Bool {
        func isWord(_ byte: UInt8) -> Bool {
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
        }
        let previousWord = isWord(previous)
        let nextWord = isWord(next)
        if previousWord != nextWord { return true }
        return previousWord && previous >= 0x61 && previous <= 0x7A && next >= 0x41 && next <= 0x5A
    }

    static func isWordCharacter(_ character: Character) -> Bool {
        character.isLetter || character.isNumber
    }

    static func isBoundary(_ previous: Character, _ next: Character) -> Bool {
        let previousWord = isWordCharacter(previous)
        let nextWord = isWordCharacter(next)
        if previousWord != nextWord { return true }
        return previousWord && previous.isLowercase && next.isUppercase
    }

    /// Appends one character's folded scalars. ASCII, by far the common case,
    /// never allocates.
    static func append(_ character: Character, folding: TextModifiers, to scalars: inout [UInt32]) {
        if let ascii = character.asciiValue {
            var value = UInt32(ascii)
            if folding.contains(.caseInsensitive), value >= 0x41, value <= 0x5A { value += 0x20 }
            scalars.append(value)
            return
        }
        var text = String(character)
        var options: String.CompareOptions = []
        if folding.contains(.caseInsensitive) { options.insert(.caseInsensitive) }
        if folding.contains(.diacriticInsensitive) { options.insert(.diacriticInsensitive) }
        if !options.isEmpty { text = text.folding(options: options, locale: nil) }
        for scalar in text.precomposedStringWithCanonicalMapping.unicodeScalars {
            scalars.append(scalar.value)
        }
    }
}
