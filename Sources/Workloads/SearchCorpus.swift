import Foundation
import IndexModel

/// A seeded corpus for search benchmarks: items whose words follow a Zipf
/// distribution over a large vocabulary, and the queries a user would type over
/// them (prefixes of words, whole words, two words).
///
/// The same seed and sizes give the same items and queries on every run.
public struct SearchCorpus: Sendable {
    /// Every word the corpus draws from, most popular first.
    public let vocabulary: [String]
    /// Zipf popularity (s = `exponent`) over `vocabulary`, by rank.
    private let popularity: ZipfDistribution
    private var generator: SplitMix64

    /// - Parameters:
    ///   - seed: what the items and queries are drawn from.
    ///   - vocabularySize: distinct words; pronounceable, lowercase ASCII.
    ///   - exponent: the Zipf exponent; 1.0 is natural language's.
    public init(seed: UInt64, vocabularySize: Int = 50_000, exponent: Double = 1.0) {
        vocabulary = SearchCorpus.makeVocabulary(count: vocabularySize)
        popularity = ZipfDistribution(count: vocabularySize, exponent: exponent)
        generator = SplitMix64(seed: seed)
    }

    private static func makeVocabulary(count: Int) -> [String] {
        let onsets = ["b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z",
                      "br", "ch", "cl", "dr", "fl", "gr", "pl", "sh", "st", "th", "tr"]
        let vowels = ["a", "e", "i", "o", "u", "ai", "ea", "ee", "oo", "ou"]
        let codas = ["", "", "n", "r", "s", "t", "l", "m", "nd", "st"]
        var generator = SplitMix64(seed: 0xC0_4F05)
        var words: [String] = []
        var seen = Set<String>()
        words.reserveCapacity(count)
        while words.count < count {
            let syllables = 1 + Int(generator.next() % 3)
            var word = ""
            for _ in 0..<syllables {
                word += onsets[Int(generator.next() % UInt64(onsets.count))]
                word += vowels[Int(generator.next() % UInt64(vowels.count))]
            }
            word += codas[Int(generator.next() % UInt64(codas.count))]
            if seen.insert(word).inserted { words.append(word) }
        }
        return words
    }

    private mutating func uniform(_ upperBound: Int) -> Int {
        Int(generator.next() % UInt64(upperBound))
    }

    /// A word drawn by Zipf popularity.
    public mutating func word() -> String {
        vocabulary[popularity.draw(&generator)]
    }

    private mutating func words(_ count: Int) -> String {
        (0..<count).map { _ in word() }.joined(separator: " ")
    }

    /// An item with a title of 2–6 words, a description of 5–20 and 0–3 keywords.
    public mutating func item(identifier: String) -> SearchableItem {
        var attributes = AttributeSet()
        attributes.title = words(2 + uniform(5))
        attributes.contentDescription = words(5 + uniform(16))
        let keywords = (0..<uniform(4)).map { _ in word() }
        if !keywords.isEmpty { attributes.keywords = keywords }
        return SearchableItem(uniqueIdentifier: identifier, attributes: attributes)
    }

    /// What a user has typed so far of a popular word: its first 1 to 4 letters.
    public mutating func prefixQuery() -> String {
        String(word().prefix(1 + uniform(4)))
    }

    /// One whole word, by popularity.
    public mutating func singleTermQuery() -> String {
        word()
    }

    /// Two whole words, by popularity.
    public mutating func twoTermQuery() -> String {
        word() + " " + word()
    }
}
