/// One event of a device's event journal. Every change to a device store is an
/// event; the store's projections (items, activities, client state, engagement
/// counts) are a fold over them.
///
/// The binary form is specified in `Journal/FORMAT.md` and versioned by
/// `JournalEvent.formatVersion`.
public enum JournalEvent: Hashable, Sendable {
    /// An item was indexed (inserted, or replaced whole).
    case itemIndexed(index: String, item: SearchableItem)
    /// An existing item was updated with isUpdate semantics.
    case itemUpdated(index: String, update: ItemUpdate)
    /// An item was deleted by an app call.
    case itemDeleted(index: String, identifier: String, cause: DeletionCause)
    /// An item's expiration date passed.
    case itemExpired(index: String, identifier: String)
    /// A batch committed with this client state for its index.
    case clientStateSet(index: String, state: [UInt8])
    /// An activity became current.
    case activityRecorded(UserActivity)
    /// An activity was deleted by an app call.
    case activityDeleted(key: String, cause: DeletionCause)
    /// An activity's expiration date passed.
    case activityExpired(key: String)
    /// A search result was shown to the user. `ref` is an item identifier, an
    /// activity URL or a related identifier.
    case resultShown(ref: String)
    /// The user engaged with (tapped) a search result.
    case resultEngaged(ref: String)
    /// The cloud asked this device for the public content of these public hashes
    /// (each 32 bytes, in ascending order, no repeats). Journaled so that the
    /// outbox, which answers it, stays a fold of the journal.
    case publicContentRequested(hashes: [[UInt8]])
    /// The store was restored from a backup snapshot and a new epoch began:
    /// the first event of every epoch after the first.
    case storeRestored(StoreRestore)
    /// The store asked the app to index again (`CSSearchableIndexDelegate`):
    /// everything of `index`, or only `identifiers`. The app resumes from
    /// `fetchLastClientState` where it has one.
    case reindexRequested(index: String, identifiers: [String]?)
    /// The app acknowledged the reindex request journaled at `request`.
    case reindexAcknowledged(index: String, request: UInt64)
    /// The cloud had begun a later epoch of this device than the store's own
    /// (its clock ran back past an earlier restore), so the store moved its
    /// current epoch from `from` to `to`. The cloud held `from` through seq
    /// `kept` (0: none of it): those messages stay, and the outbox messages
    /// after them move to `to`, numbered from 1.
    case epochAdvanced(from: Epoch, to: Epoch, kept: OutboxSeq = .beforeFirst)
    /// An ack said the app now counts popularity this way (it differed from
    /// the mode the store held). Journaled so that the outbox, which sends
    /// signals or private reports by it, stays a fold of the journal.
    case popularityModeLearned(PopularityMode)
    /// The store asks the cloud which public hashes the messages it holds of
    /// this device after outbox position (`epoch`, `seq`), in the device's
    /// epochs before the current one, voted for or withdrew: messages a
    /// restored device no longer knows it sent. Journaled by a restore; the
    /// fold sends it as a `reindexAsk` message.
    case cloudReindexAsked(epoch: Epoch, seq: OutboxSeq)
    /// The store is to state its vote again for each hash of the request (a
    /// vote when it holds a live one, else a withdrawal), and to ask on after
    /// the request's `through` when there is more. Requested by the cloud's
    /// answer to a `cloudReindexAsked` (from an ack), or by the store itself
    /// when the cloud ended an epoch before messages of it that it had not
    /// acknowledged, whose votes and withdrawals may then never count.
    case votesReindexRequested(VoteReindexRequest)
    /// What a purge keeps of an `activityRecorded` whose activity was
    /// deleted since (`Journal/FORMAT.md`, "Purged rows"): its key and URL as
    /// pseudonyms, its public hash, and the identifiers it was related to.
    /// Only a purged row holds one.
    case activityPurged(PurgedActivity)

