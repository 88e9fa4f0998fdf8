import Foundation
import GRDB
import IndexModel
import SQLiteSupport
import SyncWire

/// A message the cloud refuses although its frame is well formed and signed:
/// the whole frame is refused and nothing of it is kept.
struct Refusal: Error {
    let message: String
}

/// The fold from accepted outbox messages to the cloud's projections. Ingest and
/// `rebuildProjections()` both call `apply`, and nothing else writes the
/// projections, so a rebuild from the cloud log equals the incremental state.
///
/// Per (app, public hash), under the hash's *key* (`CloudIndex.key`, a keyed
/// hash: the raw hash is stored only while it has at least K live votes):
/// - a *vote* counts once per device: under the cloud's pseudonym for the
///   device and hash (`CloudIndex.voter`), with the token the device sent, which
///   must stay the same;
/// - a *withdraw* makes that vote not live;
/// - *signals* add to views, shown and engaged;
/// - *content* must hash to the hash it claims; a live voter's content is its
///   offer while the hash is wanted (other content is ignored), and
///   content that K live voters offered byte for byte becomes public
///   (`ContentRule`).
///
/// When live votes reach K without content, the hash is *wanted*: its raw hash
/// is kept, it gets the next wanted seq, and acks ask its live voters for its
/// content until content is agreed. Below K the raw hash, the content and the
/// offers are dropped: only counts under keyed hashes remain.
struct CloudFold {
    let db: Database
    /// The statements kept for `db` (`CloudStatement`).
    let statements: StatementSlots
    let threshold: Int
    /// How many live voters must offer the same content (`ContentRule`).
    let agreement: Int
    let voter: (DeviceID, PublicHash) -> [UInt8]
    let key: (AppID, PublicHash) -> [UInt8]
    let contentDigest: (AppID, PublicContent) -> [UInt8]

    /// Folds one frame's messages, accepted at `receivedAt`, with `memory`
    /// (`IngestMemory`'s on ingest; one for a whole replay). Signals only
    /// add to counts that nothing else in the fold reads, so they are summed
    /// per hash and written once at the end of the frame; everything else is
    /// applied in order. The device's allowances are written when `memory`
    /// is flushed: the caller flushes it before its transaction commits.
    func apply(_ messages: ArraySlice<OutboxMessage>, device: DeviceID, app: AppID, logSeq: Int64, receivedAt: Timestamp,
               memory: FoldMemory) throws {
        var signals: [PublicHash: Popularity] = [:]
        // The device's entries, taken out of the memory while the frame is
        // folded (so that changing them copies nothing) and put back after.
        var known = memory.devices.removeValue(forKey: device) ?? [:]
        defer { memory.devices[device] = known }
        for message in messages {
            let hash = message.hash
            let state: FoldMemory.Entry
            if let remembered = known[hash] {
                state = remembered
            } else {
                state = FoldMemory.Entry(app: app, key: Data(self.key(app, hash)), voter: voter(device, hash))
                known[hash] = state
                memory.count += 1
            }
            let key = state.key
            switch message {
            case .vote(_, let token):
                if state.vote == nil {
                    // Insert first: on a first vote (every vote of a replay
                    // from scratch) the row's absence needs no read.
                    let insert = try statements.statement(.insertVote, db)
                    insert.bind(1, app)
                    insert.bind(2, key)
                    insert.bind(3, state.voter)
                    insert.bind(4, token.bytes)
                    try insert.execute()
                    if insert.changes > 0 {
                        state.vote = FoldMemory.Vote(token: token.bytes, live: true, allowance: .none)
                        state.isLoaded = true
                        try changeVotes(app: app, key: key, hash: hash, live: 1, voters: 1, asks: memory.asks)
                        continue
                    }
                    try load(state, app: app)
                }
                guard var vote = state.vote else {
                    // The insert met a row that the read then did not find.
                    throw CloudError(.database, "a vote row was neither inserted nor found")
                }
                guard vote.token == token.bytes else {
                    throw Refusal(message: "a vote carries a different token than this device's earlier vote for the same hash")
                }
                if vote.live { continue }
                vote.live = true
                state.vote = vote
                try setVote(live: true, app: app, key: key, voter: state.voter)
                try changeVotes(app: app, key: key, hash: hash, live: 1, voters: 0, asks: memory.asks)
            case .withdraw(_, let token):
                if !state.isLoaded { try load(state, app: app) }
                guard var vote = state.vote else { continue }
                guard vote.token == token.bytes else {
                    throw Refusal(message: "a withdrawal carries a different token than this device's vote for the same hash")
                }
                guard vote.live else { continue }
                vote.live = false
                state.vote = vote
                try setVote(live: false, app: app, key: key, voter: state.voter)
                // An offer lasts as long as the vote it was made under.
                let drop = try statements.statement(.dropOffer, db)
                drop.bind(1, app)
                drop.bind(2, key)
                drop.bind(3, state.voter)
                try drop.execute()
                try changeVotes(app: app, key: key, hash: hash, live: -1, voters: 0, asks: memory.asks)
            case .signal(_, let counts):
                if !state.isLoaded { try load(state, app: app) }
                // Only a live voter's signals count (`PopularityRule`).
                guard state.vote?.live == true else { continue }
                signals[hash, default: Popularity()] += counts
            case .content(_, let content):
                guard PublicHash.of(app: app, content: content) == hash else {
                    throw Refusal(message: "content does not hash to the public hash it was sent for")
                }
                if !state.isLoaded { try load(state, app: app) }
                let open = try hashState(app: app, key: key)
                switch ContentRule.verdict(hasVoted: state.vote != nil, isLive: state.vote?.live == true,
                                           liveVotes: open?.liveVotes ?? 0, threshold: threshold, hasContent: open?.hasContent ?? false) {
                case .ignore:
                    continue
                case .offer:
                    if try offer(content, app: app, key: key, voter: state.voter, liveVotes: open?.liveVotes ?? 0, logSeq: logSeq) {
                        memory.asks.changed(hash)
                    }
                }
            }
        }
        let day = PopularityRule.day(milliseconds: receivedAt.millisecondsSince1970)
        for (hash, offered) in signals.sorted(by: { $0.key < $1.key }) {
            guard let state = known[hash], var vote = state.vote else { continue }
            let (counted, allowance) = PopularityRule.admit(offered, on: day, after: vote.allowance)
            guard allowance != vote.allowance else { continue }
            vote.allowance = allowance
            state.vote = vote
            if state.isAllowanceWritten {
                state.isAllowanceWritten = false
                memory.unwritten.append(state)
            }
            let add = try statements.statement(.addSignals, db)
            add.bind(1, app)
            add.bind(2, state.key)
            add.bind(3, Int64(counted.views))
            add.bind(4, Int64(counted.shown))
            add.bind(5, Int64(counted.engaged))
            try add.execute()
        }
    }

