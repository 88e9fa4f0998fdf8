import GRDB
import SQLiteSupport

/// The statements ingest runs for every frame, each kept in a slot of the
/// connection's `StatementSlots` and bound and stepped directly: through
/// GRDB's statement cache, argument arrays and rows they cost about a third
/// of a frame's ingest on a 10,000-device simulation's event loop.
enum CloudStatement: Int, CaseIterable {
    case epochs, recordEpoch, restartRequests, deliverRequests, registry, wanted, offerRequests, sameFrame
    case logHead, logAppend
    case insertVote, readVote, setVoteLive, spendSignals, addSignals, changeVotes, voteState

    var sql: String {
        switch self {
        case .epochs: "SELECT epoch, last_seq FROM device_epochs WHERE device = ? ORDER BY epoch"
        case .recordEpoch: """
            INSERT INTO device_epochs (device, epoch, last_seq) VALUES (?, ?, ?)
            ON CONFLICT (device, epoch) DO UPDATE SET last_seq = excluded.last_seq
            """
        case .restartRequests: "UPDATE devices SET requests_offered = 0, requests_delivered = 0 WHERE device = ?"
        case .deliverRequests: """
            UPDATE devices SET requests_delivered = requests_offered
            WHERE device = ? AND (offered_at_epoch, offered_at_seq) <= (?, ?)
            """
        case .registry: "SELECT requests_delivered, backed_up_epoch, backed_up_seq FROM devices WHERE device = ?"
        case .wanted: "SELECT hash, wanted_seq FROM hashes WHERE app = ? AND wanted_seq > ? ORDER BY wanted_seq LIMIT ?"
        case .offerRequests: "UPDATE devices SET requests_offered = ?, offered_at_epoch = ?, offered_at_seq = ? WHERE device = ?"
        case .sameFrame: """
            SELECT EXISTS (SELECT 1 FROM cloud_log WHERE device = ? AND epoch = ? AND first_seq = ? AND last_seq = ?
                           AND accepted_from = first_seq AND digest = ?)
            """
        case .logHead: "SELECT seq, hash FROM cloud_log ORDER BY seq DESC LIMIT 1"
        case .logAppend: """
            INSERT INTO cloud_log (seq, device, epoch, first_seq, last_seq, accepted_from, codec, uncompressed_length,
                                   digest, payload, received_at, prev_hash, hash)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """
        case .insertVote: "INSERT INTO votes (app, key, voter, token, live) VALUES (?, ?, ?, ?, 1) ON CONFLICT DO NOTHING"
        case .readVote: """
            SELECT token, live, signal_day, day_views, day_shown, day_engaged FROM votes WHERE app = ? AND key = ? AND voter = ?
            """
        case .spendSignals: """
            UPDATE votes SET signal_day = ?, day_views = ?, day_shown = ?, day_engaged = ? WHERE app = ? AND key = ? AND voter = ?
            """
        case .setVoteLive: "UPDATE votes SET live = ? WHERE app = ? AND key = ? AND voter = ?"
        case .addSignals: """
            INSERT INTO hashes (app, key, live_votes, voters, views, shown, engaged) VALUES (?, ?, 0, 0, ?, ?, ?)
            ON CONFLICT (app, key) DO UPDATE
            SET views = min(views + excluded.views, \(Stored.maximumCount)), shown = min(shown + excluded.shown, \(Stored.maximumCount)),
                engaged = min(engaged + excluded.engaged, \(Stored.maximumCount))
            """
        // Not one upsert with RETURNING: SQLite gathers returned rows in a
        // table of their own, whose page cache it allocates and frees on
        // every step.
        case .changeVotes: """
            INSERT INTO hashes (app, key, live_votes, voters, views, shown, engaged) VALUES (?1, ?2, ?3, ?4, 0, 0, 0)
            ON CONFLICT (app, key) DO UPDATE SET live_votes = live_votes + ?3, voters = voters + ?4
            """
        case .voteState: "SELECT live_votes, wanted_seq, has_content FROM hashes WHERE app = ? AND key = ?"
        }
    }
}

extension StatementSlots {
    /// The statement for `kind` on `db`, the connection these slots are kept for.
    func statement(_ kind: CloudStatement, _ db: Database) throws -> DirectStatement {
        try statement(kind.rawValue, db, kind.sql)
    }
}
