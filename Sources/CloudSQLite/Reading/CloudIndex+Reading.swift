import CloudCore
import Foundation
import GRDB
import IndexModel
import SyncWire

extension CloudIndex {
    /// Every hash the cloud counts for `app`, in key order.
    public func entries(app: AppID) throws(CloudError) -> [HashEntry] {
        try read { db in
            try Row.fetchAll(db, sql: CloudIndex.entrySQL + " WHERE h.app = ? ORDER BY h.key", arguments: [app])
                .map { row throws(CloudError) in try CloudIndex.entry(row) }
        }
    }

    /// One hash's entry, if the cloud has counted it.
    public func entry(app: AppID, hash: PublicHash) throws(CloudError) -> HashEntry? {
        let key = Data(secrets.key(app: app, hash: hash))
        return try read { db in
            try Row.fetchOne(db, sql: CloudIndex.entrySQL + " WHERE h.app = ? AND h.key = ?", arguments: [app, key])
                .map { row throws(CloudError) in try CloudIndex.entry(row) }
        }
    }

    public func isRegistered(_ app: AppID) throws(CloudError) -> Bool {
        try read { db in try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM apps WHERE app = ?)", arguments: [app]) ?? false }
    }

    /// The pages the crawler recorded for `app`, in URL order.
    public func crawledPages(app: AppID) throws(CloudError) -> [CrawledPage] {
        try read { db in
            try Row.fetchAll(db.cachedStatement(sql: "SELECT url, page FROM pages WHERE app = ? ORDER BY url"), arguments: [app])
                .map { row throws(CloudError) in
                    try CrawledPage.stored(url: Stored.column(row, 0, "pages.url"), page: [UInt8](Stored.column(row, 1, "pages.page") as Data))
                }
        }
    }

    public func crawledPage(app: AppID, url: String) throws(CloudError) -> CrawledPage? {
        try read { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT page FROM pages WHERE app = ? AND url = ?"), arguments: [app, url])
                .map { row throws(CloudError) in try CrawledPage.stored(url: url, page: [UInt8](Stored.column(row, 0, "pages.page") as Data)) }
        }
    }

    public func crawledPages(app: AppID, urls: Set<String>) throws(CloudError) -> [String: CrawledPage] {
        guard !urls.isEmpty else { return [:] }
        return try read { db in
            var pages: [String: CrawledPage] = [:]
            let select = try db.cachedStatement(sql: "SELECT page FROM pages WHERE app = ? AND url = ?")
            for url in urls.sorted() {
                guard let row = try Row.fetchOne(select, arguments: [app, url]) else { continue }
                pages[url] = try CrawledPage.stored(url: url, page: [UInt8](Stored.column(row, 0, "pages.page") as Data))
            }
            return pages
        }
    }

    /// `heldEpochs(app:device:)` of every device of `app` that sent anything,
    /// read in one pass (after a cloud restore the simulator asks for all
    /// 10,000), or of the one `device`.
    public func heldEpochsByDevice(app: AppID, device: DeviceID?) throws(CloudError) -> [DeviceID: [Epoch: OutboxSeq]] {
        try read { db in
            var held: [DeviceID: [Epoch: OutboxSeq]] = [:]
            let rows = try device.map { device in
                try Row.fetchCursor(db.cachedStatement(sql: "SELECT device, epoch, last_seq FROM device_epochs WHERE app = ? AND device = ?"),
                                    arguments: [app, device])
            } ?? Row.fetchCursor(db.cachedStatement(sql: "SELECT device, epoch, last_seq FROM device_epochs WHERE app = ?"),
                                 arguments: [app])
            while let row = try rows.next() {
                let device: DeviceID = try Stored.column(row, 0, "device_epochs.device")
                held[device, default: [:]][Epoch(try Stored.position(Stored.column(row, 1, "device_epochs.epoch"), "device_epochs.epoch of \(device)"))] =
                    OutboxSeq(try Stored.position(Stored.column(row, 2, "device_epochs.last_seq"), "device_epochs.last_seq of \(device)"))
            }
            return held
        }
    }

    /// Each app's cloud log head: its row count and last row's hash.
    public func logHeads() throws(CloudError) -> [CloudLogHead] {
        try read { db in try logHeads(db) }
    }

    /// The seq of the last content request the cloud made for `app` (a hash
    /// reached K live votes without content and became wanted), 0 before
    /// any. Every ack asks its device for each wanted hash it holds a live
    /// vote for and has not offered (up to `requestsPerAck` at once), so a
    /// device whose sync began at this head and ended with an ack was asked
    /// for all it can answer, when there were no more than that. It only
    /// grows, until a restore takes the cloud back.
    public func contentRequestHead(app: AppID) throws(CloudError) -> Int64 {
        try read { db in
            try Int64.fetchOne(db.cachedStatement(sql: "SELECT wanted_seq FROM app_state WHERE app = ?"), arguments: [app]) ?? 0
        }
    }

