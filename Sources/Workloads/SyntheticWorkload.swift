import Foundation
import IndexModel

/// A deterministic stream of app calls for tests and benchmarks: items with
/// Zipf-distributed words, updates, deletions by id, domain and all, batches with
/// client state, activities (private and public), shown and engaged results, and,
/// when asked, expirations and clock advances. The same seed gives the same calls.
public struct SyntheticWorkload: Sendable {
    /// The shape of the stream. The defaults: two indexes, 400 item
    /// identifiers each, no clock. The same options and seed give the same calls.
    public struct Options: Sendable {
        /// The named indexes that calls go to.
        public var indexes: [String] = ["photos", "notes"]
        /// Item identifiers are drawn from this many per index, so calls revisit items.
        public var itemsPerIndex = 400
        /// Include items and activities that expire, and `advanceClock` calls.
        public var includeClock = false
        /// The clock's starting point when `includeClock` is set.
        public var start = Timestamp(millisecondsSince1970: 1_795_000_000_000)

        public init() {}
    }

    /// The shape of the stream, as given.
    public let options: Options
    private var random: SplitMix64
    private var clock: Timestamp
    private var batchCounter = 0
    private var clientStates: [String: [UInt8]] = [:]

    /// A stream drawn from `seed`; the same seed and options give the same calls.
    public init(seed: UInt64, options: Options = Options()) {
        self.options = options
        random = SplitMix64(seed: seed)
        clock = options.start
    }

