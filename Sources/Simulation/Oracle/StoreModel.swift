import DeviceStore
import IndexModel
import SyncWire

/// A message the oracle expects a device to send, by catalogue entry. Content
/// is not here: when a device answers a content request depends on the
/// network, so content is checked on its own.
///
/// A report's entry is the one the device's call engaged, which nothing on
/// the wire names: two reports are the same message whatever their entries
/// (`==`, `hash` and `<` leave it out), and a report read from the cloud log
/// has entry `ExpectedMessage.unnamed`.
enum ExpectedMessage: Hashable, Comparable, CustomStringConvertible {
    case vote(Int)
    case withdraw(Int)
    case view(Int)
    case shown(Int)
    case engaged(Int)
    case report(Int)
    /// A restored device's question about the votes the cloud holds of it
    /// beyond its journal (`OutboxMessage.reindexAsk`); it names no entry.
    case reindexAsk

    /// The entry of a report read from the cloud log.
    static let unnamed = -1

    var entry: Int {
        switch self {
        case .vote(let entry), .withdraw(let entry), .view(let entry), .shown(let entry), .engaged(let entry), .report(let entry): entry
        case .reindexAsk: ExpectedMessage.unnamed
        }
    }

    var description: String {
        switch self {
        case .vote(let entry): "vote for entry \(entry)"
        case .withdraw(let entry): "withdrawal for entry \(entry)"
        case .view(let entry): "view of entry \(entry)"
        case .shown(let entry): "impression of entry \(entry)"
        case .engaged(let entry): "engagement with entry \(entry)"
        case .report: "private report"
        case .reindexAsk: "reindex ask"
        }
    }

    /// The message's kind and the entry it names on the wire.
    private var identity: (kind: Int, entry: Int) {
        switch self {
        case .vote(let entry): (0, entry)
        case .withdraw(let entry): (1, entry)
        case .view(let entry): (2, entry)
        case .shown(let entry): (3, entry)
        case .engaged(let entry): (4, entry)
        case .report: (5, ExpectedMessage.unnamed)
        case .reindexAsk: (6, ExpectedMessage.unnamed)
        }
    }

    static func == (lhs: ExpectedMessage, rhs: ExpectedMessage) -> Bool {
        lhs.identity == rhs.identity
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(identity.kind)
        hasher.combine(identity.entry)
    }

    static func < (lhs: ExpectedMessage, rhs: ExpectedMessage) -> Bool {
        lhs.identity < rhs.identity
    }
}

/// The oracle's model of one device store: what the app's calls imply for its
/// items, its activities and its votes, and which messages each call must put
/// in the outbox. It is written from the semantics in DESIGN.md and
/// docs/SYNC.md, not from the store's code, and it is a value: a snapshot of
/// the device keeps a copy, and a restore goes back to it.
struct StoreModel {
    struct Activity {
        /// The catalogue entry of a public activity; nil for a private one.
        var entry: Int?
        /// What engaging or showing it goes by (`refers(to:)`): its web
        /// page and the items it is related to, strongly or weakly.
        var url: String?
        var live: Bool
        var related: String?
        var weaklyRelated: String?
        var domain: String?
        var expires: Timestamp?

        func refers(to ref: String) -> Bool {
            url == ref || related == ref || weaklyRelated == ref
        }
    }

    private(set) var items: [String: [String: SearchableItem]] = [:]
    private(set) var clientStates: [String: [UInt8]] = [:]
    private(set) var activities: [String: Activity] = [:]
    /// Entries with a live vote on this device.
    private(set) var votes: Set<Int> = []
    /// The app's private popularity, once the device learned it (nil: exact).
    private(set) var privately: PrivatePopularity?
    /// The ε the device's reports spent, in thousandths, by day of its clock.
    private(set) var spent: [Int64: Int] = [:]
    /// No item or activity expires before this (nil: none expires), so a
    /// call's sweep before it returns at once instead of looking at every
    /// item and activity.
    private var nextExpiry: Timestamp?

    /// Folds one call made at `now` (the device's clock) and returns the
    /// messages it implies, per entry in the order the device sends them.
    mutating func apply(_ operation: AppOperation, now: Timestamp, catalogue: Catalogue) -> [ExpectedMessage] {
        var out: [ExpectedMessage] = []
        expire(now: now, into: &out)
        apply(operation, now: now, catalogue: catalogue, into: &out)
        return out
    }

