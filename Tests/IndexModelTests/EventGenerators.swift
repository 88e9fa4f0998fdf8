import IndexModel
import PropertyBased

/// Random journal events for the codec's property tests: every event kind, with
/// attribute sets that hold each standard key with its required type and custom
/// keys of every type, finite doubles at the edges, full-range timestamps and
/// strings mixing ASCII, combining marks, emoji and other scripts.
enum EventGenerators {
    /// Any journal event, every kind equally likely.
    static let event = Generator<JournalEvent, Shrink.None<JournalEvent>>(run: { rng in
        RandomEvents.event(&rng)
    })

    /// Any attribute set (as projections store it).
    static let attributeSet = Generator<AttributeSet, Shrink.None<AttributeSet>>(run: { rng in
        RandomEvents.attributes(&rng)
    })

    /// Any activity (as projections store it).
    static let activity = Generator<UserActivity, Shrink.None<UserActivity>>(run: { rng in
        RandomEvents.activity(&rng)
    })
}

/// The building blocks of `EventGenerators`, generic over the random source so
/// they can be driven by the property checker's seeded generator.
enum RandomEvents {
    /// Pieces strings are made of. Each is a whole grapheme or a deliberately broken
    /// one (a lone combining mark), so strings test bytes, not just ASCII.
    static let stringPieces: [String] = [
        "a", "Z", "0", " ", "-", ".", "/", "\"", "\\", "\n", "\t", "\u{0}", "\u{7F}",
        "é", "e\u{301}", "\u{301}", "ñ", "ß", "Å",
        "日本", "한국어", "مرحبا", "שלום", "Ελλάδα",
        "😀", "👩‍👩‍👧", "🇯🇵", "👍🏽", "\u{200D}", "\u{FEFF}", "\u{10FFFF}",
    ]

