import CloudCore
import Foundation
import GRDB
import IndexModel
import SQLiteSupport
import SyncWire

/// The fold's rows in a SQLite cloud store: each call one kept statement
/// (`CloudStatement`), bound and stepped directly, inside the caller's
/// write transaction.
struct SQLiteFoldRows: FoldRows {
    let db: Database
    /// The statements kept for `db`.
    let statements: StatementSlots

    func insertVote(app: AppID, key: Data, voter: [UInt8], token: [UInt8]) throws -> Bool {
        let insert = try statements.statement(.insertVote, db)
        insert.bind(1, app)
        insert.bind(2, key)
        insert.bind(3, voter)
        insert.bind(4, token)
        try insert.execute()
        return insert.changes > 0
    }

    func readVote(app: AppID, key: Data, voter: [UInt8]) throws -> FoldMemory.Vote? {
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
        return FoldMemory.Vote(token: read.blob(0), live: read.int64(1) != 0,
                               allowance: PopularityRule.Allowance(day: read.int64(2), used: used))
    }

    func setVote(live: Bool, app: AppID, key: Data, voter: [UInt8]) throws {
        let update = try statements.statement(.setVoteLive, db)
        update.bind(1, live)
        update.bind(2, app)
        update.bind(3, key)
        update.bind(4, voter)
        try update.execute()
    }

    func writeAllowance(_ allowance: PopularityRule.Allowance, app: AppID, key: Data, voter: [UInt8]) throws {
        let spend = try statements.statement(.spendSignals, db)
        spend.bind(1, allowance.day)
        spend.bind(2, Int64(clamping: allowance.used.views))
        spend.bind(3, Int64(clamping: allowance.used.shown))
        spend.bind(4, Int64(clamping: allowance.used.engaged))
        spend.bind(5, app)
        spend.bind(6, key)
        spend.bind(7, voter)
        try spend.execute()
    }

    func changeVotes(app: AppID, key: Data, live: Int64, voters: Int64) throws -> FoldHashState? {
        let change = try statements.statement(.changeVotes, db)
        change.bind(1, app)
        change.bind(2, key)
        change.bind(3, live)
        change.bind(4, voters)
        try change.execute()
        return try hashState(app: app, key: key)
    }

    func hashState(app: AppID, key: Data) throws -> FoldHashState? {
        let read = try statements.statement(.voteState, db)
        defer { read.reset() }
        read.bind(1, app)
        read.bind(2, key)
        guard try read.step() else { return nil }
        return FoldHashState(liveVotes: try Stored.count(read.int64(0), "hashes.live_votes"), isWanted: !read.isNull(1),
                             hasContent: read.int64(2) != 0)
    }

    func addSignals(_ counted: Popularity, app: AppID, key: Data) throws {
        let add = try statements.statement(.addSignals, db)
        add.bind(1, app)
        add.bind(2, key)
        add.bind(3, Int64(clamping: counted.views))
        add.bind(4, Int64(clamping: counted.shown))
        add.bind(5, Int64(clamping: counted.engaged))
        try add.execute()
    }

    func keepRawHash(_ hash: PublicHash, app: AppID, key: Data) throws {
        try db.cachedStatement(sql: "UPDATE hashes SET hash = ? WHERE app = ? AND key = ?")
            .execute(arguments: [Data(hash.bytes), app, key])
    }

    func markWanted(app: AppID, key: Data) throws {
        let next = (try Int64.fetchOne(db.cachedStatement(sql: "SELECT wanted_seq FROM app_state WHERE app = ?"),
                                       arguments: [app]) ?? 0) + 1
        try db.cachedStatement(sql: """
            INSERT INTO app_state (app, wanted_seq) VALUES (?, ?)
            ON CONFLICT (app) DO UPDATE SET wanted_seq = excluded.wanted_seq
            """).execute(arguments: [app, next])
        try db.cachedStatement(sql: "UPDATE hashes SET wanted_seq = ? WHERE app = ? AND key = ?")
            .execute(arguments: [next, app, key])
    }

    func dropContent(app: AppID, key: Data) throws {
        try db.cachedStatement(sql: "DELETE FROM public_content WHERE app = ? AND key = ?").execute(arguments: [app, key])
    }

    func dropOffers(app: AppID, key: Data) throws {
        try db.cachedStatement(sql: "DELETE FROM content_offers WHERE app = ? AND key = ?").execute(arguments: [app, key])
    }

    func dropOffer(app: AppID, key: Data, voter: [UInt8]) throws {
        let drop = try statements.statement(.dropOffer, db)
        drop.bind(1, app)
        drop.bind(2, key)
        drop.bind(3, voter)
        try drop.execute()
    }

