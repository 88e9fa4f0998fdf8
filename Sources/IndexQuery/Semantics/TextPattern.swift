/// A compiled string value: what `attribute == "value"modifiers` asks of one
/// attribute value.
///
/// - Without `w` or `t` the whole value must match; `*` matches any run of
///   characters, so `"*Paris*"` means "contains Paris".
/// - With `w` the match may start and end only on word boundaries (see
///   `FoldedText`): `"Window"w` matches "MyWindowClass" and "Broken Window" but
///   not "NSWindow".
/// - With `t` the value is split into words (runs of letters, digits and
///   wildcards) and each must match, word-based, somewhere in the attribute, in
///   any order: `"project updates"t` matches "Updates on the project".
///
/// Matching simulates the pattern as an automaton over the value, so it takes at
/// most (value length × pattern length) steps whatever the wildcards: no pattern
/// can make it backtrack exponentially.
struct TextPattern: Sendable {
    enum Element: Hashable, Sendable {
        case scalar(UInt32)
        case wildcard
    }

    let modifiers: TextModifiers
    /// One element list for a whole or word-based match; one per token for `t`.
    let alternatives: [[Element]]
    let wordBased: Bool
    /// The pattern's elements over all its alternatives: the automaton's
    /// work per scalar of a value is at most this (`QueryBudget`).
    let length: Int

    init(_ literal: TextLiteral) {
        modifiers = literal.modifiers
        let folding = literal.modifiers
        func elements(of pieces: [TextLiteral.Piece]) -> [Element] {
            var result: [Element] = []
            for piece in pieces {
                switch piece {
                case .wildcard:
                    // Adjacent wildcards mean the same as one.
                    if result.last != .wildcard { result.append(.wildcard) }
                case .literal(let text):
                    result += FoldedText(text, folding: folding, wantBoundaries: false).scalars.map(Element.scalar)
                }
            }
            return result
        }
        if literal.modifiers.contains(.tokenized) {
            var tokens: [[TextLiteral.Piece]] = []
            var current: [TextLiteral.Piece] = []
            for piece in literal.pieces {
                switch piece {
                case .wildcard:
                    current.append(.wildcard)
                case .literal(let text):
                    var run = ""
                    for character in text {
                        if FoldedText.isWordCharacter(character) {
                            run.append(character)
                        } else {
                            if !run.isEmpty { current.append(.literal(run)) }
                            run = ""
                            if !current.isEmpty { tokens.append(current) }
                            current = []
                        }
                    }
                    if !run.isEmpty { current.append(.literal(run)) }
                }
            }
            if !current.isEmpty { tokens.append(current) }
            let words = tokens.filter { $0.contains { if case .literal = $0 { true } else { false } } }
            alternatives = words.isEmpty ? [elements(of: literal.pieces)] : words.map(elements(of:))
            wordBased = true
        } else {
            alternatives = [elements(of: literal.pieces)]
            wordBased = literal.modifiers.contains(.wordBased)
        }
        length = alternatives.reduce(0) { $0 + $1.count }
    }

    func matches(_ value: String) -> Bool {
        let text = FoldedText(value, folding: modifiers, wantBoundaries: wordBased)
        for elements in alternatives where !TextPattern.run(elements, over: text, wordBased: wordBased) {
            return false
        }
        return true
    }

    /// The automaton: `active[j]` means the first j elements have matched a run
    /// of the value ending at the current position.
    static func run(_ elements: [Element], over text: FoldedText, wordBased: Bool) -> Bool {
        let count = text.scalars.count
        let states = elements.count + 1
        var active = [Bool](repeating: false, count: states)
        var next = [Bool](repeating: false, count: states)

        func close(_ set: inout [Bool]) {
            // A wildcard may match nothing.
            for index in 0..<elements.count where set[index] && elements[index] == .wildcard {
                set[index + 1] = true
            }
        }

        for position in 0...count {
            if wordBased ? text.boundaries[position] : position == 0 {
                active[0] = true
                close(&active)
            }
            if active[elements.count], wordBased ? text.boundaries[position] : position == count {
                return true
            }
            if position == count { break }
            let scalar = text.scalars[position]
            var anyActive = false
            for index in 0..<states { next[index] = false }
            for index in 0..<elements.count where active[index] {
                switch elements[index] {
                case .wildcard:
                    next[index] = true
                    anyActive = true
                case .scalar(let expected) where expected == scalar:
                    next[index + 1] = true
                    anyActive = true
                case .scalar:
                    break
                }
            }
            close(&next)
            swap(&active, &next)
            // A whole-value match is anchored at the start: once nothing is
            // active, nothing can match.
            if !anyActive && !wordBased { return false }
        }
        return false
    }

    /// Orders two values by their folded scalars, for `<`, `>` and InRange.
    static func compare(_ value: String, _ operand: [UInt32], folding: TextModifiers) -> Int {
        let folded = FoldedText(value, folding: folding, wantBoundaries: false).scalars
        if folded.lexicographicallyPrecedes(operand) { return -1 }
        return folded == operand ? 0 : 1
    }
}
