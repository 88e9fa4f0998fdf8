import CloudCore
import GRDB
import SQLiteSupport

/// The statements ingest runs for every frame, each kept in a slot of the
/// connection's `StatementSlots` and bound and stepped directly: through
/// GRDB's statement cache, argument arrays and rows they would be a large
/// share of each frame's ingest.
enum CloudStatement: Int, CaseIterable {
    case epochs, recordEpoch, registry, wanted, sameFrame
    case logHead, logAppend
    case insertVote, readVote, setVoteLive, spendSignals, addSignals, changeVotes, voteState, dropOffer, voterAsk
    case popularity, reportAllowance, spendReports, addReport

    var sql: String {
        switch self {
        case .epochs: "SELECT epoch, last_seq FROM device_epochs WHERE app = ? AND device = ? ORDER BY epoch"
        case .recordEpoch: """
            INSERT INTO device_epochs (app, device, epoch, last_seq) VALUES (?, ?, ?, ?)
            ON CONFLICT (app, device, epoch) DO UPDATE SET last_seq = excluded.last_seq
            """
        case .registry: "SELECT backed_up_epoch, backed_up_seq FROM devices WHERE app = ? AND device = ?"
        case .wanted: "SELECT hash, key, wanted_seq FROM hashes WHERE app = ? AND wanted_seq IS NOT NULL ORDER BY wanted_seq"
        case .sameFrame: """
            SELECT EXISTS (SELECT 1 FROM cloud_log WHERE app = ? AND device = ? AND epoch = ? AND first_seq = ? AND last_seq = ?
                           AND accepted_from = first_seq AND digest = ?)
            """
        case .logHead: "SELECT seq, hash FROM cloud_log WHERE app = ? ORDER BY seq DESC LIMIT 1"
        case .logAppend: """
            INSERT INTO cloud_log (app, seq, device, epoch, first_seq, last_seq, accepted_from, codec, uncompressed_length,
                                   digest, payload, received_at, prev_hash, hash)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
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
        case .dropOffer: "DELETE FROM content_offers WHERE app = ? AND key = ? AND voter = ?"
        case .voterAsk: """
            SELECT wanted_seq, live_votes, has_content,
                   (SELECT live FROM votes WHERE app = ?1 AND key = ?2 AND voter = ?3),
                   EXISTS (SELECT 1 FROM content_offers WHERE app = ?1 AND key = ?2 AND voter = ?3)
            FROM hashes WHERE app = ?1 AND key = ?2
            """
        case .popularity: "SELECT popularity FROM apps WHERE app = ?"
        case .reportAllowance: "SELECT day, reports FROM report_allowances WHERE app = ? AND device = ?"
        case .spendReports: """
            INSERT INTO report_allowances (app, device, day, reports) VALUES (?, ?, ?, ?)
            ON CONFLICT (app, device) DO UPDATE SET day = excluded.day, reports = excluded.reports
            """
        case .addReport: """
            INSERT INTO sketch_cells (app, cell, reports, total) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT (app, cell) DO UPDATE SET reports = reports + ?3, total = total + ?4
            """
        }
    }
}

extension StatementSlots {
    /// The statement for `kind` on `db`, the connection these slots are kept for.
    func statement(_ kind: CloudStatement, _ db: Database) throws -> DirectStatement {
        try statement(kind.rawValue, db, kind.sql)
    }
}
