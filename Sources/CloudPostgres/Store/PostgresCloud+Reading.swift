import CloudCore
import CloudSQLite
import Foundation
import IndexModel
import SyncWire

extension PostgresCloud {
    private static let entrySQL = """
        SELECT h.app, h.key, h.hash, h.live_votes, h.voters, h.views, h.shown, h.engaged, h.wanted_seq,
               c.activity_type, c.title, c.keywords, c.description, c.url, c.key IS NOT NULL
        FROM hashes h LEFT JOIN public_content c ON c.app = h.app AND c.key = h.key
        """

    /// A row of `entrySQL`, every column checked.
    private static func entry(_ row: PostgresRowValues) throws(CloudError) -> HashEntry {
        var content: PublicContent?
        if try row.flag(14, "public_content presence") {
            content = try PublicContent.stored(activityType: row.text(9, "public_content.activity_type"),
                                               title: row.optionalText(10, "public_content.title"),
                                               keywords: row.bytes(11, "public_content.keywords"),
                                               description: row.optionalText(12, "public_content.description"),
                                               url: row.optionalText(13, "public_content.url"))
        }
        return try HashEntry.stored(app: AppID(row.text(0, "hashes.app")), key: row.bytes(1, "hashes.key"),
                                    hash: row.optionalBytes(2, "hashes.hash"), liveVotes: row.integer(3, "hashes.live_votes"),
                                    voters: row.integer(4, "hashes.voters"), views: row.integer(5, "hashes.views"),
                                    shown: row.integer(6, "hashes.shown"), engaged: row.integer(7, "hashes.engaged"),
                                    wantedSeq: row.optionalInteger(8, "hashes.wanted_seq"), content: content)
    }

    /// Every hash the cloud counts for `app`, in key order.
    public func entries(app: AppID) throws(CloudError) -> [HashEntry] {
        try read { session in
            try session.query(PostgresCloud.entrySQL + " WHERE h.app = $1 ORDER BY h.key", [.text(app.rawValue)])
                .map { row throws(CloudError) in try PostgresCloud.entry(row) }
        }
    }

    /// One hash's entry, if the cloud has counted it.
    public func entry(app: AppID, hash: PublicHash) throws(CloudError) -> HashEntry? {
        let key = secrets.key(app: app, hash: hash)
        return try read { session in
            try session.query(PostgresCloud.entrySQL + " WHERE h.app = $1 AND h.key = $2", [.text(app.rawValue), .bytea(key)])
                .first.map { row throws(CloudError) in try PostgresCloud.entry(row) }
        }
    }

    public func isRegistered(_ app: AppID) throws(CloudError) -> Bool {
        try read { session in
            try session.query("SELECT EXISTS (SELECT 1 FROM apps WHERE app = $1)", [.text(app.rawValue)])[0].flag(0, "the app's presence")
        }
    }

    /// The pages the crawler recorded for `app`, in URL order.
    public func crawledPages(app: AppID) throws(CloudError) -> [CrawledPage] {
        try read { session in
            try session.query("SELECT url, page FROM pages WHERE app = $1 ORDER BY url", [.text(app.rawValue)])
                .map { row throws(CloudError) in try CrawledPage.stored(url: row.text(0, "pages.url"), page: row.bytes(1, "pages.page")) }
        }
    }

    public func crawledPage(app: AppID, url: String) throws(CloudError) -> CrawledPage? {
        try read { session in
            try session.query("SELECT page FROM pages WHERE app = $1 AND url = $2", [.text(app.rawValue), .text(url)])
                .first.map { row throws(CloudError) in try CrawledPage.stored(url: url, page: row.bytes(0, "pages.page")) }
        }
    }

    public func crawledPages(app: AppID, urls: Set<String>) throws(CloudError) -> [String: CrawledPage] {
        guard !urls.isEmpty else { return [:] }
        return try read { session in
            var pages: [String: CrawledPage] = [:]
            for row in try session.query("SELECT url, page FROM pages WHERE app = $1 AND url = ANY($2::text[])",
                                         [.text(app.rawValue), .textArray(urls.sorted())]) {
                let url = try row.text(0, "pages.url")
                pages[url] = try CrawledPage.stored(url: url, page: row.bytes(1, "pages.page"))
            }
            return pages
        }
    }

    public func popularity(app: AppID) throws(CloudError) -> PopularityMode {
        try read { session in try PostgresCloud.popularity(app, session: session) }
    }

    public func setPopularity(_ mode: PopularityMode, app: AppID) throws(CloudError) {
        try run { session in
            try session.transaction {
                guard let row = try session.query("SELECT popularity FROM apps WHERE app = $1 FOR UPDATE", [.text(app.rawValue)]).first else {
                    throw CloudError(.invalidOption, "app \(app) is not registered: register it before choosing its popularity")
                }
                guard try Stored.popularity(try row.optionalBytes(0, "apps.popularity of \(app)"), app: app) != mode else { return }
                _ = try session.query("UPDATE apps SET popularity = $1::bytea WHERE app = $2",
                                      [Stored.popularityValue(mode).map(PostgresValue.bytea) ?? .null, .text(app.rawValue)])
                try refold(app, session: session)
            }
        }
    }