    func clearPublicState(app: AppID, key: Data) throws {
        try db.cachedStatement(sql: "UPDATE hashes SET hash = NULL, wanted_seq = NULL, has_content = 0 WHERE app = ? AND key = ?")
            .execute(arguments: [app, key])
    }

    func offer(_ digest: Data, app: AppID, key: Data, voter: [UInt8]) throws -> Int64 {
        try db.cachedStatement(sql: """
            INSERT INTO content_offers (app, key, voter, digest) VALUES (?, ?, ?, ?)
            ON CONFLICT (app, key, voter) DO UPDATE SET digest = excluded.digest
            """).execute(arguments: [app, key, Data(voter), digest])
        return try Int64.fetchOne(db.cachedStatement(sql: """
            SELECT count(*) FROM content_offers WHERE app = ? AND key = ? AND digest = ?
            """), arguments: [app, key, digest]) ?? 0
    }

    func publish(_ content: PublicContent, app: AppID, key: Data, logSeq: Int64) throws {
        try db.cachedStatement(sql: """
            INSERT INTO public_content (app, key, activity_type, title, keywords, description, url, log_seq)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [app, key, content.activityType, content.title,
                                     Data(PublicKeywords.encode(content.keywords)), content.contentDescription,
                                     content.webpageURL, logSeq])
        try db.cachedStatement(sql: "UPDATE hashes SET wanted_seq = NULL, has_content = 1 WHERE app = ? AND key = ?")
            .execute(arguments: [app, key])
        try dropOffers(app: app, key: key)
    }

    func recordPage(_ page: CrawledPage, app: AppID, logSeq: Int64) throws {
        try db.cachedStatement(sql: """
            INSERT INTO pages (app, url, page, log_seq) VALUES (?, ?, ?, ?)
            ON CONFLICT (app, url) DO UPDATE SET page = excluded.page, log_seq = excluded.log_seq
            """).execute(arguments: [app, page.url, Data(page.encoded), logSeq])
    }

    func hasPage(app: AppID, url: String) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM pages WHERE app = ? AND url = ?)"),
                          arguments: [app, url]) ?? false
    }

    func dropOffersOfWanted(app: AppID) throws -> [PublicHash] {
        let rows = try Row.fetchAll(db.cachedStatement(sql: """
            SELECT h.hash FROM hashes h WHERE h.app = ? AND h.wanted_seq IS NOT NULL
            AND EXISTS (SELECT 1 FROM content_offers o WHERE o.app = h.app AND o.key = h.key)
            """), arguments: [app])
        try db.cachedStatement(sql: "DELETE FROM content_offers WHERE app = ?").execute(arguments: [app])
        return try rows.map { row in
            let bytes = [UInt8](try Stored.column(row, 0, "hashes.hash of a wanted hash") as Data)
            guard let hash = PublicHash(bytes) else {
                throw CloudError(.corruptStore, "hashes.hash of a wanted hash is \(bytes.count) bytes, not \(PublicHash.byteCount)")
            }
            return hash
        }
    }

    func reportAllowance(app: AppID, device: DeviceID) throws -> ReportRule.Allowance? {
        let read = try statements.statement(.reportAllowance, db)
        defer { read.reset() }
        read.bind(1, app)
        read.bind(2, device)
        guard try read.step() else { return nil }
        return ReportRule.Allowance(day: read.int64(0), used: try Stored.count(read.int64(1), "report_allowances.reports of \(device)"))
    }

    func writeReportAllowance(_ allowance: ReportRule.Allowance, app: AppID, device: DeviceID) throws {
        let spend = try statements.statement(.spendReports, db)
        spend.bind(1, app)
        spend.bind(2, device)
        spend.bind(3, allowance.day)
        spend.bind(4, allowance.used)
        try spend.execute()
    }

    func addReports(_ cells: [Int64: SketchCell], app: AppID) throws {
        let add = try statements.statement(.addReport, db)
        for (cell, counted) in cells.sorted(by: { $0.key < $1.key }) {
            add.bind(1, app)
            add.bind(2, cell)
            add.bind(3, counted.reports)
            add.bind(4, counted.total)
            try add.execute()
        }
    }

    func recordEpoch(app: AppID, device: DeviceID, epoch: Epoch, lastSeq: OutboxSeq) throws {
        let record = try statements.statement(.recordEpoch, db)
        record.bind(1, app)
        record.bind(2, device)
        record.bind(3, epoch)
        record.bind(4, lastSeq)
        try record.execute()
    }
}
