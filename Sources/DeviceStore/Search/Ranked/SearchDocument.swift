import Foundation
import IndexQuery
import SQLiteSupport

/// How one item or activity looks to ranked search: its distinct words, each with
/// a text weight (its *impact*), the engagement references that count for it, and
/// a multiplier for everything that is not text (rankingHint, views, engagement).
///
/// A word's key in the posting lists is `impact × multiplier`. Both factors are
/// fixed when the document is indexed, so the key a posting list stores and the
/// key a search recomputes from `search_docs` are the same `Double`, bit for bit.
struct SearchDocument: Equatable {
    enum Kind: Int64 {
        case item = 0
        case activity = 1
    }

    struct Term: Equatable {
        var text: String
        var impact: Double

        var byteCount: Int { text.utf8.count }
    }

    var kind: Kind
    /// The item's index; empty for an activity.
    var indexName: String
    /// The item's uniqueIdentifier or the activity's key.
    var identifier: String
    /// Distinct words, sorted.
    var terms: [Term]
    var multiplier: Double
    /// Engagement references whose counts feed the multiplier.
    var refs: [String]

    func key(_ term: Term) -> Double { term.impact * multiplier }
}

// MARK: - Building documents

extension SearchDocument {
    /// One text field: its words, their weight and the field length that counts
    /// as average for length normalisation.
    struct Field {
        var text: String?
        var weight: Double
        var averageLength: Double
    }

    /// BM25's term-frequency saturation and length normalisation.
    static let k1 = 1.2
    static let b = 0.75

    static func itemFields(title: String?, displayName: String?, contentDescription: String?, keywords: String?) -> [Field] {
        [Field(text: title, weight: 10, averageLength: 4),
         Field(text: displayName, weight: 8, averageLength: 4),
         Field(text: contentDescription, weight: 1, averageLength: 12),
         Field(text: keywords, weight: 4, averageLength: 2)]
    }

    static func activityFields(title: String?, keywords: String?, contentDescription: String?) -> [Field] {
        [Field(text: title, weight: 10, averageLength: 4),
         Field(text: keywords, weight: 4, averageLength: 2),
         Field(text: contentDescription, weight: 1, averageLength: 12)]
    }

    /// The impact of each distinct word over the fields: BM25F with fixed average
    /// lengths, so that indexing one document never changes another's keys.
    /// A document has a few dozen words, so sorting them counts them faster
    /// than hashing; each word's impact adds its fields' parts in field order.
    static func terms(of fields: [Field]) -> [Term] {
        var parts: [(word: String, field: Int, impact: Double)] = []
        for (index, field) in fields.enumerated() {
            guard let text = field.text else { continue }
            var words = SearchText.words(in: text)
            guard !words.isEmpty else { continue }
            let norm = k1 * (1 - b + b * Double(words.count) / field.averageLength)
            words.sort()
            var start = 0
            while start < words.count {
                var end = start + 1
                while end < words.count, words[end] == words[start] { end += 1 }
                let tf = Double(end - start)
                parts.append((words[start], index, field.weight * tf * (k1 + 1) / (tf + norm)))
                start = end
            }
        }
        parts.sort { $0.word != $1.word ? $0.word < $1.word : $0.field < $1.field }
        var terms: [Term] = []
        for part in parts {
            if let last = terms.indices.last, terms[last].text == part.word {
                terms[last].impact += part.impact
            } else {
                terms.append(Term(text: part.word, impact: part.impact))
            }
        }
        return terms
    }

    /// A document's multiplier and what it is made of: everything in its
    /// score that is not text. One formula for indexing and for explaining.
    struct Multiplier: Equatable {
        /// An item's rankingHint, clamped to 0…1 and weighted: 1 to 1.25.
        var hintFactor = 1.0
        /// An activity's views: 1 + 0.1 × ln(1 + views).
        var viewFactor = 1.0
        /// `engagementFactor(shown:engaged:)` of the document's references.
        var engagementFactor: Double
        /// `tieBreak(kind:indexName:identifier:)`.
        var tieBreak: Double

        var value: Double { hintFactor * viewFactor * engagementFactor * tieBreak }

        static func item(hint: Double?, shown: Int, engaged: Int, tieBreak: Double) -> Multiplier {
            Multiplier(hintFactor: 1 + 0.25 * min(max(hint ?? 0, 0), 1),
                       engagementFactor: SearchDocument.engagementFactor(shown: shown, engaged: engaged), tieBreak: tieBreak)
        }

        static func activity(views: Int64, shown: Int, engaged: Int, tieBreak: Double) -> Multiplier {
            Multiplier(viewFactor: 1 + 0.1 * log(1 + Double(views)),
                       engagementFactor: SearchDocument.engagementFactor(shown: shown, engaged: engaged), tieBreak: tieBreak)
        }
    }