    /// The vocabulary: 2,000 pronounceable words, the same on every run.
    public static let vocabulary: [String] = {
        let onsets = ["b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "br", "st", "tr"]
        let vowels = ["a", "e", "i", "o", "u", "ai", "ou", "ea"]
        var words: [String] = []
        var generator = SplitMix64(seed: 0x5EED_0F_5161_7715)
        var seen = Set<String>()
        while words.count < 2000 {
            let syllables = 1 + Int(generator.next() % 3)
            var word = ""
            for _ in 0..<syllables {
                word += onsets[Int(generator.next() % UInt64(onsets.count))]
                word += vowels[Int(generator.next() % UInt64(vowels.count))]
            }
            if seen.insert(word).inserted { words.append(word) }
        }
        return words
    }()

    /// Zipf popularity (s = 1.1) over the vocabulary.
    private static let popularity = ZipfDistribution(count: vocabulary.count, exponent: 1.1)

    /// A word drawn by Zipf popularity: a few words are very common, most are rare.
    public mutating func word() -> String {
        SyntheticWorkload.vocabulary[SyntheticWorkload.popularity.draw(&random)]
    }

    /// `count` words, each drawn by Zipf popularity.
    public mutating func words(_ count: Int) -> [String] {
        (0..<count).map { _ in word() }
    }

    private mutating func uniform(_ upperBound: Int) -> Int {
        Int(random.next() % UInt64(max(upperBound, 1)))
    }

    private mutating func chance(_ probability: Double) -> Bool {
        Double(random.next() >> 11) / Double(1 << 53) < probability
    }

    private mutating func pickIndex() -> String {
        options.indexes[uniform(options.indexes.count)]
    }

    private mutating func itemIdentifier() -> String {
        "item-\(uniform(options.itemsPerIndex))"
    }

    private mutating func domain() -> String {
        let top = "album-\(uniform(8))"
        return chance(0.5) ? top : top + ".\(2015 + uniform(4))"
    }

    /// A synthetic item with a title, description, keywords and a domain.
    public mutating func item(identifier: String? = nil) -> SearchableItem {
        var attributes = AttributeSet()
        attributes.title = words(2 + uniform(4)).joined(separator: " ").capitalizedFirst
        attributes.contentDescription = words(6 + uniform(12)).joined(separator: " ")
        attributes.keywords = words(1 + uniform(4))
        if chance(0.3) { attributes.contentURL = "https://example.com/\(identifier ?? "x")/\(uniform(1000))" }
        if chance(0.2) { attributes[.rating] = .number(Double(uniform(50)) / 10) }
        if chance(0.1) { attributes[.custom("camera")] = .string(word()) }
        var expiration: Timestamp?
        if options.includeClock && chance(0.1) {
            expiration = clock.adding(milliseconds: Int64(1 + uniform(72)) * 3_600_000)
        }
        return SearchableItem(uniqueIdentifier: identifier ?? itemIdentifier(), domainIdentifier: domain(),
                              attributes: attributes, expirationDate: expiration)
    }

    private mutating func indexOperation(index: String) -> AppOperation {
        switch uniform(100) {
        case 0..<55:
            var seen = Set<String>()
            var items: [SearchableItem] = []
            for _ in 0..<(1 + uniform(5)) {
                let candidate = item()
                if seen.insert(candidate.uniqueIdentifier).inserted { items.append(candidate) }
            }
            return .index(index: index, items: items)
        case 55..<75:
            let identifier = itemIdentifier()
            var changes = AttributeChanges()
            changes[.title] = .some(.string(words(3).joined(separator: " ")))
            if chance(0.3) { changes[.contentDescription] = .some(nil) }
            return .update(index: index, updates: [ItemUpdate(uniqueIdentifier: identifier, attributes: changes)])
        case 75..<90:
            let identifiers = Array(Set((0..<(1 + uniform(3))).map { _ in itemIdentifier() })).sorted()
            return .delete(index: index, identifiers: identifiers)
        case 90..<98:
            return .deleteDomains(index: index, domains: [domain()])
        default:
            return .deleteAll(index: index)
        }
    }

    /// The next app call.
    public mutating func nextOperation() -> AppOperation {
        let roll = uniform(1000)
        switch roll {
        case 0..<420:
            let index = pickIndex()
            return indexOperation(index: index)
        case 420..<480:
            let index = pickIndex()
            batchCounter += 1
            let operations = (0..<(1 + uniform(4))).map { _ in indexOperation(index: index) }.filter {
                if case .deleteAll = $0 { return false }
                return true
            }
            let state = Array("state-\(batchCounter)".utf8)
            let condition: ClientStateCondition = chance(0.5) ? .expecting(clientStates[index]) : .unconditional
            clientStates[index] = state
            return .batch(IndexBatch(index: index, operations: operations, clientState: state, condition: condition))
        case 480..<650:
            return .activity(activity())
        case 650..<800:
            return .shown(ref: reference())
        case 800..<900:
            return .engage(ref: reference())
        case 900..<930:
            return .deleteActivities(identifiers: ["activity-\(uniform(60))"])
        case 930..<945:
            return .deleteActivityDomains(domains: ["recipes"])
        case 945..<950:
            return .deleteAllActivities
        default:
            if options.includeClock {
                clock = clock.adding(milliseconds: Int64(1 + uniform(24)) * 3_600_000)
                return .advanceClock(to: clock)
            }
            return .shown(ref: reference())
        }
    }

    private mutating func reference() -> String {
        chance(0.8) ? itemIdentifier() : "https://example.com/recipe/\(uniform(40))"
    }

    /// A synthetic activity: private or public, searchable or not, sometimes
    /// related to an item, sometimes with a persistent identifier.
    public mutating func activity() -> UserActivity {
        let recipe = uniform(40)
        var activity = UserActivity(activityType: chance(0.5) ? "com.example.recipes/view" : "com.example.photos/view")
        activity.title = words(2 + uniform(3)).joined(separator: " ").capitalizedFirst
        activity.keywords = words(uniform(3))
        activity.webpageURL = chance(0.6) ? "https://example.com/recipe/\(recipe)" : nil
        activity.userInfo = ["recipe": String(recipe)]
        activity.eligibleForSearch = chance(0.8)
        activity.eligibleForPublicIndexing = chance(0.4)
        activity.eligibleForHandoff = chance(0.3)
        if chance(0.3) { activity.relatedUniqueIdentifier = itemIdentifier() }
        if chance(0.2) { activity.weakRelatedUniqueIdentifier = itemIdentifier() }
        if chance(0.3) { activity.domainIdentifier = "recipes" }
        if chance(0.3) { activity.persistentIdentifier = "activity-\(uniform(60))" }
        if options.includeClock && chance(0.1) {
            activity.expirationDate = clock.adding(milliseconds: Int64(1 + uniform(48)) * 3_600_000)
        }
        return activity
    }
}

extension String {
    var capitalizedFirst: String {
        guard let first else { return self }
        return first.uppercased() + dropFirst()
    }
}
