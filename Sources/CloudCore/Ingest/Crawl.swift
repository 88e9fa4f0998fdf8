import Foundation
import IndexModel
import SyncWire

/// What `CloudStore.recordPages(_:app:)` did.
public struct CrawlOutcome: Hashable, Sendable {
    /// The URLs of the pages recorded: new, or changed since the page last
    /// recorded at their URL.
    public var recorded: [String] = []
    /// The URLs of the pages equal to the page recorded at their URL,
    /// which were left out.
    public var unchanged: [String] = []
    /// The frames, each one cloud log row, that recorded them.
    public var frames = 0

    public init() {}
}

extension CloudStore {
    /// The most pages one crawl frame carries, and the most bytes of them
    /// (their messages' encoding, before deflate), well within what a log
    /// row may hold (`WireLimits.maximumPayloadBytes`); a crawl of more
    /// writes several log rows.
    public static var pagesPerFrame: Int { 1_000 }
    public static var pageBytesPerFrame: Int { 4 << 20 }

    /// Records crawled pages of `app` (registered) in its cloud log, as
    /// frames of the crawler's stream (`CrawlerRule`) that ingest appends
    /// and folds like any device's: a page replaces the app's page at its
    /// URL, rebuilds and snapshots cover it, and `journal export` shows it.
    /// Pages equal to the recorded ones are left out, and of several pages
    /// with one URL the last is kept. Public activities whose web page URL
    /// is a page's show the page (`docs/CLOUD.md`, "Crawled pages").
    ///
    /// Runs beside servers of the same store (each frame is one ingest
    /// transaction). Two crawls of one app at once may refuse each other's
    /// frames; the refused one says so, and what it recorded before stays.
    @discardableResult
    public func recordPages(_ pages: [CrawledPage], app: AppID) throws(CloudError) -> CrawlOutcome {
        guard try isRegistered(app) else {
            throw CloudError(.invalidOption, "app \(app) is not registered in \(displayName): serve it once (`cloud serve --app`) first")
        }
        var latest: [String: CrawledPage] = [:]
        var order: [String] = []
        for (position, page) in pages.enumerated() {
            if let problem = page.textProblem {
                throw CloudError(.invalidOption, "page \(position + 1) cannot be recorded: its \(problem)")
            }
            if latest.updateValue(page, forKey: page.url) == nil { order.append(page.url) }
        }
        var known: [String: CrawledPage] = [:]
        for page in try crawledPages(app: app) { known[page.url] = page }
        var outcome = CrawlOutcome()
        var fresh: [CrawledPage] = []
        for url in order {
            guard let page = latest[url] else { continue }
            if known[url] == page {
                outcome.unchanged.append(url)
            } else {
                fresh.append(page)
                outcome.recorded.append(url)
            }
        }
        var frame: [OutboxMessage] = []
        var bytes = 0
        for page in fresh {
            let message = OutboxMessage.page(CrawledPage.hash(app: app, url: page.url), page)
            let size = message.encoded.count
            if !frame.isEmpty, frame.count == Self.pagesPerFrame || bytes + size > Self.pageBytesPerFrame {
                try recordFrame(of: frame, app: app)
                outcome.frames += 1
                frame.removeAll(keepingCapacity: true)
                bytes = 0
            }
            frame.append(message)
            bytes += size
        }
        if !frame.isEmpty {
            try recordFrame(of: frame, app: app)
            outcome.frames += 1
        }
        return outcome
    }

    /// Appends one frame of page messages after the crawler's last seq, through ingest.
    private func recordFrame(of messages: [OutboxMessage], app: AppID) throws(CloudError) {
        let held = try heldEpochs(app: app, device: CrawlerRule.device)
        var position = OutboxPosition(epoch: .first, seq: (held[.first] ?? .beforeFirst).next)
        var records: [OutboxRecord] = []
        for message in messages {
            records.append(OutboxRecord(position: position, message: message))
            position = position.nextInEpoch
        }
        // The frame is never sent, so its signature is with a key of zeros:
        // ingest is handed it as authenticated, and the log keeps no signature.
        let key = [UInt8](repeating: 0, count: 32)
        let frame = UploadFrame(app: app, device: CrawlerRule.device, records: records, key: key)
        let result = ingest(AuthenticatedFrame(frame: frame, app: app, key: key), messages: messages)
        switch result.outcome {
        case .accepted, .duplicate:
            // A duplicate: another crawl of the same pages got there first.
            return
        case .rejected(let error):
            throw CloudError(.database, """
                the cloud refused the crawl's frame at \(frame.first) (another crawl of \(app) at once?): \(error.message); \
                the frames before it are recorded, and crawling again records the rest
                """)
        }
    }
}