    static func event(_ rng: inout some RandomNumberGenerator) -> JournalEvent {
        let kind = EventKind.allCases.randomElement(using: &rng)!
        switch kind {
        case .itemIndexed:
            return .itemIndexed(index: string(&rng), item: item(&rng))
        case .itemUpdated:
            return .itemUpdated(index: string(&rng), update: update(&rng))
        case .itemDeleted:
            return .itemDeleted(index: string(&rng), identifier: string(&rng), cause: cause(&rng))
        case .itemExpired:
            return .itemExpired(index: string(&rng), identifier: string(&rng))
        case .clientStateSet:
            let count = Int.random(in: 0...40, using: &rng)
            return .clientStateSet(index: string(&rng), state: (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) })
        case .activityRecorded:
            return .activityRecorded(activity(&rng))
        case .activityDeleted:
            return .activityDeleted(key: string(&rng), cause: cause(&rng))
        case .activityExpired:
            return .activityExpired(key: string(&rng))
        case .resultShown:
            return .resultShown(ref: string(&rng))
        case .resultEngaged:
            return .resultEngaged(ref: string(&rng))
        case .publicContentRequested:
            let hashes = (0..<Int.random(in: 0...4, using: &rng)).map { _ in
                (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) }
            }
            return .publicContentRequested(hashes: Array(Set(hashes)).sorted { $0.lexicographicallyPrecedes($1) })
        case .storeRestored:
            return .storeRestored(StoreRestore(
                previousEpoch: Epoch(UInt64.random(in: 1...UInt64(Int64.max), using: &rng)),
                snapshotHead: Seq(UInt64.random(in: 0...UInt64(Int64.max), using: &rng)),
                truncatedTo: Bool.random(using: &rng) ? Seq(UInt64.random(in: 0...1000, using: &rng)) : nil,
                snapshotSHA256: (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) }))
        case .reindexRequested:
            return .reindexRequested(index: string(&rng), identifiers: Bool.random(using: &rng) ? strings(&rng) : nil)
        case .reindexAcknowledged:
            return .reindexAcknowledged(index: string(&rng), request: UInt64.random(in: 1...UInt64(Int64.max), using: &rng))
        case .epochAdvanced:
            let from = UInt64.random(in: 1...UInt64(Int64.max - 1), using: &rng)
            return .epochAdvanced(from: Epoch(from), to: Epoch(UInt64.random(in: (from + 1)...UInt64(Int64.max), using: &rng)))
        case .popularityModeLearned:
            guard Bool.random(using: &rng) else { return .popularityModeLearned(.exact) }
            let epsilon = Int.random(in: 1...20_000, using: &rng)
            let settings = try? PrivatePopularity(
                epsilonThousandths: epsilon,
                dailyBudgetThousandths: Int.random(in: epsilon...PrivatePopularity.maximumDailyBudgetThousandths, using: &rng),
                hashes: Int.random(in: 1...64, using: &rng), buckets: 1 << Int.random(in: 1...16, using: &rng))
            return .popularityModeLearned(settings.map(PopularityMode.ldp) ?? .exact)
        case .cloudReindexAsked:
            // Positions reach the wire's largest, 2^53 − 1.
            return .cloudReindexAsked(epoch: Epoch(UInt64.random(in: 0...(1 << 53) - 1, using: &rng)),
                                      seq: OutboxSeq(UInt64.random(in: 0...(1 << 53) - 1, using: &rng)))
        case .votesReindexRequested:
            let after = (UInt64.random(in: 0...1_000, using: &rng), UInt64.random(in: 0...1_000, using: &rng))
            let through = (after.0 + UInt64.random(in: 0...2, using: &rng), UInt64.random(in: 0...1_000, using: &rng))
            let hashes = (0..<Int.random(in: 0...4, using: &rng)).map { _ in
                (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) }
            }
            return .votesReindexRequested(VoteReindexRequest(
                afterEpoch: Epoch(after.0), afterSeq: OutboxSeq(after.1),
                throughEpoch: Epoch(through.0), throughSeq: OutboxSeq(through.0 == after.0 ? max(through.1, after.1) : through.1),
                hashes: Array(Set(hashes)).sorted { $0.lexicographicallyPrecedes($1) }, more: Bool.random(using: &rng)))
        case .activityPurged:
            func pseudonym(_ rng: inout some RandomNumberGenerator) -> String {
                PurgedActivity.pseudonym(digest: (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) })
            }
            let hash = Bool.random(using: &rng) ? (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) } : nil
            return .activityPurged(PurgedActivity(
                key: pseudonym(&rng), publicHash: hash, webpageURL: Bool.random(using: &rng) ? pseudonym(&rng) : nil,
                relatedUniqueIdentifier: Bool.random(using: &rng) ? string(&rng) : nil,
                weakRelatedUniqueIdentifier: Bool.random(using: &rng) ? string(&rng) : nil))
        }
    }

    static func string(_ rng: inout some RandomNumberGenerator, maximumPieces: Int = 8) -> String {
        let count = Int.random(in: 0...maximumPieces, using: &rng)
        var text = ""
        for _ in 0..<count { text += stringPieces.randomElement(using: &rng)! }
        return text
    }

    static func strings(_ rng: inout some RandomNumberGenerator) -> [String] {
        (0..<Int.random(in: 0...4, using: &rng)).map { _ in string(&rng) }
    }

    /// Full-range instants, with the extremes and the epoch more likely than chance.
    static func timestamp(_ rng: inout some RandomNumberGenerator) -> Timestamp {
        let edges: [Int64] = [0, -1, 1, Int64.min, Int64.max, -86_400_000, 1_798_761_600_000]
        if Int.random(in: 0..<4, using: &rng) == 0 {
            return Timestamp(millisecondsSince1970: edges.randomElement(using: &rng)!)
        }
        return Timestamp(millisecondsSince1970: Int64.random(in: Int64.min...Int64.max, using: &rng))
    }

    /// Finite doubles only (the model refuses NaN and infinities), edges included.
    static func finiteDouble(_ rng: inout some RandomNumberGenerator) -> Double {
        let edges: [Double] = [
            0, -0.0, 1, -1, 0.5, .pi, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
            .leastNonzeroMagnitude, .leastNormalMagnitude, 1e15, 9_007_199_254_740_992, 0.1,
        ]
        if Int.random(in: 0..<3, using: &rng) == 0 { return edges.randomElement(using: &rng)! }
        while true {
            let candidate = Double(bitPattern: UInt64.random(in: 0...UInt64.max, using: &rng))
            if candidate.isFinite { return candidate }
        }
    }

    static func value(of type: AttributeType, _ rng: inout some RandomNumberGenerator) -> AttributeValue {
        switch type {
        case .string: .string(string(&rng))
        case .strings: .strings(strings(&rng))
        case .number: .number(finiteDouble(&rng))
        case .date: .date(timestamp(&rng))
        case .bool: .bool(Bool.random(using: &rng))
        }
    }

    static let allTypes: [AttributeType] = [.string, .strings, .number, .date, .bool]

    /// A custom key: any name that is not a standard attribute's name.
    static func customKey(_ rng: inout some RandomNumberGenerator) -> AttributeKey {
        while true {
            let key = AttributeKey(name: string(&rng, maximumPieces: 4))
            if key.isCustom { return key }
        }
    }

    /// A key (standard keys and custom keys about equally likely) with a value of a type it accepts.
    static func entry(_ rng: inout some RandomNumberGenerator) -> (AttributeKey, AttributeValue) {
        if Bool.random(using: &rng) {
            let key = AttributeKey.standard.randomElement(using: &rng)!
            return (key, value(of: key.requiredType!, &rng))
        }
        return (customKey(&rng), value(of: allTypes.randomElement(using: &rng)!, &rng))
    }

    static func attributes(_ rng: inout some RandomNumberGenerator) -> AttributeSet {
        var set = AttributeSet()
        for _ in 0..<Int.random(in: 0...8, using: &rng) {
            let (key, value) = entry(&rng)
            set[key] = value
        }
        return set
    }

    static func item(_ rng: inout some RandomNumberGenerator) -> SearchableItem {
        SearchableItem(
            uniqueIdentifier: string(&rng),
            domainIdentifier: Bool.random(using: &rng) ? string(&rng) : nil,
            attributes: attributes(&rng),
            expirationDate: Bool.random(using: &rng) ? timestamp(&rng) : nil)
    }

    static func update(_ rng: inout some RandomNumberGenerator) -> ItemUpdate {
        var changes = AttributeChanges()
        for _ in 0..<Int.random(in: 0...8, using: &rng) {
            let (key, value) = entry(&rng)
            changes[key] = .some(Bool.random(using: &rng) ? value : nil)
        }
        let domain: FieldChange<String>
        switch Int.random(in: 0..<3, using: &rng) {
        case 0: domain = .keep
        case 1: domain = .set(string(&rng))
        default: domain = .clear
        }
        let expiration: FieldChange<Timestamp>
        switch Int.random(in: 0..<3, using: &rng) {
        case 0: expiration = .keep
        case 1: expiration = .set(timestamp(&rng))
        default: expiration = .clear
        }
        return ItemUpdate(uniqueIdentifier: string(&rng), domainIdentifier: domain, expirationDate: expiration,
                          attributes: changes)
    }

    static func cause(_ rng: inout some RandomNumberGenerator) -> DeletionCause {
        switch Int.random(in: 0..<3, using: &rng) {
        case 0: .identifier
        case 1: .domain(string(&rng))
        default: .all
        }
    }

    static func activity(_ rng: inout some RandomNumberGenerator) -> UserActivity {
        var userInfo: [String: String] = [:]
        for _ in 0..<Int.random(in: 0...4, using: &rng) {
            userInfo[string(&rng, maximumPieces: 3)] = string(&rng)
        }
        return UserActivity(
            activityType: string(&rng),
            title: Bool.random(using: &rng) ? string(&rng) : nil,
            keywords: strings(&rng),
            attributes: attributes(&rng),
            userInfo: userInfo,
            webpageURL: Bool.random(using: &rng) ? string(&rng) : nil,
            expirationDate: Bool.random(using: &rng) ? timestamp(&rng) : nil,
            eligibleForSearch: Bool.random(using: &rng),
            eligibleForHandoff: Bool.random(using: &rng),
            eligibleForPublicIndexing: Bool.random(using: &rng),
            relatedUniqueIdentifier: Bool.random(using: &rng) ? string(&rng) : nil,
            weakRelatedUniqueIdentifier: Bool.random(using: &rng) ? string(&rng) : nil,
            domainIdentifier: Bool.random(using: &rng) ? string(&rng) : nil,
            persistentIdentifier: Bool.random(using: &rng) ? string(&rng) : nil)
    }
}