    /// A deletion a restore journals on its own (items the wiped store had
    /// purged, `RestoreReport.deletedAgain`): like a call, but without the
    /// expiry sweep a call runs first, since the restore runs none.
    mutating func deleteAgain(_ key: ItemKey, now: Timestamp, catalogue: Catalogue) -> [ExpectedMessage] {
        var out: [ExpectedMessage] = []
        apply(.delete(index: key.index, identifiers: [key.identifier]), now: now, catalogue: catalogue, into: &out)
        return out
    }

    /// An activity's deletion a restore journals on its own
    /// (`RestoreReport.activitiesDeletedAgain`), by its key, after the items'.
    mutating func deleteActivityAgain(_ key: String) -> [ExpectedMessage] {
        var out: [ExpectedMessage] = []
        removeActivity(key, into: &out)
        return out
    }

    /// The store journaled the popularity mode an ack announced: from then
    /// on an engagement of a voted entry is a report while the day's budget
    /// lasts, and views and impressions send nothing (`docs/SYNC.md`,
    /// "Private popularity"). The journaling write's sweep is `sweep(now:)`.
    mutating func learn(_ mode: PopularityMode) {
        privately = mode.privateSettings
    }

    /// The store journaled the cloud's answer to a reindex ask: it states
    /// its vote for each hash again, and asks on when there is more
    /// (`JournalEvent.votesReindexRequested`). The journaling write's sweep
    /// comes first. Nil for a hash no catalogue entry has.
    mutating func restate(_ request: CloudReindex, now: Timestamp, catalogue: Catalogue) -> [ExpectedMessage]? {
        var out: [ExpectedMessage] = []
        expire(now: now, into: &out)
        for hash in request.hashes {
            guard let entry = catalogue.number(of: hash) else { return nil }
            out.append(votes.contains(entry) ? .vote(entry) : .withdraw(entry))
        }
        if request.more && request.through > request.after { out.append(.reindexAsk) }
        return out
    }

    /// A write the store makes on its own (journaling the cloud's content
    /// requests) runs the same expiry sweep as a call.
    mutating func sweep(now: Timestamp) -> [ExpectedMessage] {
        var out: [ExpectedMessage] = []
        expire(now: now, into: &out)
        return out
    }

    private mutating func apply(_ operation: AppOperation, now: Timestamp, catalogue: Catalogue, into out: inout [ExpectedMessage]) {
        switch operation {
        case .index, .update, .delete, .deleteDomains, .deleteAll:
            let index = operation.indexName!
            let removed = ItemFold.apply(operation, to: &items[index, default: [:]])
            switch operation {
            case .index(_, let new):
                for item in new { noteExpiry(item.expirationDate) }
            case .update(_, let updates):
                for update in updates { noteExpiry(items[index]?[update.uniqueIdentifier]?.expirationDate) }
            default:
                break
            }
            for identifier in removed { itemGone(identifier, into: &out) }
        case .batch(let batch):
            for inner in batch.operations { apply(inner, now: now, catalogue: catalogue, into: &out) }
            clientStates[batch.index] = batch.clientState
        case .activity(let activity):
            let key = activity.key
            var emptied: Int?
            if let old = activities[key], let entry = old.entry, old.live { emptied = entry }
            // Public exactly when it has public content; the catalogue names its hash.
            let entry = PublicContent(activity)
                .flatMap { PublicHash.of(app: catalogue.app, content: $0) }
                .flatMap(catalogue.number(of:))
            activities[key] = Activity(entry: entry, url: activity.webpageURL, live: true, related: activity.relatedUniqueIdentifier,
                                       weaklyRelated: activity.weakRelatedUniqueIdentifier, domain: activity.domainIdentifier,
                                       expires: activity.expirationDate)
            noteExpiry(activity.expirationDate)
            if let entry {
                if emptied == entry { emptied = nil }
                if votes.contains(entry) && privately == nil { out.append(.view(entry)) }
            }
            if let emptied { withdrawIfVoted(emptied, into: &out) }
        case .deleteActivities(let identifiers):
            for identifier in identifiers { removeActivity(UserActivity.key(persistentIdentifier: identifier), into: &out) }
        case .deleteActivityDomains(let domains):
            for (key, activity) in activities.sorted(by: { $0.key < $1.key }) {
                guard let domain = activity.domain,
                      domains.contains(where: { domain == $0 || domain.hasPrefix($0 + ".") }) else { continue }
                removeActivity(key, into: &out)
            }
        case .deleteAllActivities:
            for key in activities.keys.sorted() { removeActivity(key, into: &out) }
        case .shown(let ref):
            for entry in liveEntries(ref: ref) where votes.contains(entry) && privately == nil { out.append(.shown(entry)) }
        case .engage(let ref):
            for entry in liveEntries(ref: ref) {
                if votes.insert(entry).inserted { out.append(.vote(entry)) }
                if let privately {
                    let day = now.daysSince1970
                    guard spent[day, default: 0] + privately.epsilonThousandths <= PrivacyBudget.dailyThousandths(privately) else { continue }
                    spent[day, default: 0] += privately.epsilonThousandths
                    out.append(.report(entry))
                } else {
                    out.append(.engaged(entry))
                }
            }
        case .advanceClock:
            break
        }
    }

