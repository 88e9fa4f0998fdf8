import Crypto
import Foundation
import GRDB
import IndexModel
import LocalPrivacy
import SQLiteSupport
import SyncWire

/// The privacy projection: the fold from journal events to the outbox, the only
/// thing a device ever sends the cloud (`docs/SYNC.md`).
///
/// - Items never produce a message, nor do activities that are not public
///   (`PublicContent.init?(_:)`): no field, no count, no hash.
/// - The first engagement with a public activity sends a *vote* for its public
///   hash with this device's token. The vote is *live* while some public,
///   eligible activity of that hash remains on the device.
/// - While a vote is live, each view, impression and engagement of the hash
///   sends a *signal* (deltas). Before the first engagement nothing about the
///   activity leaves.
/// - A *withdraw* follows when the last activity of a voted hash is deleted,
///   expires, turns private or loses its strongly related item. A later
///   engagement votes again, with the same token, so the cloud's count of
///   distinct devices does not grow.
/// - A journaled content request is answered with the public fields of the
///   hash's most recently recorded activity, if the device holds a live vote.
/// - When the app's popularity is private (a journaled
///   `popularityModeLearned` said `ldp`), no signal leaves: each engagement
///   of a voted hash sends a randomised *report* instead, while the day's
///   privacy budget has room (`PrivacyBudget`), and views and impressions
///   send nothing.
///
/// Like the other projections it reads only events and projections, never the
/// clock, so `rebuildProjections()` makes the same outbox with the same
/// positions. `before` and `after` run behind the other projections' fold of
/// an event (`JournalFold`): `before` reads only this projection's tables,
/// which no other projection writes.
///
/// The tables keep counts so that each event costs a few key lookups however
/// many activities share a hash or a reference:
/// - `public_activities`: each public activity's hash, references and whether
///   it is eligible (`live`);
/// - `public_hashes`: per hash, how many live activities it has;
/// - `public_refs`: per (reference, hash), how many activities carry it;
/// - `public_votes`: the hashes with a live vote.
final class PrivacyProjection {
    /// What makes a device's messages its own: the app salts public hashes and
    /// the vote secret keys vote tokens.
    struct Keys: Sendable {
        let app: AppID
        let voteSecret: [UInt8]
    }

    /// A public activity as `public_activities` holds it.
    struct PublicActivity {
        var hash: PublicHash
        var refs: [String]
        var isLive: Bool
    }

    /// What `before` saw, for `after`.
    enum Prior {
        case nothing
        /// The activity's public row before the event (nil when it had none).
        case activity(key: String, PublicActivity?)
        /// Live public activities strongly related to a deleted item.
        case related([String])
    }

    private let db: Database
    private let keys: Keys
    private var head: OutboxPosition?
    /// Messages this fold appended to the outbox, each after `outboxHead`'s predecessor.
    private(set) var messagesSent = 0
    /// Whether this fold moved outbox messages to another epoch.
    private(set) var movedEpoch = false
    /// The last message in the outbox, once this fold knows it: it was
    /// given, or the fold has written or moved one.
    var outboxHead: OutboxPosition? { head }
    private let statements: StatementSlots
    /// The popularity mode, once this fold has read or changed it.
    private var mode: PopularityMode?

    /// `statements` must be slots of `db`'s connection (see `Projector.init`).
    /// `head`, when known, is the outbox's last message in `db` now.
    init(db: Database, keys: Keys, statements: StatementSlots = StatementSlots(count: PrivacyProjection.statementCount),
         head: OutboxPosition? = nil) {
        self.db = db
        self.keys = keys
        self.statements = statements
        self.head = head
    }