    /// The newest version of the event encoding this build writes. Each event is
    /// written with the version that introduced its kind (`EventKind.version`),
    /// so events of older kinds keep their bytes and their hashes; the one
    /// exception is an `epochAdvanced` that kept messages in its old epoch,
    /// whose count version 4 added (`formatVersionWritten`).
    public static let formatVersion: UInt8 = 7

    /// The version this event is written with.
    public var formatVersionWritten: UInt8 {
        if case .epochAdvanced(_, _, let kept) = self, kept > .beforeFirst { return 4 }
        return kind.version
    }

    public var kind: EventKind {
        switch self {
        case .itemIndexed: .itemIndexed
        case .itemUpdated: .itemUpdated
        case .itemDeleted: .itemDeleted
        case .itemExpired: .itemExpired
        case .clientStateSet: .clientStateSet
        case .activityRecorded: .activityRecorded
        case .activityDeleted: .activityDeleted
        case .activityExpired: .activityExpired
        case .resultShown: .resultShown
        case .resultEngaged: .resultEngaged
        case .publicContentRequested: .publicContentRequested
        case .storeRestored: .storeRestored
        case .reindexRequested: .reindexRequested
        case .reindexAcknowledged: .reindexAcknowledged
        case .epochAdvanced: .epochAdvanced
        case .popularityModeLearned: .popularityModeLearned
        case .cloudReindexAsked: .cloudReindexAsked
        case .votesReindexRequested: .votesReindexRequested
        case .activityPurged: .activityPurged
        }
    }

    /// The named index the event belongs to, when it belongs to one.
    public var indexName: String? {
        switch self {
        case .itemIndexed(let index, _), .itemUpdated(let index, _), .itemDeleted(let index, _, _),
             .itemExpired(let index, _), .clientStateSet(let index, _):
            index
        default:
            nil
        }
    }

    /// The item identifier, activity key or result reference the event is about.
    public var subject: String? {
        switch self {
        case .itemIndexed(_, let item): item.uniqueIdentifier
        case .itemUpdated(_, let update): update.uniqueIdentifier
        case .itemDeleted(_, let identifier, _), .itemExpired(_, let identifier): identifier
        case .clientStateSet: nil
        case .activityRecorded(let activity): activity.key
        case .activityDeleted(let key, _), .activityExpired(let key): key
        case .activityPurged(let residue): residue.key
        case .resultShown(let ref), .resultEngaged(let ref): ref
        case .publicContentRequested, .storeRestored, .reindexRequested, .reindexAcknowledged, .epochAdvanced,
             .popularityModeLearned, .cloudReindexAsked, .votesReindexRequested: nil
        }
    }
}

/// The kind of a journal event. Raw values are the codec's kind bytes; released
/// values are never reused.
public enum EventKind: UInt8, CaseIterable, Hashable, Sendable, CustomStringConvertible {
    case itemIndexed = 1
    case itemUpdated = 2
    case itemDeleted = 3
    case itemExpired = 4
    case clientStateSet = 5
    case activityRecorded = 6
    case activityDeleted = 7
    case activityExpired = 8
    case resultShown = 9
    case resultEngaged = 10
    case publicContentRequested = 11
    case storeRestored = 12
    case reindexRequested = 13
    case reindexAcknowledged = 14
    case epochAdvanced = 15
    case popularityModeLearned = 16
    case cloudReindexAsked = 17
    case votesReindexRequested = 18
    case activityPurged = 19

    /// The event format version that introduced the kind, which is the version
    /// its events are written with.
    public var version: UInt8 {
        if rawValue >= EventKind.activityPurged.rawValue { return 7 }
        if rawValue >= EventKind.cloudReindexAsked.rawValue { return 6 }
        if rawValue >= EventKind.popularityModeLearned.rawValue { return 5 }
        if rawValue >= EventKind.epochAdvanced.rawValue { return 3 }
        return rawValue >= EventKind.publicContentRequested.rawValue ? 2 : 1
    }

