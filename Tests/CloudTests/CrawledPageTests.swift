import CloudCore
import CloudSQLite
import Foundation
import IndexModel
import ScratchDirectory
import SyncWire
import Testing

/// Pages the crawler records (`CloudStore.recordPages`), and public
/// activities that show them (`docs/CLOUD.md`, "Crawled pages").
@Suite struct CrawledPageTests {
    private let url = "https://example.com/recipe"
    private var theHash: PublicHash { PublicHash.of(app: app, activityType: "com.example.read", identity: "url:" + url) }

    private func content(_ title: String) -> PublicContent {
        PublicContent(activityType: "com.example.read", title: title, keywords: ["personal"], contentDescription: "mine",
                      webpageURL: url)
    }

    private var page: CrawledPage {
        CrawledPage(url: url, title: "Baked Potato Chips", description: "Crisp chips from the oven, with sea salt.",
                    keywords: ["snack"], image: "https://example.com/chips.jpg", deepLink: "recipes://chips", appStoreID: "123456",
                    type: "Recipe", rating: 4.5, ratingCount: 120, price: "2.50 EUR")
    }

    private func voters(_ harness: SyncHarness, _ count: Int) throws -> [Attacker] {
        try Attacker.voters(harness, count, for: theHash)
    }

    @Test(arguments: Backend.allCases) func aPublicActivityShowsItsCrawledPageAndNothingADeviceSent(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        let outcome = try harness.cloud.recordPages([page], app: app)
        #expect(outcome.recorded == [url] && outcome.frames == 1)
        let devices = try voters(harness, 2)
        #expect(devices[0].send([.content(theHash, content("Alice's chips"))], from: 2) == .accepted(messages: 1))
        let entry = try #require(try harness.cloud.publicIndex(app: app).first)
        #expect(entry.hash == theHash && entry.contentSource == "page", "one offer naming a crawled page is enough")
        #expect(entry.content?.title == nil && entry.content?.keywords == [] && entry.content?.contentDescription == nil,
                "of the device's offer only the type and URL, which its hash fixes, are kept")
        #expect(entry.shownTitle == "Baked Potato Chips" && entry.page == page)
        let results = try harness.cloud.search(app: app, text: "sea salt", explain: true)
        #expect(results.map(\.entry.hash) == [theHash], "the page's description is searched")
        #expect(results.first?.explanation?.contentSource == "page")
        #expect(try harness.cloud.search(app: app, text: "alice").isEmpty, "nothing the device wrote is public")
        guard case .object(let json) = entry.jsonValue else { Issue.record("not an object"); return }
        #expect(json["deepLink"] == .string("recipes://chips") && json["rating"] == .double(4.5) && json["ratingCount"] == .integer(120))
        #expect(json["contentSource"] == .string("page") && json["title"] == .string("Baked Potato Chips"))
        #expect(try harness.cloud.projectionDigest() == harness.cloud.rebuiltProjectionDigest())
    }

    @Test(arguments: Backend.allCases) func aPageCrawledAfterAgreementReplacesWhatDevicesAgreedOn(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        let devices = try voters(harness, 2)
        for device in devices {
            #expect(device.send([.content(theHash, content("Chips"))], from: 2) == .accepted(messages: 1))
        }
        #expect(try harness.cloud.publicIndex(app: app).first?.contentSource == "devices")
        #expect(try harness.cloud.search(app: app, text: "chips", explain: true).first?.explanation?.contentSource == "devices")
        try harness.cloud.recordPages([page], app: app)
        let entry = try #require(try harness.cloud.publicIndex(app: app).first)
        #expect(entry.contentSource == "page" && entry.shownTitle == "Baked Potato Chips" && entry.shownKeywords == ["snack"])
        #expect(entry.content?.title == "Chips", "the agreed content stays, and the page is shown over it")
    }

    /// Every live voter offered, and the offers disagree, before the page
    /// is crawled: the crawl drops the offers, the next ack asks each voter
    /// again, and the first answer meets the page.
    @Test(arguments: Backend.allCases) func aPageCrawledWhileItsHashWaitsOnDisagreeingOffersMakesItPublic(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        let devices = try voters(harness, 2)
        #expect(devices[0].send([.content(theHash, content("Alice's"))], from: 2) == .accepted(messages: 1))
        #expect(devices[1].send([.content(theHash, content("Bob's"))], from: 2) == .accepted(messages: 1))
        #expect(try harness.cloud.entry(app: app, hash: theHash)?.isWanted == true, "two offers, no agreement")
        #expect(devices[0].requests(sending: [.signal(theHash, Popularity(views: 1))], from: 3) == [], "an offer stops the asking")
        try harness.cloud.recordPages([page], app: app)
        let asked = try #require(devices[1].requests(sending: [.signal(theHash, Popularity(views: 1))], from: 3))
        #expect(asked == [theHash], "the crawl asks the voters again")
        #expect(devices[1].send([.content(theHash, content("Bob's"))], from: 4) == .accepted(messages: 1))
        let entry = try #require(try harness.cloud.publicIndex(app: app).first)
        #expect(entry.hash == theHash && entry.contentSource == "page" && entry.content?.title == nil)
        #expect(try harness.cloud.projectionDigest() == harness.cloud.rebuiltProjectionDigest())
    }

    @Test(arguments: Backend.allCases) func aPageBelowTheThresholdMakesNothingPublic(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 3, backend: backend)
        try harness.cloud.recordPages([page], app: app)
        let devices = try voters(harness, 2)
        #expect(devices[0].send([.content(theHash, content("Chips"))], from: 2) == .accepted(messages: 1))
        #expect(try harness.cloud.publicIndex(app: app).isEmpty, "the threshold still decides")
        #expect(try harness.cloud.entry(app: app, hash: theHash)?.hash == nil)
    }

    @Test(arguments: Backend.allCases) func aDeviceCannotRecordAPage(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        let mallory = try Attacker(harness)
        let outcome = mallory.send([.page(CrawledPage.hash(app: app, url: url), CrawledPage(url: url, title: "Buy pills"))])
        guard case .rejected(let error) = outcome else { Issue.record("accepted: \(outcome)"); return }
        #expect(error.code == .refused && error.message.contains("crawler"))
        #expect(try harness.cloud.crawledPages(app: app).isEmpty && harness.cloud.stats().logRows == 0)
    }

    @Test(arguments: Backend.allCases) func noDeviceCanEnrolOrSendAsTheCrawler(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        #expect(throws: CloudError.self) {
            try harness.cloud.enrol(app: app, device: CrawlerRule.device, enrolmentSecret: enrolmentSecret)
        }
        let record = OutboxRecord(position: OutboxPosition(epoch: .first, seq: .first),
                                  message: .page(CrawledPage.hash(app: app, url: url), page))
        let frame = UploadFrame(app: app, device: CrawlerRule.device, records: [record], key: [UInt8](repeating: 0, count: 32))
        guard case .rejected(let error) = harness.deliver(frame.encoded).outcome else { Issue.record("accepted"); return }
        #expect(error.code == .unknownDevice)
        #expect(try harness.cloud.crawledPages(app: app).isEmpty)
    }

    @Test(arguments: Backend.allCases) func anUnchangedPageIsLeftOutAndAChangedOneReplacesIt(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        let other = CrawledPage(url: "https://example.com/other", title: "Other")
        #expect(try harness.cloud.recordPages([page, other], app: app).recorded == [url, other.url])
        let again = try harness.cloud.recordPages([page], app: app)
        #expect(again.recorded.isEmpty && again.unchanged == [url] && again.frames == 0)
        var changed = page
        changed.title = "Oven Chips"
        #expect(try harness.cloud.recordPages([changed], app: app).recorded == [url])
        #expect(try harness.cloud.crawledPages(app: app) == [other, changed], "in URL order")
        let log = try harness.cloud.heldEpochs(app: app, device: CrawlerRule.device)
        #expect(log == [.first: OutboxSeq(3)], "the crawler's stream is dense: three pages in two frames")
        var kinds: [String] = []
        try harness.cloud.scanLog { record in
            kinds += record.messages.map(\.kindName)
            return true
        }
        #expect(kinds == ["page", "page", "page"])
        #expect(try harness.cloud.verifyLog().isValid)
        #expect(try harness.cloud.stats().pages == 2)
    }

    /// Pages at the wire's limits (64 keywords of 4 KiB each) are cut into
    /// frames of at most `pageBytesPerFrame`, so every log row stays
    /// readable (`StoredLogRow` refuses a payload past 16 MiB).
    @Test(arguments: Backend.allCases) func aCrawlOfLargePagesIsCutIntoFramesALogRowCanHold(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        let keyword = String(repeating: "k", count: WireLimits.maximumStringBytes)
        let pages = (0..<80).map { CrawledPage(url: "https://example.com/big/\($0)", title: "Big \($0)",
                                               keywords: Array(repeating: keyword, count: WireLimits.maximumKeywords)) }
        let outcome = try harness.cloud.recordPages(pages, app: app)
        #expect(outcome.recorded.count == 80 && outcome.frames > 1, "\(outcome.frames) frames")
        #expect(try harness.cloud.verifyLog().isValid)
        #expect(try harness.cloud.crawledPages(app: app).count == 80)
        #expect(try harness.cloud.projectionDigest() == harness.cloud.rebuiltProjectionDigest())
    }

    @Test(arguments: Backend.allCases) func aPageForAnAppNotRegisteredIsRefused(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        let refusal = try #require(throws: CloudError.self) { try harness.cloud.recordPages([page], app: AppID("com.example.nobody")) }
        #expect(refusal.message.contains("not registered"))
    }

    @Test(arguments: Backend.allCases) func aRebuildAndASnapshotKeepThePages(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        try harness.cloud.recordPages([page], app: app)
        let devices = try voters(harness, 2)
        #expect(devices[1].send([.content(theHash, content("Bob's"))], from: 2) == .accepted(messages: 1))
        let before = try harness.cloud.projectionDigest()
        try harness.cloud.rebuildProjections()
        #expect(try harness.cloud.projectionDigest() == before)
        let directory = try ScratchDirectory.make("sightline-crawl")
        let snapshot = directory.appendingPathComponent("cloud.snap").path
        try harness.cloud.snapshot(to: snapshot)
        let restoredPath = directory.appendingPathComponent("restored.sqlite").path
        _ = try CloudIndex.restore(snapshot: snapshot, to: restoredPath)
        let restored = try CloudIndex(at: .file(restoredPath))
        #expect(try restored.crawledPages(app: app) == [page])
        #expect(try restored.publicIndex(app: app).first?.shownTitle == "Baked Potato Chips")
        #expect(try restored.projectionDigest() == before)
    }
}