    /// Before `event` is folded into this projection: the public state the
    /// event is about to change. `activityKeyIsNew` says that the other
    /// projections' fold recorded the event's activity under a key the
    /// activities table did not hold; this projection holds a public activity
    /// only under a key that table holds, so there is none to read.
    func before(_ event: JournalEvent, activityKeyIsNew: Bool) throws -> Prior {
        switch event {
        case .activityRecorded(let activity):
            return .activity(key: activity.key, activityKeyIsNew ? nil : try publicActivity(key: activity.key))
        case .activityPurged(let residue):
            return .activity(key: residue.key, activityKeyIsNew ? nil : try publicActivity(key: residue.key))
        case .activityDeleted(let key, _), .activityExpired(let key):
            return .activity(key: key, try publicActivity(key: key))
        case .itemDeleted(_, let identifier, _), .itemExpired(_, let identifier):
            let statement = try prepared(.liveRelated)
            defer { statement.reset() }
            statement.bind(1, identifier)
            var keys: [String] = []
            while try statement.step() { keys.append(statement.text(0) ?? "") }
            return keys.isEmpty ? .nothing : .related(keys)
        default:
            return .nothing
        }
    }

    /// After `event` (journal position `epoch`/`seq`, at `time`) is folded: the messages it implies.
    func after(_ event: JournalEvent, prior: Prior, epoch: Epoch, seq: Seq, time: Timestamp) throws {
        var emptied: [PublicHash] = []
        switch (event, prior) {
        case (.activityRecorded(let activity), .activity(let key, let old)):
            if let old, try remove(key: key, old) { emptied.append(old.hash) }
            if let content = PublicContent(activity), let hash = PublicHash.of(app: keys.app, content: content) {
                try recordPublic(key: key, hash: hash, refs: activity.engagementRefs, related: activity.relatedUniqueIdentifier,
                                 emptied: &emptied, epoch: epoch, seq: seq)
            }
        case (.activityPurged(let residue), .activity(let key, let old)):
            // The residue keeps the public hash, and the references as the
            // engagement events a purge left them name them.
            if let old, try remove(key: key, old) { emptied.append(old.hash) }
            if let hash = residue.publicHash.flatMap(PublicHash.init) {
                try recordPublic(key: key, hash: hash, refs: residue.refs, related: residue.relatedUniqueIdentifier,
                                 emptied: &emptied, epoch: epoch, seq: seq)
            }
        case (.activityDeleted, .activity(let key, let old?)), (.activityExpired, .activity(let key, let old?)):
            if try remove(key: key, old) { emptied.append(old.hash) }
        case (.itemDeleted, .related(let keys)), (.itemExpired, .related(let keys)):
            // The fold marked the strongly related activities ineligible once no
            // item of the identifier remained; those lose their live count.
            for key in keys where try isRelatedDeleted(key: key) {
                guard let row = try publicActivity(key: key), row.isLive else { continue }
                let statement = try prepared(.markNotLive)
                statement.bind(1, key)
                try statement.execute()
                if try uncountLive(row.hash) { emptied.append(row.hash) }
            }
        case (.resultShown(let ref), _):
            for (hash, voted) in try liveHashes(ref: ref) where voted {
                try signal(hash, Popularity(shown: 1), epoch: epoch, seq: seq)
            }
        case (.resultEngaged(let ref), _):
            for (hash, voted) in try liveHashes(ref: ref) {
                if !voted {
                    let statement = try prepared(.insertVote)
                    statement.bind(1, hash.bytes)
                    try statement.execute()
                    try send(.vote(hash, VoteToken(secret: keys.voteSecret, hash: hash)), epoch: epoch, seq: seq)
                }
                if let settings = try popularityMode().privateSettings {
                    try report(hash, settings, epoch: epoch, seq: seq, time: time)
                } else {
                    try send(.signal(hash, Popularity(engaged: 1)), epoch: epoch, seq: seq)
                }
            }
        case (.publicContentRequested(let requested), _):
            for hash in requested.compactMap(PublicHash.init) where try hasVote(hash) {
                switch try currentContent(hash) {
                case .none: continue
                case .content(let content): try send(.content(hash, content), epoch: epoch, seq: seq)
                case .purged: try send(.contentWithheld(hash), epoch: epoch, seq: seq)
                }
            }
        case (.cloudReindexAsked(let askedEpoch, let askedSeq), _):
            try send(.reindexAsk(after: OutboxPosition(epoch: askedEpoch, seq: askedSeq)), epoch: epoch, seq: seq)
        case (.votesReindexRequested(let request), _):
            try answer(request, epoch: epoch, seq: seq)
        case (.epochAdvanced(let from, let to, let kept), _):
            try moveEpoch(from: from, to: to, kept: kept)
        case (.popularityModeLearned(let learned), _):
            if learned != .exact {
                let write = try prepared(.writeMode)
                write.bind(1, learned.encoded)
                try write.execute()
            } else {
                try prepared(.clearMode).execute()
            }
            mode = learned
        default:
            break
        }
        for hash in Set(emptied).sorted() where try hasVote(hash) {
            let statement = try prepared(.deleteVote)
            statement.bind(1, hash.bytes)
            try statement.execute()
            try send(.withdraw(hash, VoteToken(secret: keys.voteSecret, hash: hash)), epoch: epoch, seq: seq)
        }
    }