    /// Writes the allowances `memory` changed to their vote rows. With
    /// `forgetting`, `memory` then forgets everything (the end of a replay, or
    /// a memory past its bound); otherwise it goes on knowing the rows, as the
    /// store now holds them.
    func flush(_ memory: FoldMemory, forgetting: Bool) throws {
        for state in memory.unwritten {
            guard let vote = state.vote else { continue }
            let spend = try statements.statement(.spendSignals, db)
            spend.bind(1, vote.allowance.day)
            spend.bind(2, Int64(vote.allowance.used.views))
            spend.bind(3, Int64(vote.allowance.used.shown))
            spend.bind(4, Int64(vote.allowance.used.engaged))
            spend.bind(5, state.app)
            spend.bind(6, state.key)
            spend.bind(7, state.voter)
            try spend.execute()
            state.isAllowanceWritten = true
        }
        memory.unwritten.removeAll(keepingCapacity: true)
        if forgetting || memory.count > memory.limit { memory.forget() }
    }

    /// Keeps `content` as the voter's offer for the hash, replacing the
    /// voter's earlier one, and makes it public once `agreement` live voters
    /// offered the same bytes. Offers are kept only while the hash is wanted.
    /// Returns whether the content became public.
    private func offer(_ content: PublicContent, app: AppID, key: Data, voter: [UInt8], liveVotes: Int64, logSeq: Int64) throws -> Bool {
        let digest = Data(contentDigest(app, content))
        try db.cachedStatement(sql: """
            INSERT INTO content_offers (app, key, voter, digest) VALUES (?, ?, ?, ?)
            ON CONFLICT (app, key, voter) DO UPDATE SET digest = excluded.digest
            """).execute(arguments: [app, key, Data(voter), digest])
        let agreeing = try Int64.fetchOne(db.cachedStatement(sql: """
            SELECT count(*) FROM content_offers WHERE app = ? AND key = ? AND digest = ?
            """), arguments: [app, key, digest]) ?? 0
        guard ContentRule.publishes(agreeing: agreeing, agreement: agreement, liveVotes: liveVotes, threshold: threshold,
                                    hasContent: false) else { return false }
        try db.cachedStatement(sql: """
            INSERT INTO public_content (app, key, activity_type, title, keywords, description, url, log_seq)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [app, key, content.activityType, content.title,
                                     Data(PublicKeywords.encode(content.keywords)), content.contentDescription,
                                     content.webpageURL, logSeq])
        try db.cachedStatement(sql: "UPDATE hashes SET wanted_seq = NULL, has_content = 1 WHERE app = ? AND key = ?")
            .execute(arguments: [app, key])
        try db.cachedStatement(sql: "DELETE FROM content_offers WHERE app = ? AND key = ?").execute(arguments: [app, key])
        return true
    }

    /// Reads the device's vote row for the entry's hash into it.
    private func load(_ state: FoldMemory.Entry, app: AppID) throws {
        if let read = try readVote(app: app, key: state.key, voter: state.voter) {
            state.vote = FoldMemory.Vote(token: read.token, live: read.live, allowance: read.allowance)
        }
        state.isLoaded = true
    }

    /// Gives the hash the next wanted seq: every device of the app is asked
    /// for its content (again).
    private func markWanted(app: AppID, key: Data) throws {
        let next = (try Int64.fetchOne(db.cachedStatement(sql: "SELECT value FROM fold_state WHERE key = 'wanted_seq'")) ?? 0) + 1
        try db.cachedStatement(sql: """
            INSERT INTO fold_state (key, value) VALUES ('wanted_seq', ?)
            ON CONFLICT (key) DO UPDATE SET value = excluded.value
            """).execute(arguments: [next])
        try db.cachedStatement(sql: "UPDATE hashes SET wanted_seq = ? WHERE app = ? AND key = ?")
            .execute(arguments: [next, app, key])
    }

    /// A hash's live votes and whether its content is public, if it is counted.
    private func hashState(app: AppID, key: Data) throws -> (liveVotes: Int64, hasContent: Bool)? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT live_votes, has_content FROM hashes WHERE app = ? AND key = ?"),
                                         arguments: [app, key]) else { return nil }
        return (try Stored.count(Stored.column(row, 0, "hashes.live_votes"), "hashes.live_votes"),
                try Stored.column(row, 1, "hashes.has_content"))
    }

    /// The device's vote for a hash under its pseudonym, if it voted.
    private func readVote(app: AppID, key: Data, voter: [UInt8]) throws -> (token: [UInt8], live: Bool, allowance: PopularityRule.Allowance)? {
        let read = try statements.statement(.readVote, db)
        defer { read.reset() }
        read.bind(1, app)
        read.bind(2, key)
        read.bind(3, voter)
        guard try read.step() else { return nil }
        func count(_ column: Int32, _ name: String) throws(CloudError) -> UInt64 {
            UInt64(try Stored.count(read.int64(column), "votes.\(name)"))
        }
        let used = Popularity(views: try count(3, "day_views"), shown: try count(4, "day_shown"), engaged: try count(5, "day_engaged"))
        return (read.blob(0), read.int64(1) != 0, PopularityRule.Allowance(day: read.int64(2), used: used))
    }

    private func setVote(live: Bool, app: AppID, key: Data, voter: [UInt8]) throws {
        let update = try statements.statement(.setVoteLive, db)
        update.bind(1, live)
        update.bind(2, app)
        update.bind(3, key)
        update.bind(4, voter)
        try update.execute()
    }

    /// Moves the live-vote and distinct-voter counts in one upsert, then the
    /// hash's state around the threshold: at K without content it becomes
    /// wanted (and its raw hash is kept, to ask for it); below K its raw hash,
    /// content and offers go.
    private func changeVotes(app: AppID, key: Data, hash: PublicHash, live: Int64, voters: Int64, asks: AskMemory) throws {
        let change = try statements.statement(.changeVotes, db)
        change.bind(1, app)
        change.bind(2, key)
        change.bind(3, live)
        change.bind(4, voters)
        try change.execute()
        let read = try statements.statement(.voteState, db)
        read.bind(1, app)
        read.bind(2, key)
        let state: (liveVotes: Int64, isWanted: Bool, hasContent: Bool)
        do {
            defer { read.reset() }
            guard try read.step() else { return }
            state = (read.int64(0), !read.isNull(1), read.int64(2) != 0)
        }
        // The raw hash is held exactly while live votes are at least K, so the
        // rule derives whether it was held from the count.
        let actions = ThresholdRule.actions(liveVotes: state.liveVotes, delta: live, threshold: threshold,
                                            hasContent: state.hasContent, isWanted: state.isWanted)
        if actions.keepRawHash {
            try db.cachedStatement(sql: "UPDATE hashes SET hash = ? WHERE app = ? AND key = ?")
                .execute(arguments: [Data(hash.bytes), app, key])
        }
        if actions.markWanted {
            try markWanted(app: app, key: key)
            asks.changed(hash)
        }
        if actions.dropContent {
            try db.cachedStatement(sql: "DELETE FROM public_content WHERE app = ? AND key = ?").execute(arguments: [app, key])
        }
        if actions.dropWanted {
            try db.cachedStatement(sql: "DELETE FROM content_offers WHERE app = ? AND key = ?").execute(arguments: [app, key])
            asks.changed(hash)
        }
        if actions.dropRawHash || actions.dropContent || actions.dropWanted {
            try db.cachedStatement(sql: """
                UPDATE hashes SET hash = NULL, wanted_seq = NULL, has_content = 0 WHERE app = ? AND key = ?
                """).execute(arguments: [app, key])
        }
    }
}

/// Keywords as `public_content.keywords` holds them: a `list<string>` of the
/// event encoding, so any keyword text round-trips.
enum PublicKeywords {
    static func encode(_ keywords: [String]) -> [UInt8] {
        var writer = BinaryWriter()
        writer.uvarint(UInt64(keywords.count))
        for keyword in keywords { writer.string(keyword) }
        return writer.bytes
    }

    static func decode(_ bytes: [UInt8]) -> [String]? {
        var reader = BinaryReader(bytes)
        guard let count = try? reader.uvarint(), count <= UInt64(bytes.count) else { return nil }
        var keywords: [String] = []
        for _ in 0..<count {
            guard let keyword = try? reader.string() else { return nil }
            keywords.append(keyword)
        }
        return reader.isAtEnd ? keywords : nil
    }
}

/// What the fold knows of each (device, public hash) it met: the hash's key,
/// the device's pseudonym, and the device's vote row as the store holds it.
/// A replay keeps one across all the log's frames, so a vote row is read at
/// most once and its signal allowance written once, at the end. Ingest keeps
/// one across frames (`CloudIndex.IngestMemory`), so a popular hash's row is
/// not read again with every frame of every device.
///
/// Everything the fold writes to a vote row it writes here too, so the memory
/// never differs from the rows of the transaction it is used in. Whoever
/// keeps one past a transaction must forget it when the transaction rolls
/// back or anything else writes the votes (`IngestMemory` does).
final class FoldMemory {

    struct Vote {
        var token: [UInt8]
        var live: Bool
        var allowance: PopularityRule.Allowance
    }

    /// A class, so that the fold changes it where the memory holds it.
    final class Entry {
        let app: AppID
        let key: Data
        let voter: [UInt8]
        /// The vote row, once read or written: nil when the device never voted.
        var vote: Vote?
        /// Whether `vote` says what the store holds (else it was not read yet).
        var isLoaded = false
        /// Whether the store holds `vote.allowance` (else `flush` writes it).
        var isAllowanceWritten = true

        init(app: AppID, key: Data, voter: [UInt8]) {
            self.app = app
            self.key = key
            self.voter = voter
        }
    }

    /// By device, then by hash.
    var devices: [DeviceID: [PublicHash: Entry]] = [:]
    /// How many entries are held.
    var count = 0
    /// The entries whose allowance `flush` must write.
    var unwritten: [Entry] = []
    /// What each device's acks ask for (`AskMemory`).
    let asks = AskMemory()

    /// The most entries held after a flush (about 250 bytes each): past it,
    /// the memory forgets everything and reads rows again as it meets them.
    let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    func forget() {
        devices.removeAll(keepingCapacity: true)
        unwritten.removeAll(keepingCapacity: true)
        count = 0
        asks.forget()
    }
}

extension PopularityRule.Allowance {
    /// Nothing used yet (a new vote row's allowance).
    static let none = PopularityRule.Allowance(day: 0, used: Popularity())
}