    public func stats() throws(CloudError) -> CloudStats {
        try read { db in
            func count(_ sql: String) throws -> Int { try Int.fetchOne(db.cachedStatement(sql: sql)) ?? 0 }
            var stats = CloudStats()
            stats.apps = try count("SELECT count(*) FROM apps")
            stats.devices = try count("SELECT count(*) FROM devices")
            stats.logRows = try count("SELECT count(*) FROM cloud_log")
            stats.messages = try count("SELECT coalesce(sum(last_seq - accepted_from + 1), 0) FROM cloud_log")
            stats.hashes = try count("SELECT count(*) FROM hashes")
            stats.publicItems = try count("SELECT count(*) FROM public_content")
            stats.wanted = try count("SELECT count(*) FROM hashes WHERE wanted_seq IS NOT NULL")
            stats.pages = try count("SELECT count(*) FROM pages")
            stats.reports = try count("SELECT coalesce(sum(reports), 0) FROM sketch_cells")
            stats.privateApps = try CloudIndex.privatePopularity(db)
            stats.equivocations = try count("SELECT count(*) FROM flags WHERE reason = 'equivocation'")
            stats.threshold = threshold
            stats.agreement = agreement
            return stats
        }
    }

    public func appFigures() throws(CloudError) -> [AppFigures] {
        try read { db in
            try Row.fetchAll(db.cachedStatement(sql: """
                SELECT a.app, coalesce((SELECT max(seq) FROM cloud_log WHERE app = a.app), 0),
                       (SELECT count(*) FROM public_content WHERE app = a.app), (SELECT count(*) FROM devices WHERE app = a.app)
                FROM apps a ORDER BY a.app
                """)).map { row throws(CloudError) in
                let app: String = try Stored.column(row, 0, "apps.app")
                return AppFigures(app: AppID(app), logRows: try Stored.count(try Stored.column(row, 1, "cloud_log.seq"), "cloud_log.seq"),
                                  publicItems: try Stored.column(row, 2, "the public item count"),
                                  devices: try Stored.column(row, 3, "the device count"))
            }
        }
    }

    /// SQLite has no pool to report: the store opens its connections itself.
    public var connectionPoolUse: ConnectionPoolUse? { nil }

    public func popularity(app: AppID) throws(CloudError) -> PopularityMode {
        try read { db in try CloudIndex.popularity(app: app, db) ?? .exact }
    }

    /// `app`'s popularity as `db` holds it; nil when it is not registered.
    static func popularity(app: AppID, _ db: Database) throws -> PopularityMode? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT popularity FROM apps WHERE app = ?"), arguments: [app]) else {
            return nil
        }
        let bytes = try (Stored.column(row, 0, "apps.popularity of \(app)") as Data?).map { [UInt8]($0) }
        return try Stored.popularity(bytes, app: app)
    }

    public func setPopularity(_ mode: PopularityMode, app: AppID) throws(CloudError) {
        let changed = try write { db in
            guard let current = try CloudIndex.popularity(app: app, db) else {
                throw CloudError(.invalidOption, "app \(app) is not registered: register it before choosing its popularity")
            }
            guard current != mode else { return false }
            try db.execute(sql: "UPDATE apps SET popularity = ? WHERE app = ?",
                           arguments: [Stored.popularityValue(mode).map { Data($0) }, app])
            try CloudIndex.refold(db, threshold: threshold, agreement: agreement, secrets: secrets)
            return true
        }
        if changed { ingestMemory.forget() }
    }

    public func sketchCells(app: AppID) throws(CloudError) -> [(cell: Int64, counted: SketchCell)] {
        try read { db in
            try Row.fetchAll(db.cachedStatement(sql: "SELECT cell, reports, total FROM sketch_cells WHERE app = ? ORDER BY cell"),
                             arguments: [app]).map { row throws(CloudError) in
                (try Stored.column(row, 0, "sketch_cells.cell of \(app)"),
                 SketchCell(reports: try Stored.column(row, 1, "sketch_cells.reports of \(app)"),
                            total: try Stored.column(row, 2, "sketch_cells.total of \(app)")))
            }
        }
    }

    /// How many entries are public: `stats().publicItems` without the
    /// counts that scan the whole log (the simulator samples this every few
    /// virtual seconds).
    public func publicItemCount() throws(CloudError) -> Int {
        try read { db in try Int.fetchOne(db.cachedStatement(sql: "SELECT count(*) FROM public_content")) ?? 0 }
    }

    private static let entrySQL = """
        SELECT h.app, h.key, h.hash, h.live_votes, h.voters, h.views, h.shown, h.engaged, h.wanted_seq,
               c.activity_type, c.title, c.keywords, c.description, c.url, c.key IS NOT NULL
        FROM hashes h LEFT JOIN public_content c ON c.app = h.app AND c.key = h.key
        """

    /// A row of `entrySQL`, every column checked: a projection row someone
    /// edited is a `corruptStore` error, never a trap.
    private static func entry(_ row: Row) throws(CloudError) -> HashEntry {
        func column<Value: DatabaseValueConvertible>(_ index: Int, _ name: String) throws(CloudError) -> Value {
            try Stored.column(row, index, name)
        }
        var content: PublicContent?
        if try column(14, "public_content presence") as Bool {
            content = try PublicContent.stored(activityType: column(9, "public_content.activity_type"),
                                               title: column(10, "public_content.title"),
                                               keywords: [UInt8](column(11, "public_content.keywords") as Data),
                                               description: column(12, "public_content.description"),
                                               url: column(13, "public_content.url"))
        }
        return try HashEntry.stored(app: column(0, "hashes.app"), key: [UInt8](column(1, "hashes.key") as Data),
                                    hash: (column(2, "hashes.hash") as Data?).map { [UInt8]($0) },
                                    liveVotes: column(3, "hashes.live_votes"), voters: column(4, "hashes.voters"),
                                    views: column(5, "hashes.views"), shown: column(6, "hashes.shown"),
                                    engaged: column(7, "hashes.engaged"), wantedSeq: column(8, "hashes.wanted_seq"),
                                    content: content)
    }
}

