import Crypto
import Foundation
import GRDB
import IndexModel
import SyncWire

/// Keyed digests of a purged activity's key, URL and engagement references
/// (`PurgedActivity.isPseudonym`), under a key derived from the store's vote
/// secret: a store and its backups name the same string the same way, and
/// no one without the secret can check a guess against a pseudonym.
///
/// The HMAC is keyed once and copied for each string (its state is copied
/// on write), which saves hashing the key's pads again for each.
struct Pseudonyms {
    private let keyed: HMAC<SHA256>

    init(voteSecret: [UInt8]) {
        let derived = HMAC<SHA256>.authenticationCode(for: Array("sightline purged activity pseudonyms".utf8),
                                                      using: SymmetricKey(data: voteSecret))
        keyed = HMAC<SHA256>(key: SymmetricKey(data: Data(derived)))
    }

    func callAsFunction(_ text: String) -> String {
        var hmac = keyed
        hmac.update(data: Array(text.utf8))
        return PurgedActivity.pseudonym(digest: hmac.finalize())
    }
}

/// What a purge leaves of one row.
enum PurgeResidue {
    /// An item's indexing or update: `JournalEvent.purgedResidue`.
    case item
    /// An activity's recording.
    case activity(PurgedActivity)
    /// An activity's deletion or expiry, under its key's pseudonym.
    case removal(key: String)
    /// A `shown` or `engage` event, under its reference's pseudonym.
    case reference(String)

    func of(_ event: JournalEvent) -> JournalEvent? {
        switch (self, event) {
        case (.item, _): event.purgedResidue
        case (.activity(let residue), .activityRecorded): .activityPurged(residue)
        case (.removal(let key), .activityDeleted(_, let cause)): .activityDeleted(key: key, cause: cause)
        case (.removal(let key), .activityExpired): .activityExpired(key: key)
        case (.reference(let ref), .resultShown): .resultShown(ref: ref)
        case (.reference(let ref), .resultEngaged): .resultEngaged(ref: ref)
        default: nil
        }
    }
}

/// What a purge takes (`DeviceStore.purge`), worked out in one pass over the
/// journal's item, activity and engagement rows in seq order.
///
/// An item's content goes once a backup covers its deletion. An activity's
/// goes once a backup covers its removal and, when any of its recordings
/// was public, once the durable watermark has passed every message made
/// before the removal (the cloud's backup holds them, the withdrawal
/// included). Its recordings keep the public hash and the identifiers it
/// was related to, its key and URL become pseudonyms, and so does every
/// engagement event up to the removal naming the URL, when nothing the
/// purge keeps names that URL in the clear. (An engagement event after the
/// removal is something the app said of the URL afterwards, and stays.) A
/// public activity whose URL something kept names waits: engagement with
/// the URL stays in the clear, and a replay must find the activity by it to
/// make the same votes.
struct PurgePlan {
    let backedUpThrough: Seq
    let deletedBy: Timestamp?
    /// The earliest event some message of which the cloud's backup may not
    /// hold yet (it is after the durable watermark); nil when there is none.
    let cloudHoldsBefore: Seq?
    let app: AppID

    private(set) var purgedItems: [(Seq, ItemKey)] = []
    private(set) var waitingItems = Set<ItemKey>()
    private(set) var waitingForDelay = Set<ItemKey>()
    private(set) var earliestWaiting: Int64?
    private(set) var purgedActivities = Set<String>()
    /// The engagement events purged, per reference: how many `shown` and how many `engage`.
    private(set) var purgedReferences: [String: (shown: Int, engaged: Int)] = [:]
    /// Each removal whose content stays, in seq order (an activity deleted
    /// twice may wait twice).
    private(set) var activitiesWaiting: [ActivityWait] = []

    /// Each item's rows that still hold content, since its last deletion.
    private var pendingItems: [ItemKey: [Seq]] = [:]

    /// One recording of an activity, as much as a purge needs of it.
    private struct Recording {
        var seq: Seq
        var webpageURL: String?
        var related: String?
        var weakRelated: String?
        var publicHash: PublicHash?

        /// Its URL, when the residue keeps it as a pseudonym (it is not also a related identifier).
        var hiddenURL: String? {
            webpageURL.flatMap { $0 == related || $0 == weakRelated ? nil : $0 }
        }
    }

    /// A removal the backup (and the cloud) covers, with the recordings since the one before.
    private struct Removal {
        var seq: Seq
        var key: String
        var recordings: [Recording]
        var isPublic: Bool { recordings.contains { $0.publicHash != nil } }
    }

    private var pendingActivities: [String: [Recording]] = [:]
    private var removals: [Removal] = []
    /// References that rows the purge keeps name in the clear.
    private var kept = Set<String>()
    /// Engagement events still in the clear: seq, reference, and whether an engagement (or an impression).
    private var engagements: [(seq: Seq, ref: String, engaged: Bool)] = []

    init(backedUpThrough: Seq, deletedBy: Timestamp?, cloudHoldsBefore: Seq?, app: AppID) {
        self.backedUpThrough = backedUpThrough
        self.deletedBy = deletedBy
        self.cloudHoldsBefore = cloudHoldsBefore
        self.app = app
    }

