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
/// - *content* is kept only while the hash has at least K live votes and has
///   none yet, and only if it hashes to the hash it claims.
///
/// When live votes reach K without content, the hash is *wanted*: its raw hash
/// is kept, it gets the next wanted seq, and acks to the app's devices carry it
/// until content arrives. Below K the raw hash and the content are dropped:
/// only counts under keyed hashes remain.
struct CloudFold {
    let db: Database
    /// The statements kept for `db` (`CloudStatement`).
    let statements: StatementSlots
    let threshold: Int
    let voter: (String, PublicHash) -> [UInt8]
    let key: (String, PublicHash) -> [UInt8]

    /// What the fold of one frame knows of one hash: its key, and, once a
    /// message needed them, the device's pseudonym, whether its vote is live
    /// and what it has added to the hash's counts today.
    private struct FrameHash {
        let key: Data
        var voter: [UInt8]?
        var vote: (live: Bool, allowance: PopularityRule.Allowance)?
    }

    /// Folds one frame's messages, accepted at `receivedAt`. Signals only add
    /// to counts that nothing else in the fold reads, so they are summed per
    /// hash and written once at the end of the frame; everything else is
    /// applied in order.
    func apply(_ messages: ArraySlice<OutboxMessage>, device: String, app: String, logSeq: Int64, receivedAt: Timestamp) throws {
        var known: [PublicHash: FrameHash] = [:]
        var signals: [PublicHash: Popularity] = [:]
        for message in messages {
            let hash = message.hash
            var state = known[hash] ?? FrameHash(key: Data(self.key(app, hash)))
            let key = state.key
            let pseudonym = state.voter ?? voter(device, hash)
            state.voter = pseudonym
            defer { known[hash] = state }
            switch message {
            case .vote(_, let token):
                let insert = try statements.statement(.insertVote, db)
                insert.bind(1, app)
                insert.bind(2, key)
                insert.bind(3, pseudonym)
                insert.bind(4, token.bytes)
                try insert.execute()
                if insert.changes > 0 {
                    state.vote = (true, PopularityRule.Allowance(day: 0, used: Popularity()))
                    try changeVotes(app: app, key: key, hash: hash, live: 1, voters: 1)
                    continue
                }
                guard let vote = try readVote(app: app, key: key, voter: pseudonym) else { continue }
                guard vote.token == token.bytes else {
                    throw Refusal(message: "a vote carries a different token than this device's earlier vote for the same hash")
                }
                state.vote = (true, vote.allowance)
                if vote.live { continue }
                try setVote(live: true, app: app, key: key, voter: pseudonym)
                try changeVotes(app: app, key: key, hash: hash, live: 1, voters: 0)
            case .withdraw(_, let token):
                guard let vote = try readVote(app: app, key: key, voter: pseudonym) else { continue }
                guard vote.token == token.bytes else {
                    throw Refusal(message: "a withdrawal carries a different token than this device's vote for the same hash")
                }
                state.vote = (false, vote.allowance)
                guard vote.live else { continue }
                try setVote(live: false, app: app, key: key, voter: pseudonym)
                try changeVotes(app: app, key: key, hash: hash, live: -1, voters: 0)
            case .signal(_, let counts):
                if state.vote == nil, let vote = try readVote(app: app, key: key, voter: pseudonym) {
                    state.vote = (vote.live, vote.allowance)
                }
                // Only a live voter's signals count (`PopularityRule`).
                guard state.vote?.live == true else { continue }
                signals[hash, default: Popularity()] += counts
            case .content(_, let content):
                guard PublicHash.of(app: app, content: content) == hash else {
                    throw Refusal(message: "content does not hash to the public hash it was sent for")
                }
                guard let row = try Row.fetchOne(db.cachedStatement(sql: """
                    SELECT live_votes >= ? AND has_content = 0 FROM hashes WHERE app = ? AND key = ?
                    """), arguments: [threshold, app, key]),
                    try Stored.column(row, 0, "hashes.live_votes and has_content") as Bool else { continue }
                try db.cachedStatement(sql: """
                    INSERT INTO public_content (app, key, activity_type, title, keywords, description, url, log_seq)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """).execute(arguments: [app, key, content.activityType, content.title,
                                             Data(PublicKeywords.encode(content.keywords)), content.contentDescription,
                                             content.webpageURL, logSeq])
                try db.cachedStatement(sql: "UPDATE hashes SET wanted_seq = NULL, has_content = 1 WHERE app = ? AND key = ?")
                    .execute(arguments: [app, key])
            }
        }
        let day = PopularityRule.day(milliseconds: receivedAt.millisecondsSince1970)
        for (hash, offered) in signals.sorted(by: { $0.key < $1.key }) {
            guard let state = known[hash], let voter = state.voter, let vote = state.vote else { continue }
            let (counted, allowance) = PopularityRule.admit(offered, on: day, after: vote.allowance)
            guard allowance != vote.allowance else { continue }
            let spend = try statements.statement(.spendSignals, db)
            spend.bind(1, allowance.day)
            spend.bind(2, Int64(allowance.used.views))
            spend.bind(3, Int64(allowance.used.shown))
            spend.bind(4, Int64(allowance.used.engaged))
            spend.bind(5, app)
            spend.bind(6, state.key)
            spend.bind(7, voter)
            try spend.execute()
            let add = try statements.statement(.addSignals, db)
            add.bind(1, app)
            add.bind(2, state.key)
            add.bind(3, Int64(counted.views))
            add.bind(4, Int64(counted.shown))
            add.bind(5, Int64(counted.engaged))
            try add.execute()
        }
    }

    /// The device's vote for a hash under its pseudonym, if it voted.
    private func readVote(app: String, key: Data, voter: [UInt8]) throws -> (token: [UInt8], live: Bool, allowance: PopularityRule.Allowance)? {
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

    private func setVote(live: Bool, app: String, key: Data, voter: [UInt8]) throws {
        let update = try statements.statement(.setVoteLive, db)
        update.bind(1, live)
        update.bind(2, app)
        update.bind(3, key)
        update.bind(4, voter)
        try update.execute()
    }

    /// Moves the live-vote and distinct-voter counts in one upsert, then the
    /// hash's state around the threshold: at K without content it becomes
    /// wanted (and its raw hash is kept, to ask for it); below K its raw hash
    /// and content go.
    private func changeVotes(app: String, key: Data, hash: PublicHash, live: Int64, voters: Int64) throws {
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
            let next = (try Int64.fetchOne(db, sql: "SELECT value FROM fold_state WHERE key = 'wanted_seq'") ?? 0) + 1
            try db.execute(sql: """
                INSERT INTO fold_state (key, value) VALUES ('wanted_seq', ?)
                ON CONFLICT (key) DO UPDATE SET value = excluded.value
                """, arguments: [next])
            try db.cachedStatement(sql: "UPDATE hashes SET wanted_seq = ? WHERE app = ? AND key = ?")
                .execute(arguments: [next, app, key])
        }
        if actions.dropContent {
            try db.cachedStatement(sql: "DELETE FROM public_content WHERE app = ? AND key = ?").execute(arguments: [app, key])
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
