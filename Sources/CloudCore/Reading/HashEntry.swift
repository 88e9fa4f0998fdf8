import Foundation
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

/// One app's sizes as a served cloud reports them at each `/metrics` scrape:
/// read from the tables' keys alone, so that a scrape costs a walk of an
/// index per app and never a scan of the log.
public struct AppFigures: Hashable, Sendable {
    public let app: AppID
    /// The app's cloud log rows (its last row's seq; rows are numbered from 1 without gaps).
    public let logRows: Int64
    /// Entries in the app's public index.
    public let publicItems: Int64
    /// Devices enrolled in the app.
    public let devices: Int64

    package init(app: AppID, logRows: Int64, publicItems: Int64, devices: Int64) {
        self.app = app
        self.logRows = logRows
        self.publicItems = publicItems
        self.devices = devices
    }
}

/// How a backend's connection pool is used at one moment.
public struct ConnectionPoolUse: Hashable, Sendable {
    /// Connections lent to a caller (or being opened for one).
    public let inUse: Int
    /// Connections open and waiting for a caller.
    public let idle: Int
    /// The most connections the pool opens at once.
    public let maximum: Int

    package init(inUse: Int, idle: Int, maximum: Int) {
        self.inUse = inUse
        self.idle = idle
        self.maximum = maximum
    }
}