    /// The Laplace-smoothed engagement ratio, 0.5 with no data, towards 1 when
    /// shown results are always tapped and towards 0 when never, as a factor
    /// between 0.5 and 1.5.
    static func engagementFactor(shown: Int, engaged: Int) -> Double {
        0.5 + (Double(engaged) + 1) / (Double(max(shown, engaged)) + 2)
    }

    /// A factor within 2⁻²⁰ of 1, fixed by the document's identity, so that
    /// documents that would tie are ordered the same way on every run and every
    /// rebuild, and so that score bounds fall strictly as a search reads on.
    static func tieBreak(kind: Kind, indexName: String, identifier: String) -> Double {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ byte: UInt8) {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        mix(UInt8(kind.rawValue))
        for byte in indexName.utf8 { mix(byte) }
        mix(0)
        for byte in identifier.utf8 { mix(byte) }
        return 1 + Double(hash >> 44) * 0x1p-40
    }
}

// MARK: - Stored form of the terms

extension SearchDocument {
    /// `search_docs.terms`: for each term, one length byte, its UTF-8 bytes and
    /// its impact as a little-endian IEEE 754 double.
    static func encode(_ terms: [Term]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(terms.reduce(0) { $0 + $1.byteCount + 9 })
        for term in terms {
            bytes.append(UInt8(term.byteCount))
            bytes.append(contentsOf: term.text.utf8)
            withUnsafeBytes(of: term.impact.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
        }
        return bytes
    }

    /// The typed words as bytes, ready for `bestKeys`.
    struct Matcher {
        let words: [(bytes: [UInt8], isPrefix: Bool)]
        private var keys: [Double]

        init(_ words: [SearchWord]) {
            self.words = words.map { (Array($0.text.utf8), $0.isPrefix) }
            keys = [Double](repeating: 0, count: words.count)
        }

        /// The search score of the document in the statement's current row, from
        /// its multiplier and terms columns; nil when it lacks a word.
        mutating func score(_ row: DirectStatement, multiplier: Int32, terms: Int32, weights: [Double]) -> Double? {
            let factor = row.double(multiplier)
            let matches = row.withBlob(terms) { bytes in
                SearchDocument.bestKeys(in: bytes, multiplier: factor, matcher: self, into: &keys)
            }
            guard matches else { return nil }
            var score = 0.0
            for (key, weight) in zip(keys, weights) { score += weight * key }
            return score
        }
    }

    /// For each word, the best key among the stored terms it matches, read
    /// straight from a `search_docs.terms` blob; nil when some word matches none
    /// of them (the document does not match).
    static func bestKeys(in bytes: UnsafeRawBufferPointer, multiplier: Double, matcher: Matcher,
                         into best: inout [Double]) -> Bool {
        for index in best.indices { best[index] = -.infinity }
        var offset = 0
        while offset < bytes.count {
            let length = Int(bytes[offset])
            let start = offset + 1
            guard start + length + 8 <= bytes.count else { return false }
            for (index, word) in matcher.words.enumerated()
            where word.isPrefix ? word.bytes.count <= length : word.bytes.count == length {
                var matches = true
                for position in 0..<word.bytes.count where bytes[start + position] != word.bytes[position] {
                    matches = false
                    break
                }
                guard matches else { continue }
                var pattern: UInt64 = 0
                for byte in 0..<8 { pattern |= UInt64(bytes[start + length + byte]) << (8 * UInt64(byte)) }
                let key = Double(bitPattern: pattern) * multiplier
                if key > best[index] { best[index] = key }
            }
            offset = start + length + 8
        }
        return !best.contains(-.infinity)
    }

    static func decode(_ bytes: [UInt8]) throws(SearchIndexError) -> [Term] {
        var terms: [Term] = []
        var offset = 0
        while offset < bytes.count {
            let length = Int(bytes[offset])
            guard offset + 1 + length + 8 <= bytes.count else {
                throw SearchIndexError("a search_docs.terms blob is truncated at byte \(offset)")
            }
            let text = String(decoding: bytes[(offset + 1)..<(offset + 1 + length)], as: UTF8.self)
            var pattern: UInt64 = 0
            for index in 0..<8 { pattern |= UInt64(bytes[offset + 1 + length + index]) << (8 * UInt64(index)) }
            terms.append(Term(text: text, impact: Double(bitPattern: pattern)))
            offset += 1 + length + 8
        }
        return terms
    }
}

extension FixedWidthInteger where Self: SignedInteger {
    /// `self + other`, held at the type's bounds instead of overflowing: the
    /// search index sums counts read from the store, and a store file someone
    /// edited may hold any count.
    func addingSaturated(_ other: Self) -> Self {
        let (sum, overflow) = addingReportingOverflow(other)
        guard overflow else { return sum }
        return other < 0 ? .min : .max
    }
}

struct SearchIndexError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
