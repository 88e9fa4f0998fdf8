import IndexModel

/// Why a result scored what it did (`DeviceStore.search(_:limit:explain:)`):
/// the parts of its best member's score, which is the result's.
///
/// The score is `Σ weight × relevance × multiplier` over the typed words,
/// and the multiplier is `hintFactor × viewFactor × engagementFactor ×
/// tieBreak` (`docs/SEARCH.md`). Each part here is the value the search
/// used, read back from the index, so the parts multiply and add up to
/// `score`. Expiry decides only whether a result is shown, never its rank.
public struct SearchExplanation: Hashable, Sendable {
    /// One typed word's part.
    public struct Word: Hashable, Sendable {
        /// The word as the search read it (lowercased, diacritics removed).
        public var typed: String
        /// Whether it was read as the start of a word (the last one, still being typed).
        public var isPrefix: Bool
        /// The member's word that it matched best.
        public var matched: String
        /// The matched word's text relevance in the member: BM25F over its
        /// fields (title 10, display name 8, keywords 4, description 1).
        public var relevance: Double
        /// The typed word's weight in this search: its idf among the indexed
        /// documents when more than one word was typed, else 1.
        public var weight: Double
        /// `weight × relevance × multiplier`: what the word adds to the score.
        public var points: Double
    }

    /// The member whose score is the result's.
    public var member: SearchResult.Member
    public var words: [Word]
    /// An item's rankingHint, when it has one.
    public var rankingHint: Double?
    /// `1 + 0.25 × rankingHint` (clamped to 0…1); 1 for an activity.
    public var hintFactor: Double
    /// An activity's views; nil for an item.
    public var views: Int64?
    /// `1 + 0.1 × ln(1 + views)`; 1 for an item.
    public var viewFactor: Double
    /// Times the member's references were shown and engaged with.
    public var shown: Int
    public var engaged: Int
    /// The smoothed engagement ratio as a factor: `0.5 + (engaged + 1) / (max(shown, engaged) + 2)`.
    public var engagementFactor: Double
    /// A factor within 2⁻²⁰ of 1, fixed by the member's identity, that orders ties.
    public var tieBreak: Double
    /// The product of the four factors.
    public var multiplier: Double
    /// When the member expires; it is not shown from then on.
    public var expires: Timestamp?
    /// The sum of the words' points: the result's score.
    public var score: Double
}