    public var name: String {
        switch self {
        case .itemIndexed: "itemIndexed"
        case .itemUpdated: "itemUpdated"
        case .itemDeleted: "itemDeleted"
        case .itemExpired: "itemExpired"
        case .clientStateSet: "clientStateSet"
        case .activityRecorded: "activityRecorded"
        case .activityDeleted: "activityDeleted"
        case .activityExpired: "activityExpired"
        case .resultShown: "resultShown"
        case .resultEngaged: "resultEngaged"
        case .publicContentRequested: "publicContentRequested"
        case .storeRestored: "storeRestored"
        case .reindexRequested: "reindexRequested"
        case .reindexAcknowledged: "reindexAcknowledged"
        case .epochAdvanced: "epochAdvanced"
        case .popularityModeLearned: "popularityModeLearned"
        case .cloudReindexAsked: "cloudReindexAsked"
        case .votesReindexRequested: "votesReindexRequested"
        case .activityPurged: "activityPurged"
        }
    }

    public init?(name: String) {
        guard let kind = EventKind.allCases.first(where: { $0.name == name }) else { return nil }
        self = kind
    }

    public var description: String { name }
}

/// Why an item or activity was deleted by an app call.
public enum DeletionCause: Hashable, Sendable {
    /// Deleted by its identifier.
    case identifier
    /// Deleted because its domain is, or is below, this domain identifier.
    case domain(String)
    /// Deleted by a delete-all call.
    case all
}

/// What a restore brought back: from which epoch and snapshot, up to which seq.
public struct StoreRestore: Hashable, Sendable {
    /// The epoch the snapshot was taken in.
    public var previousEpoch: Epoch
    /// The journal head the snapshot held.
    public var snapshotHead: Seq
    /// `--to-seq`: the journal was cut back to this seq; nil when restored whole.
    public var truncatedTo: Seq?
    /// The SHA-256 of the snapshot's content (32 bytes), naming the snapshot.
    public var snapshotSHA256: [UInt8]

    public init(previousEpoch: Epoch, snapshotHead: Seq, truncatedTo: Seq?, snapshotSHA256: [UInt8]) {
        self.previousEpoch = previousEpoch
        self.snapshotHead = snapshotHead
        self.truncatedTo = truncatedTo
        self.snapshotSHA256 = snapshotSHA256
    }
}

/// A request to state votes again (`JournalEvent.votesReindexRequested`):
/// the public hashes that the device's messages between two outbox positions
/// voted for or withdrew, which the cloud holds and the device no longer
/// knows of, or which the device sent and the cloud may never count.
public struct VoteReindexRequest: Hashable, Sendable {
    /// The outbox position the device asked after.
    public var afterEpoch: Epoch
    public var afterSeq: OutboxSeq
    /// The last position read for this request: a device told there is
    /// `more` asks again after it.
    public var throughEpoch: Epoch
    public var throughSeq: OutboxSeq
    /// Public hashes of 32 bytes, in ascending order, without repeats.
    public var hashes: [[UInt8]]
    public var more: Bool

    public init(afterEpoch: Epoch, afterSeq: OutboxSeq, throughEpoch: Epoch, throughSeq: OutboxSeq, hashes: [[UInt8]], more: Bool) {
        self.afterEpoch = afterEpoch
        self.afterSeq = afterSeq
        self.throughEpoch = throughEpoch
        self.throughSeq = throughSeq
        self.hashes = hashes
        self.more = more
    }
}

extension JournalEvent {
    /// What a purge keeps of this event (`Journal/FORMAT.md`, "Purged
    /// rows"): of an item's indexing or update, its index and identifier,
    /// with nothing the app said about the item. Nil for every other kind:
    /// an activity's residues need pseudonyms, made under a secret of the
    /// store (`PurgedActivity`), so the store makes them. Folding the residue in place of the event leaves the
    /// same projections once the item's deletion is folded too, since the
    /// fold reads nothing else of a deleted item.
    public var purgedResidue: JournalEvent? {
        switch self {
        case .itemIndexed(let index, let item):
            .itemIndexed(index: index, item: SearchableItem(uniqueIdentifier: item.uniqueIdentifier))
        case .itemUpdated(let index, let update):
            .itemUpdated(index: index, update: ItemUpdate(uniqueIdentifier: update.uniqueIdentifier))
        default:
            nil
        }
    }