    /// States this device's vote again for each hash of a reindex request:
    /// a vote when it holds a live one, else a withdrawal (the cloud may hold
    /// a vote of its that the device no longer knows it cast). With more to
    /// read, asks again after where the cloud stopped.
    private func answer(_ request: VoteReindexRequest, epoch: Epoch, seq: Seq) throws {
        for hash in request.hashes.compactMap(PublicHash.init) {
            let token = VoteToken(secret: keys.voteSecret, hash: hash)
            try send(try hasVote(hash) ? .vote(hash, token) : .withdraw(hash, token), epoch: epoch, seq: seq)
        }
        let after = OutboxPosition(epoch: request.afterEpoch, seq: request.afterSeq)
        let through = OutboxPosition(epoch: request.throughEpoch, seq: request.throughSeq)
        if request.more && through > after {
            try send(.reindexAsk(after: through), epoch: epoch, seq: seq)
        }
    }

    // MARK: - Public activities

    /// A public activity recorded under `key`: its row and counts, and a view
    /// signal when its hash holds a live vote.
    private func recordPublic(key: String, hash: PublicHash, refs: [String], related: String?, emptied: inout [PublicHash],
                              epoch: Epoch, seq: Seq) throws {
        try insert(key: key, PublicActivity(hash: hash, refs: refs, isLive: true), related: related)
        emptied.removeAll { $0 == hash }
        if try hasVote(hash) {
            try signal(hash, Popularity(views: 1), epoch: epoch, seq: seq)
        }
    }

    private func publicActivity(key: String) throws -> PublicActivity? {
        let statement = try prepared(.loadActivity)
        defer { statement.reset() }
        statement.bind(1, key)
        guard try statement.step(), let hash = PublicHash(statement.blob(0)) else { return nil }
        let refs = (statement.text(1) ?? "").split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        return PublicActivity(hash: hash, refs: refs.filter { !$0.isEmpty }, isLive: statement.int64(2) != 0)
    }

    private func insert(key: String, _ row: PublicActivity, related: String?) throws {
        let statement = try prepared(.insertActivity)
        statement.bind(1, key)
        statement.bind(2, row.hash.bytes)
        statement.bind(3, row.refs.joined(separator: "\n"))
        statement.bind(4, related)
        do {
            try statement.execute()
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
            // Only an edit leaves a public row whose key the activities table lacks (`before`).
            throw DeviceStoreError(.corruptStore, "public_activities holds activity \(key), which the activities table did not:"
                                   + " the projections were edited (journal verify compares them with a replay)")
        }
        for ref in row.refs {
            let upsert = try prepared(.countRef)
            upsert.bind(1, ref)
            upsert.bind(2, row.hash.bytes)
            try upsert.execute()
        }
        try countLive(row.hash)
    }

    /// Takes a public activity's row and its counts out; true when that left its
    /// hash with no live activity.
    private func remove(key: String, _ row: PublicActivity) throws -> Bool {
        let delete = try prepared(.deleteActivity)
        delete.bind(1, key)
        try delete.execute()
        for ref in row.refs {
            let uncount = try prepared(.uncountRef)
            uncount.bind(1, ref)
            uncount.bind(2, row.hash.bytes)
            try uncount.execute()
            let drop = try prepared(.dropEmptyRef)
            drop.bind(1, ref)
            drop.bind(2, row.hash.bytes)
            try drop.execute()
        }
        guard row.isLive else { return false }
        return try uncountLive(row.hash)
    }