    private mutating func noteExpiry(_ date: Timestamp?) {
        guard let date else { return }
        nextExpiry = min(nextExpiry ?? date, date)
    }

    /// The expiry sweep every call starts with.
    private mutating func expire(now: Timestamp, into out: inout [ExpectedMessage]) {
        guard let next = nextExpiry, next <= now else { return }
        // Every call runs this: only what has expired is sorted (into a fixed order).
        for index in items.keys.sorted() {
            let expired = items[index]!.filter { $0.value.expirationDate.map { $0 <= now } ?? false }.keys.sorted()
            for identifier in expired {
                items[index]!.removeValue(forKey: identifier)
                itemGone(identifier, into: &out)
            }
        }
        for key in activities.filter({ $0.value.expires.map { $0 <= now } ?? false }).keys.sorted() {
            removeActivity(key, into: &out)
        }
        nextExpiry = nil
        for index in items.values {
            for item in index.values { noteExpiry(item.expirationDate) }
        }
        for activity in activities.values { noteExpiry(activity.expires) }
    }

    /// After an item left an index: once no index holds its identifier, the
    /// activities strongly related to it stop being eligible.
    private mutating func itemGone(_ identifier: String, into out: inout [ExpectedMessage]) {
        guard !items.values.contains(where: { $0[identifier] != nil }) else { return }
        for (key, activity) in activities.sorted(by: { $0.key < $1.key }) where activity.related == identifier && activity.live {
            activities[key]!.live = false
            if let entry = activity.entry { withdrawIfVoted(entry, into: &out) }
        }
    }

    private mutating func removeActivity(_ key: String, into out: inout [ExpectedMessage]) {
        guard let activity = activities.removeValue(forKey: key) else { return }
        if let entry = activity.entry, activity.live { withdrawIfVoted(entry, into: &out) }
    }

    private mutating func withdrawIfVoted(_ entry: Int, into out: inout [ExpectedMessage]) {
        if votes.remove(entry) != nil { out.append(.withdraw(entry)) }
    }

    private func liveEntries(ref: String) -> [Int] {
        activities.values.compactMap { $0.live && $0.refers(to: ref) ? $0.entry : nil }.sorted()
    }

    /// Whether the device holds a live public activity of `entry` (and so answers content requests for it).
    func holdsLiveVote(_ entry: Int) -> Bool {
        votes.contains(entry)
    }

    /// A live public activity of `entry`, if the device has one.
    func hasLiveActivity(_ entry: Int) -> Bool {
        activities.values.contains { $0.entry == entry && $0.live }
    }

    /// The catalogue entries of the device's public activities, in order.
    var publicEntries: [Int] {
        Set(activities.values.compactMap { $0.entry }).sorted()
    }

    func itemIdentifiers(in index: String) -> [String] {
        (items[index] ?? [:]).keys.sorted()
    }
}

extension StoreModel {
    /// Whether the store may show `member` in search results at `now`: an item
    /// the app indexed and has not deleted, or an activity it recorded and has
    /// not deleted. (An item or activity that expired by `now` may linger here
    /// until the next call's sweep; the store leaves it out already.)
    func mayReturn(index: String, identifier: String) -> Bool {
        items[index]?[identifier] != nil
    }

    func mayReturn(activityKey: String) -> Bool {
        activities[activityKey] != nil
    }

    /// The key of the live, unexpired activity of catalogue `entry` that a
    /// search for its title must find, if the device holds one.
    func searchableActivity(of entry: Int, now: Timestamp) -> String? {
        activities.first { $0.value.entry == entry && $0.value.live && ($0.value.expires.map { $0 > now } ?? true) }?.key
    }
}