    /// The item this event indexes, updates or removes: its index and identifier.
    public var itemKey: ItemKey? {
        switch self {
        case .itemIndexed(let index, let item): ItemKey(index: index, identifier: item.uniqueIdentifier)
        case .itemUpdated(let index, let update): ItemKey(index: index, identifier: update.uniqueIdentifier)
        case .itemDeleted(let index, let identifier, _), .itemExpired(let index, let identifier):
            ItemKey(index: index, identifier: identifier)
        default: nil
        }
    }

    /// Whether this event removes its item (a deletion or an expiry): the tombstone a purge needs.
    public var removesItem: Bool {
        switch self {
        case .itemDeleted, .itemExpired: true
        default: false
        }
    }
}

/// What a purge keeps of an activity's recording (`JournalEvent.activityPurged`):
/// what the fold needs to pair it with the activity's removal and to send
/// the same votes, signals and withdrawals as before, and nothing the user
/// did or read. The key and the URL are pseudonyms (`isPseudonym`): keyed
/// digests under a secret of the store, so the same key or URL always has
/// the same pseudonym on this device, and without the store's secret no
/// guess can be checked against one.
public struct PurgedActivity: Hashable, Sendable {
    /// The pseudonym of the activity's key.
    public var key: String
    /// The activity's public hash (32 bytes) when it was public, else nil.
    public var publicHash: [UInt8]?
    /// The pseudonym of its web page URL, when it had one that is not also
    /// one of its related identifiers.
    public var webpageURL: String?
    public var relatedUniqueIdentifier: String?
    public var weakRelatedUniqueIdentifier: String?

    public init(key: String, publicHash: [UInt8]?, webpageURL: String?, relatedUniqueIdentifier: String?,
                weakRelatedUniqueIdentifier: String?) {
        self.key = key
        self.publicHash = publicHash
        self.webpageURL = webpageURL
        self.relatedUniqueIdentifier = relatedUniqueIdentifier
        self.weakRelatedUniqueIdentifier = weakRelatedUniqueIdentifier
    }

    /// What every pseudonym begins with: no activity key (`id:`, `type:`) does.
    public static let pseudonymPrefix = "purged:"
    /// The bytes of the digest a pseudonym spells in hex.
    public static let pseudonymDigestBytes = 16

    /// The pseudonym spelling `digest` (its first 16 bytes, in lowercase hex).
    public static func pseudonym(digest: some Sequence<UInt8>) -> String {
        pseudonymPrefix + Array(digest.prefix(pseudonymDigestBytes)).hexString
    }

    /// Whether `text` is a pseudonym: the prefix and 32 lowercase hex digits.
    public static func isPseudonym(_ text: String) -> Bool {
        let utf8 = Array(text.utf8)
        let prefix = Array(pseudonymPrefix.utf8)
        guard utf8.count == prefix.count + 2 * pseudonymDigestBytes, utf8.starts(with: prefix) else { return false }
        return utf8[prefix.count...].allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
            || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
    }

    /// The references engagement with the activity was matched by, as
    /// `activityRecorded` has them: URL, related and weakly related identifier.
    public var refs: [String] {
        UserActivity.sortedDistinct(webpageURL, relatedUniqueIdentifier, weakRelatedUniqueIdentifier)
    }
}

/// An item's key: its index and its unique identifier.
public struct ItemKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let index: String
    public let identifier: String

    public init(index: String, identifier: String) {
        self.index = index
        self.identifier = identifier
    }

    public static func < (lhs: ItemKey, rhs: ItemKey) -> Bool {
        (lhs.index, lhs.identifier) < (rhs.index, rhs.identifier)
    }

    public var description: String { "\(index)/\(identifier)" }
}