    /// Counts one more live activity of `hash`. Nothing is read back: a
    /// count never stays below one (`uncountLive` drops the row at zero), so
    /// one more cannot empty the hash.
    private func countLive(_ hash: PublicHash) throws {
        try addLive(1, to: hash)
    }

    /// Counts one live activity of `hash` less; true when that left it none,
    /// which takes the hash out of the table.
    private func uncountLive(_ hash: PublicHash) throws -> Bool {
        try addLive(-1, to: hash)
        let read = try prepared(.readLive)
        read.bind(1, hash.bytes)
        guard try read.step() else {
            read.reset()
            throw DeviceStoreError(.database, "public hash \(hash) has no live count")
        }
        let count = read.int64(0)
        read.reset()
        guard count <= 0 else { return false }
        let drop = try prepared(.dropHash)
        drop.bind(1, hash.bytes)
        try drop.execute()
        return true
    }

    private func addLive(_ delta: Int64, to hash: PublicHash) throws {
        let change = try prepared(.changeLive)
        change.bind(1, hash.bytes)
        change.bind(2, delta)
        try change.execute()
    }

    private func isRelatedDeleted(key: String) throws -> Bool {
        let statement = try prepared(.relatedDeleted)
        defer { statement.reset() }
        statement.bind(1, key)
        return try statement.step() && statement.int64(0) != 0
    }

    /// The hashes that `ref` names and that have a live activity, in byte
    /// order, each with whether it has a live vote: one query, since a shown
    /// or engaged result asks both of every hash, and a reference is often
    /// shared by several.
    private func liveHashes(ref: String) throws -> [(hash: PublicHash, voted: Bool)] {
        let statement = try prepared(.liveHashesForRef)
        defer { statement.reset() }
        statement.bind(1, ref)
        var found: [(hash: PublicHash, voted: Bool)] = []
        while try statement.step() {
            if let hash = PublicHash(statement.blob(0)) { found.append((hash, statement.int64(1) != 0)) }
        }
        return found
    }

    private func hasVote(_ hash: PublicHash) throws -> Bool {
        let statement = try prepared(.hasVote)
        defer { statement.reset() }
        statement.bind(1, hash.bytes)
        return try statement.step()
    }

    /// What a content request is answered with from a live activity.
    private enum CurrentContent {
        case content(PublicContent)
        /// The activity was purged since: its row is a residue's, with no payload.
        case purged
    }

    /// The public content of the most recently recorded live activity of
    /// `hash`, nil when none has any.
    private func currentContent(_ hash: PublicHash) throws -> CurrentContent? {
        let statement = try prepared(.latestPayload)
        defer { statement.reset() }
        statement.bind(1, hash.bytes)
        guard try statement.step() else { return nil }
        let payload = statement.blob(0)
        if payload.isEmpty { return .purged }
        return PublicContent(try EventCodec.decodeActivity(payload)).map(CurrentContent.content)
    }

    // MARK: - Popularity

    /// The popularity mode the store learned last (exact until one was).
    func popularityMode() throws -> PopularityMode {
        if let mode { return mode }
        let read = try prepared(.readMode)
        defer { read.reset() }
        let learned: PopularityMode
        if try read.step() {
            do {
                learned = try PopularityMode.decode(read.blob(0))
            } catch {
                throw DeviceStoreError(.corruptStore, "popularity_mode.mode is not a popularity mode: \(error)")
            }
        } else {
            learned = .exact
        }
        mode = learned
        return learned
    }

    /// Sends `counts` for a voted hash, when the app's popularity is exact.
    private func signal(_ hash: PublicHash, _ counts: Popularity, epoch: Epoch, seq: Seq) throws {
        guard try popularityMode() == .exact else { return }
        try send(.signal(hash, counts), epoch: epoch, seq: seq)
    }