    public func sketchCells(app: AppID) throws(CloudError) -> [(cell: Int64, counted: SketchCell)] {
        try read { session in
            try session.query("SELECT cell, reports, total FROM sketch_cells WHERE app = $1 ORDER BY cell", [.text(app.rawValue)])
                .map { row throws(CloudError) in
                    (try row.integer(0, "sketch_cells.cell of \(app)"),
                     SketchCell(reports: try row.integer(1, "sketch_cells.reports of \(app)"),
                                total: try row.integer(2, "sketch_cells.total of \(app)")))
                }
        }
    }

    public func stats() throws(CloudError) -> CloudStats {
        let (threshold, agreement) = (self.threshold, self.agreement)
        return try read { session in
            let row = try session.query("""
                SELECT (SELECT count(*) FROM apps), (SELECT count(*) FROM devices), (SELECT count(*) FROM cloud_log),
                       (SELECT coalesce(sum(last_seq - accepted_from + 1), 0)::int8 FROM cloud_log), (SELECT count(*) FROM hashes),
                       (SELECT count(*) FROM public_content), (SELECT count(*) FROM hashes WHERE wanted_seq IS NOT NULL),
                       (SELECT count(*) FROM flags WHERE reason = 'equivocation'), (SELECT count(*) FROM pages),
                       (SELECT coalesce(sum(reports), 0)::int8 FROM sketch_cells)
                """)[0]
            var stats = CloudStats()
            func count(_ index: Int, _ what: String) throws(CloudError) -> Int { Int(try row.count(index, what)) }
            stats.apps = try count(0, "the app count")
            stats.devices = try count(1, "the device count")
            stats.logRows = try count(2, "the log row count")
            stats.messages = try count(3, "the message count")
            stats.hashes = try count(4, "the hash count")
            stats.publicItems = try count(5, "the public item count")
            stats.wanted = try count(6, "the wanted count")
            stats.equivocations = try count(7, "the equivocation count")
            stats.pages = try count(8, "the page count")
            stats.reports = try count(9, "the report count")
            for row in try session.query("SELECT app, popularity FROM apps WHERE popularity IS NOT NULL") {
                let app = AppID(try row.text(0, "apps.app"))
                stats.privateApps[app] = try Stored.popularity(try row.optionalBytes(1, "apps.popularity of \(app)"), app: app).privateSettings
            }
            stats.threshold = threshold
            stats.agreement = agreement
            return stats
        }
    }

    public func publicItemCount() throws(CloudError) -> Int {
        try read { session in Int(try session.query("SELECT count(*) FROM public_content")[0].count(0, "the public item count")) }
    }

    public func heldEpochsByDevice(app: AppID, device: DeviceID?) throws(CloudError) -> [DeviceID: [Epoch: OutboxSeq]] {
        try read { session in
            let rows = try device.map { device in
                try session.query("SELECT device, epoch, last_seq FROM device_epochs WHERE app = $1 AND device = $2",
                                  [.text(app.rawValue), .text(device.rawValue)])
            } ?? session.query("SELECT device, epoch, last_seq FROM device_epochs WHERE app = $1", [.text(app.rawValue)])
            var held: [DeviceID: [Epoch: OutboxSeq]] = [:]
            for row in rows {
                let device = DeviceID(try row.text(0, "device_epochs.device"))
                held[device, default: [:]][Epoch(try row.position(1, "device_epochs.epoch of \(device)"))] =
                    OutboxSeq(try row.position(2, "device_epochs.last_seq of \(device)"))
            }
            return held
        }
    }

    public func appFigures() throws(CloudError) -> [AppFigures] {
        try read { session in
            try session.query("""
                SELECT a.app, coalesce((SELECT max(seq) FROM cloud_log WHERE app = a.app), 0),
                       (SELECT count(*) FROM public_content WHERE app = a.app), (SELECT count(*) FROM devices WHERE app = a.app)
                FROM apps a ORDER BY a.app
                """).map { row throws(CloudError) in
                AppFigures(app: AppID(try row.text(0, "apps.app")), logRows: try row.count(1, "cloud_log.seq"),
                           publicItems: try row.count(2, "the public item count"), devices: try row.count(3, "the device count"))
            }
        }
    }

    public var connectionPoolUse: ConnectionPoolUse? { pool.use }

    public func logHeads() throws(CloudError) -> [CloudLogHead] {
        try read { session in try PostgresCloud.logHeads(session) }
    }

    /// Each app's chain head, from the log's last rows alone.
    static func logHeads(_ session: PostgresSession) throws -> [CloudLogHead] {
        try session.query("""
            SELECT l.app, l.seq, l.hash FROM apps a
            CROSS JOIN LATERAL (SELECT app, seq, hash FROM cloud_log WHERE app = a.app ORDER BY seq DESC LIMIT 1) l ORDER BY l.app
            """).map { row throws(CloudError) in
            CloudLogHead(app: AppID(try row.text(0, "cloud_log.app")), rows: try row.integer(1, "cloud_log.seq"),
                         hash: try row.bytes(2, "cloud_log.hash"))
        }
    }

    public func contentRequestHead(app: AppID) throws(CloudError) -> Int64 {
        try read { session in
            try session.query("SELECT wanted_seq FROM app_state WHERE app = $1", [.text(app.rawValue)])
                .first.map { row throws(CloudError) in try row.count(0, "app_state.wanted_seq of \(app)") } ?? 0
        }
    }
}
