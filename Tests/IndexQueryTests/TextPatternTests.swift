import IndexModel
import PropertyBased
import Testing
@testable import IndexQuery

/// Whether `title == <literal>` matches an item titled `title`.
private func matches(_ literal: String, _ title: String) throws -> Bool {
    let query = try QueryParser.parse("title == " + literal)
    let item = SearchableItem(uniqueIdentifier: "1", attributes: AttributeSet([.title: .string(title)]))
    return try CompiledQuery(query, now: Timestamp(millisecondsSince1970: 0)).matches(item, budget: .unlimited)
}

@Test func plainEqualityIsWholeValueCaseAndDiacriticSensitive() throws {
    #expect(try matches(#""Paris""#, "Paris"))
    #expect(try !matches(#""Paris""#, "paris"))
    #expect(try !matches(#""Paris""#, "I love Paris"))
    #expect(try !matches(#""Frederic""#, "Frédéric"))
    // Canonically equivalent spellings are the same text.
    #expect(try matches("\"Fr\u{E9}d\u{E9}ric\"", "Fre\u{301}de\u{301}ric"))
}

@Test func wordBasedMatchingFollowsApplesExamples() throws {
    #expect(try matches(#""Paris"wc"#, "paris-france.jpg"))
    #expect(try !matches(#""Paris"wc"#, "Comparison"))
    #expect(try matches(#""Window"w"#, "MyWindowClass"))
    #expect(try matches(#""Window"w"#, "Broken Window"))
    #expect(try !matches(#""Window"w"#, "NSWindow"))
    // w alone is still case-sensitive; a word-based match ends on a boundary too.
    #expect(try !matches(#""window"w"#, "Broken Window"))
    #expect(try !matches(#""Win"w"#, "Broken Window"))
    #expect(try matches(#""Win*"w"#, "Broken Window"))
    #expect(try matches(#""broken window"cw"#, "The Broken Window"))
}

@Test func caseAndDiacriticModifiersFold() throws {
    #expect(try matches(#""Frédéric"cd"#, "frederic"))
    #expect(try matches(#""frederic"cd"#, "FRÉDÉRIC"))
    #expect(try !matches(#""frederic"c"#, "Frédéric"))
    #expect(try matches(#""frédéric"c"#, "FRÉDÉRIC"))
    #expect(try matches(#""frederic"d"#, "frédéric"))
    #expect(try !matches(#""frederic"d"#, "Frédéric"))
    #expect(try matches(#""STRASSE"c"#, "Straße"))
}

@Test func wildcardsMatchAtTheStartEndOrMiddle() throws {
    #expect(try matches(#""*Paris*""#, "I love Paris"))
    #expect(try matches(#""Par*""#, "Paris"))
    #expect(try matches(#""*ris""#, "Paris"))
    #expect(try matches(#""P*s""#, "Paris"))
    #expect(try matches(#""P*r*s""#, "Paris"))
    #expect(try !matches(#""P*x""#, "Paris"))
    #expect(try matches(#""*""#, ""))
    #expect(try !matches(#""""#, "Paris"))
    // Escaped and single-quoted stars are literal.
    #expect(try matches(#""a\*b""#, "a*b"))
    #expect(try !matches(#""a\*b""#, "axb"))
    #expect(try matches("'a*b'", "a*b"))
    #expect(try !matches("'a*b'", "axxb"))
}

@Test func tokenizedMatchingFindsEveryWordInAnyOrder() throws {
    #expect(try matches(#""project updates"cwdt"#, "Updates on the project"))
    #expect(try matches(#""project updates"t"#, "updates-project"))
    #expect(try !matches(#""project updates"ct"#, "project plans"))
    #expect(try matches(#""proj* upd*"ct"#, "Updated project list"))
    #expect(try matches(#""bob*"cwd"#, "Bobby Tables"))
    #expect(try !matches(#""bob*"cwd"#, "Kebob"))
}

@Test func pathologicalWildcardsFinishInLinearSteps() throws {
    // A backtracking matcher takes exponential time on these; the automaton
    // takes (value length × pattern length) steps.
    let pattern = "\"" + String(repeating: "*a", count: QueryLimits.wildcards - 1) + "*b\""
    let value = String(repeating: "a", count: 100_000)
    #expect(try !matches(pattern, value))
    #expect(try !matches(pattern + "w", value))
    #expect(try matches(pattern, value + "b"))
}

/// ASCII text is folded byte by byte, the rest one character at a time; both
/// must give the same scalars and boundaries, CR LF (one character) included.
@Test func asciiTextFoldsAsTheGeneralPathDoes() async {
    let alphabet: [UInt8] = Array("aZz09 -_.*\r\n\tAmM".utf8)
    let generator = Generator<[UInt8], Shrink.None<[UInt8]>>(run: { rng in
        (0..<Int.random(in: 0...24, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }
    })
    await propertyCheck(count: 2000, input: generator) { bytes in
        let text = String(decoding: bytes, as: UTF8.self)
        for folding: TextModifiers in [[], [.caseInsensitive], [.caseInsensitive, .diacriticInsensitive]] {
            for boundaries in [false, true] {
                let fast = FoldedText(ascii: text, folding: folding, wantBoundaries: boundaries)
                let general = FoldedText(characters: text, folding: folding, wantBoundaries: boundaries)
                #expect(fast.scalars == general.scalars, "\(text.debugDescription)")
                #expect(fast.boundaries == general.boundaries, "\(text.debugDescription)")
            }
        }
    }
}