    /// Sends a randomised report of an engagement of `hash` at `time`, when
    /// the day's budget has room for its ε (`PrivacyBudget`), and spends it.
    /// Its coins come from the vote secret and the report's outbox position
    /// (`PrivacyBudget.coins`), so a rebuild makes the same report, and no
    /// two reports share coins.
    private func report(_ hash: PublicHash, _ settings: PrivatePopularity, epoch: Epoch, seq: Seq, time: Timestamp) throws {
        let day = time.daysSince1970
        let read = try prepared(.readBudget)
        let spent: Int64 = try {
            defer { read.reset() }
            read.bind(1, day)
            return try read.step() ? read.int64(0) : 0
        }()
        // Compared without adding to `spent`, which an edited store may hold near Int64.max.
        guard spent <= Int64(PrivacyBudget.dailyThousandths(settings) - settings.epsilonThousandths) else { return }
        let position = try nextPosition(epoch: epoch)
        let random = SeededRandom(seed: PrivacyBudget.coins(secret: keys.voteSecret, at: position))
        guard case .hadamard(let function, let row, let positive) = CountMeanSketch.report(hash.bytes, parameters: settings.sketch,
                                                                                           random: random) else {
            throw DeviceStoreError(.database, "the Hadamard sketch made a report of another kind")
        }
        try send(.report(PrivateReport(settings: settings, function: function, row: row, positive: positive)), epoch: epoch, seq: seq)
        let spend = try prepared(.spendBudget)
        spend.bind(1, day)
        spend.bind(2, Int64(settings.epsilonThousandths))
        try spend.execute()
    }

    // MARK: - The outbox

    /// Where `send` puts the next message of `epoch`.
    private func nextPosition(epoch: Epoch) throws -> OutboxPosition {
        let current = try head ?? OutboxStore.head(prepared(.head))
        return current.epoch == epoch ? current.nextInEpoch : OutboxPosition(epoch: epoch, seq: .first)
    }

    /// Appends `message` at the next outbox position of `epoch`: seqs are dense
    /// from 1 in each epoch and say nothing about how many private events passed.
    private func send(_ message: OutboxMessage, epoch: Epoch, seq: Seq) throws {
        let position = try nextPosition(epoch: epoch)
        let insert = try prepared(.insertMessage)
        insert.bind(1, position.epoch)
        insert.bind(2, position.seq)
        insert.bind(3, Int64(seq.rawValue))
        insert.bind(4, message.encoded)
        try insert.execute()
        head = position
        messagesSent += 1
    }

    /// The messages of epoch `from` after seq `kept`, which the cloud does
    /// not hold, move to `to`, numbered from 1 (`JournalEvent.epochAdvanced`).
    private func moveEpoch(from: Epoch, to: Epoch, kept: OutboxSeq) throws {
        let statement = try prepared(.moveEpoch)
        statement.bind(1, to)
        statement.bind(2, kept)
        statement.bind(3, from)
        try statement.execute()
        movedEpoch = true
        if let current = head, current.epoch == from {
            head = OutboxPosition(epoch: to, seq: current.seq.renumbered(after: kept))
        }
    }

    // MARK: - Statements

    /// A statement of every call's path is kept for the connection's life; one
    /// of a rarer event is compiled for each use (`SQL.isKept`), except where
    /// the slots keep those too (`StatementSlots.keepsRare`: a one-off fold,
    /// a pooled connection).
    private func prepared(_ sql: SQL) throws -> DirectStatement {
        guard sql.isKept || statements.keepsRare else { return try DirectStatement(owned: db, sql.text) }
        return try statements.statement(sql.rawValue, db, sql.text)
    }

    static var statementCount: Int { SQL.allCases.count }

    private enum SQL: Int, CaseIterable {
        case loadActivity, insertActivity, deleteActivity, liveRelated, relatedDeleted, markNotLive
        case countRef, uncountRef, dropEmptyRef, changeLive, readLive, dropHash, liveHashesForRef
        case hasVote, insertVote, deleteVote, latestPayload, insertMessage, moveEpoch, head
        case readMode, writeMode, clearMode, readBudget, spendBudget

