import Foundation
import GRDB
import IndexModel
import SyncWire

/// What the cloud knows about one public hash of one app.
public struct HashEntry: Hashable, Sendable {
    public let app: AppID
    /// The keyed hash the cloud files it under.
    public let key: [UInt8]
    /// The public hash itself, known only while the hash has K live votes.
    public let hash: PublicHash?
    /// Devices whose vote is live now.
    public let liveVotes: Int
    /// Distinct devices that ever voted.
    public let voters: Int
    public let popularity: Popularity
    /// The public fields, present only while the hash is public (K live votes
    /// and its content arrived).
    public let content: PublicContent?
    /// K was reached and the content is being asked for.
    public let isWanted: Bool
    /// The crawled page at the content's web page URL, which the entry
    /// shows instead of anything devices sent (`CloudStore.publicIndex(app:)`
    /// joins it; nil elsewhere, and for an entry without such a page).
    public package(set) var page: CrawledPage?
    /// The engagements the app's sketch of private reports estimates for
    /// the hash, when the app's popularity is private and the entry is
    /// public (`CloudStore.publicIndex(app:)` sets it; nil elsewhere). An
    /// estimate, unbiased and noisy: it may be negative or fractional.
    public package(set) var estimatedEngaged: Double?

    public var isPublic: Bool { content != nil }

    /// The engagements ranking counts: the estimate when there is one (below
    /// zero counts as zero), else the exact count.
    public var rankedEngagements: Double {
        estimatedEngaged.map { max(0, $0) } ?? Double(popularity.engaged)
    }

    /// Where what a public entry shows comes from: `page` (a crawled page)
    /// or `devices` (agreed offers); nil when it is not public.
    public var contentSource: String? {
        guard content != nil else { return nil }
        return page == nil ? "devices" : "page"
    }

    /// The title a search shows and matches: the page's when there is one.
    public var shownTitle: String? { page.map(\.title) ?? content?.title }
    public var shownDescription: String? { page.map(\.description) ?? content?.contentDescription }
    public var shownKeywords: [String] { page?.keywords ?? content?.keywords ?? [] }

    package init(app: AppID, key: [UInt8], hash: PublicHash?, liveVotes: Int, voters: Int, popularity: Popularity,
                 content: PublicContent?, isWanted: Bool) {
        self.app = app
        self.key = key
        self.hash = hash
        self.liveVotes = liveVotes
        self.voters = voters
        self.popularity = popularity
        self.content = content
        self.isWanted = isWanted
    }

    /// Engagements per impression, nil before any impression.
    public var engagementRatio: Double? {
        popularity.shown == 0 ? nil : Double(popularity.engaged) / Double(popularity.shown)
    }
}

/// Totals over the whole cloud store.
public struct CloudStats: Hashable, Sendable {
    public var apps = 0
    public var devices = 0
    public var logRows = 0
    public var messages = 0
    public var hashes = 0
    public var publicItems = 0
    public var wanted = 0
    /// Web pages the crawler recorded.
    public var pages = 0
    /// Private reports counted into the apps' sketches.
    public var reports = 0
    /// The apps whose popularity is private, and their settings.
    public var privateApps: [AppID: PrivatePopularity] = [:]
    public var equivocations = 0
    public var threshold = 0
    /// How many live voters must offer the same content (`ContentRule`).
    public var agreement = 0

    package init() {}
}

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

extension HashEntry {
    /// An entry from the values of its `hashes` row, each checked as every
    /// backend checks them: counts from 0 to 2^53 − 1, a raw hash of 32 bytes.
    package static func stored(app: AppID, key: [UInt8], hash: [UInt8]?, liveVotes: Int64, voters: Int64, views: Int64,
                               shown: Int64, engaged: Int64, wantedSeq: Int64?, content: PublicContent?) throws(CloudError) -> HashEntry {
        func count(_ value: Int64, _ name: String) throws(CloudError) -> Int64 {
            try Stored.count(value, "hashes.\(name)")
        }
        return HashEntry(app: app, key: key,
                         hash: try hash.map { bytes throws(CloudError) in
                             guard let hash = PublicHash(bytes) else {
                                 throw CloudError(.corruptStore, "hashes.hash is \(bytes.count) bytes, not \(PublicHash.byteCount)")
                             }
                             return hash
                         },
                         liveVotes: Int(try count(liveVotes, "live_votes")), voters: Int(try count(voters, "voters")),
                         popularity: Popularity(views: UInt64(try count(views, "views")), shown: UInt64(try count(shown, "shown")),
                                                engaged: UInt64(try count(engaged, "engaged"))),
                         content: content, isWanted: wantedSeq != nil)
    }
}

extension CrawledPage {
    /// A page from the values of its `pages` row: the page must decode
    /// (`CrawledPage.decode`) and be the page at its row's URL.
    package static func stored(url: String, page bytes: [UInt8]) throws(CloudError) -> CrawledPage {
        let page: CrawledPage
        do {
            page = try CrawledPage.decode(bytes)
        } catch {
            throw CloudError(.corruptStore, "pages.page of \(url) does not decode: \(error)")
        }
        guard page.url == url else {
            throw CloudError(.corruptStore, "pages.page of \(url) is the page of another URL")
        }
        return page
    }
}

extension PublicContent {
    /// Public content from the values of its `public_content` row; the
    /// keywords must be a `list<string>`.
    package static func stored(activityType: String, title: String?, keywords: [UInt8], description: String?,
                               url: String?) throws(CloudError) -> PublicContent {
        guard let decoded = PublicKeywords.decode(keywords) else {
            throw CloudError(.corruptStore, "public_content.keywords is not a list of strings")
        }
        return PublicContent(activityType: activityType, title: title, keywords: decoded, contentDescription: description,
                             webpageURL: url)
    }
}