    mutating func read(_ event: JournalEvent, seq: Seq, time: Int64, isPurged: Bool) {
        let due = deletedBy.map { time <= $0.millisecondsSince1970 } ?? true
        switch event {
        case .activityRecorded(let activity):
            guard !isPurged else { return }
            let hash = PublicContent(activity).flatMap { PublicHash.of(app: app, content: $0) }
            pendingActivities[activity.key, default: []].append(Recording(
                seq: seq, webpageURL: activity.webpageURL, related: activity.relatedUniqueIdentifier,
                weakRelated: activity.weakRelatedUniqueIdentifier, publicHash: hash))
        case .activityPurged(let residue):
            keep([residue.relatedUniqueIdentifier, residue.weakRelatedUniqueIdentifier])
        case .activityDeleted(let key, _), .activityExpired(let key):
            // A removal under a pseudonym is a purge's, or a restore's of a residue: nothing to hide.
            guard !isPurged, !PurgedActivity.isPseudonym(key) else { return }
            let removal = Removal(seq: seq, key: key, recordings: pendingActivities.removeValue(forKey: key) ?? [])
            let reason: ActivityWait.Reason?
            if seq > backedUpThrough {
                reason = .backup
            } else if !due {
                reason = .delay
                earliestWaiting = min(earliestWaiting ?? time, time)
            } else if removal.isPublic, let cloudHoldsBefore, seq >= cloudHoldsBefore {
                reason = .cloud
            } else {
                reason = nil
            }
            if let reason {
                keep(removal.recordings)
                activitiesWaiting.append(ActivityWait(key: key, reason: reason))
            } else {
                removals.append(removal)
            }
        case .resultShown(let ref):
            if !isPurged { engagements.append((seq, ref, false)) }
        case .resultEngaged(let ref):
            if !isPurged { engagements.append((seq, ref, true)) }
        default:
            readItem(event, seq: seq, time: time, isPurged: isPurged, due: due)
        }
    }

    private mutating func readItem(_ event: JournalEvent, seq: Seq, time: Int64, isPurged: Bool, due: Bool) {
        guard let key = event.itemKey else { return }
        if event.removesItem {
            guard let contents = pendingItems.removeValue(forKey: key) else { return }
            if seq <= backedUpThrough && due {
                purgedItems += contents.map { ($0, key) }
                waitingItems.remove(key)
                waitingForDelay.remove(key)
            } else {
                pendingItems[key] = contents
                if seq <= backedUpThrough {
                    waitingForDelay.insert(key)
                    earliestWaiting = min(earliestWaiting ?? time, time)
                } else {
                    waitingItems.insert(key)
                }
            }
        } else if !isPurged {
            pendingItems[key, default: []].append(seq)
        }
    }

    private mutating func keep(_ references: [String?]) {
        for case let reference? in references { kept.insert(reference) }
    }

    private mutating func keep(_ recordings: [Recording]) {
        for recording in recordings { keep([recording.webpageURL, recording.related, recording.weakRelated]) }
    }

    /// After the last row: the residue of each row to purge, by seq.
    mutating func finish(_ db: Database, pseudonyms: Pseudonyms) throws -> [Seq: PurgeResidue] {
        var residues: [Seq: PurgeResidue] = [:]
        for (seq, _) in purgedItems { residues[seq] = .item }
        // Live activities, and what the residues keep in the clear.
        for recordings in pendingActivities.values { keep(recordings) }
        for removal in removals {
            for recording in removal.recordings { keep([recording.related, recording.weakRelated]) }
        }
        var itemIdentifiers: [String: Bool] = [:]
        var itemExists: Statement?
        func isItem(_ identifier: String) throws -> Bool {
            if let known = itemIdentifiers[identifier] { return known }
            let statement = try itemExists ?? db.makeStatement(sql: "SELECT EXISTS (SELECT 1 FROM items WHERE item_id = ?)")
            itemExists = statement
            let found = try Bool.fetchOne(statement, arguments: [identifier]) ?? false
            itemIdentifiers[identifier] = found
            return found
        }
        // A public activity whose hidden URL stays named elsewhere waits; what
        // it names then stays too, which may hold back another.
        var purging = removals
        var changed = true
        while changed {
            changed = false
            var next: [Removal] = []
            for removal in purging {
                let shared = try removal.isPublic && removal.recordings.contains { recording in
                    guard let url = recording.hiddenURL else { return false }
                    return try kept.contains(url) || isItem(url)
                }
                if shared {
                    keep(removal.recordings)
                    activitiesWaiting.append(ActivityWait(key: removal.key, reason: .sharedURL))
                    changed = true
                } else {
                    next.append(removal)
                }
            }
            purging = next
        }
        // Each hidden URL, with the last removal of an activity that had it.
        var hiddenURLs: [String: Seq] = [:]
        for removal in purging {
            let key = pseudonyms(removal.key)
            for recording in removal.recordings {
                residues[recording.seq] = .activity(PurgedActivity(
                    key: key, publicHash: recording.publicHash?.bytes, webpageURL: recording.hiddenURL.map { pseudonyms($0) },
                    relatedUniqueIdentifier: recording.related, weakRelatedUniqueIdentifier: recording.weakRelated))
                if let url = recording.hiddenURL { hiddenURLs[url] = max(hiddenURLs[url] ?? removal.seq, removal.seq) }
            }
            residues[removal.seq] = .removal(key: key)
            purgedActivities.insert(removal.key)
        }
        // Engagement with a hidden URL up to its removal goes too, unless something kept names it.
        var verdicts: [String: String?] = [:]
        for engagement in engagements {
            guard let removed = hiddenURLs[engagement.ref], engagement.seq <= removed else { continue }
            let pseudonym: String?
            if let known = verdicts[engagement.ref] {
                pseudonym = known
            } else {
                pseudonym = try !kept.contains(engagement.ref) && !isItem(engagement.ref) ? pseudonyms(engagement.ref) : nil
                verdicts[engagement.ref] = pseudonym
            }
            guard let pseudonym else { continue }
            residues[engagement.seq] = .reference(pseudonym)
            var counts = purgedReferences[engagement.ref] ?? (0, 0)
            if engagement.engaged { counts.engaged += 1 } else { counts.shown += 1 }
            purgedReferences[engagement.ref] = counts
        }
        return residues
    }
}