        /// Whether the connection keeps the statement. The statements of rarer
        /// events (an item's deletion reaching related activities, a
        /// withdrawal, a content request, a new epoch or popularity mode) are
        /// compiled when used, about 10 µs each: kept, each would cost every
        /// connection 1 to 2 KiB for its life, and a simulation keeps
        /// thousands of connections.
        var isKept: Bool {
            switch self {
            case .relatedDeleted, .markNotLive, .deleteVote, .latestPayload, .moveEpoch, .writeMode, .clearMode: false
            default: true
            }
        }

        var text: String {
            switch self {
            case .loadActivity:
                "SELECT hash, refs, live FROM public_activities WHERE activity_key = ?"
            case .insertActivity:
                "INSERT INTO public_activities (activity_key, hash, refs, related, live) VALUES (?, ?, ?, ?, 1)"
            case .deleteActivity:
                "DELETE FROM public_activities WHERE activity_key = ?"
            case .liveRelated:
                "SELECT activity_key FROM public_activities WHERE related = ? AND live = 1 ORDER BY activity_key"
            case .relatedDeleted:
                "SELECT related_deleted FROM activities WHERE activity_key = ?"
            case .markNotLive:
                "UPDATE public_activities SET live = 0 WHERE activity_key = ?"
            case .countRef:
                """
                INSERT INTO public_refs (ref, hash, activities) VALUES (?, ?, 1)
                ON CONFLICT (ref, hash) DO UPDATE SET activities = activities + 1
                """
            case .uncountRef:
                "UPDATE public_refs SET activities = activities - 1 WHERE ref = ? AND hash = ?"
            case .dropEmptyRef:
                "DELETE FROM public_refs WHERE ref = ? AND hash = ? AND activities <= 0"
            // Not one upsert with RETURNING: SQLite gathers returned rows in a
            // table of their own, whose page cache it allocates and frees on
            // every step.
            case .changeLive:
                """
                INSERT INTO public_hashes (hash, live) VALUES (?1, ?2)
                ON CONFLICT (hash) DO UPDATE SET live = live + ?2
                """
            case .readLive:
                "SELECT live FROM public_hashes WHERE hash = ?"
            case .dropHash:
                "DELETE FROM public_hashes WHERE hash = ?"
            case .liveHashesForRef:
                """
                SELECT r.hash, EXISTS (SELECT 1 FROM public_votes v WHERE v.hash = r.hash)
                FROM public_refs r JOIN public_hashes h ON h.hash = r.hash WHERE r.ref = ? ORDER BY r.hash
                """
            case .hasVote:
                "SELECT 1 FROM public_votes WHERE hash = ?"
            case .insertVote:
                "INSERT INTO public_votes (hash) VALUES (?)"
            case .deleteVote:
                "DELETE FROM public_votes WHERE hash = ?"
            case .latestPayload:
                """
                SELECT a.payload FROM public_activities p JOIN activities a ON a.activity_key = p.activity_key
                WHERE p.hash = ? AND p.live = 1 ORDER BY a.changed_seq DESC LIMIT 1
                """
            case .insertMessage:
                "INSERT INTO outbox (epoch, seq, journal_seq, message) VALUES (?, ?, ?, ?)"
            case .moveEpoch:
                "UPDATE outbox SET epoch = ?1, seq = seq - ?2 WHERE epoch = ?3 AND seq > ?2"
            case .head:
                OutboxStore.headSQL
            case .readMode:
                "SELECT mode FROM popularity_mode WHERE id = 1"
            case .writeMode:
                "INSERT INTO popularity_mode (id, mode) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET mode = excluded.mode"
            case .clearMode:
                "DELETE FROM popularity_mode"
            case .readBudget:
                "SELECT spent FROM privacy_budget WHERE day = ?"
            case .spendBudget:
                """
                INSERT INTO privacy_budget (day, spent) VALUES (?1, ?2)
                ON CONFLICT (day) DO UPDATE SET spent = spent + ?2
                """
            }
        }
    }
}
