import IndexModel
import Testing
@testable import SyncWire

/// The page message (`CrawledPage`): what it carries round-trips, and a
/// page someone wrote by hand is refused with where and why.
@Suite struct CrawledPageCodecTests {
    private let page = CrawledPage(url: "https://shop.example.com/p/1", title: "Trail Runner", description: "A shoe.",
                                   keywords: ["shoes", "trail"], image: "https://cdn.example.com/1.jpg",
                                   deepLink: "shop://p/1", appStoreID: "123", type: "Product", rating: 4.25, ratingCount: 12,
                                   price: "119.99 USD")

    @Test func aPageMessageRoundTripsThroughAFramePayload() throws {
        let message = OutboxMessage.page(CrawledPage.hash(app: AppID("app"), url: page.url), page)
        let payload = FramePayload.encode([message.encoded, OutboxMessage.page(CrawledPage.hash(app: AppID("app"), url: "u"),
                                                                               CrawledPage(url: "u")).encoded])
        let decoded = try FramePayload.decode(payload, count: 2)
        #expect(decoded.first == message && decoded.last?.kindName == "page")
        #expect(try CrawledPage.decode(page.encoded) == page)
        #expect(try CrawledPage.decode(encoded()) == CrawledPage(url: "u"), "the hand-written encoding is the codec's")
    }

    @Test func aPagesHashIsItsAppsAndURLsAndNeverAnActivitys() {
        let app = AppID("app")
        #expect(CrawledPage.hash(app: app, url: page.url) != CrawledPage.hash(app: AppID("other"), url: page.url))
        #expect(CrawledPage.hash(app: app, url: page.url) != PublicHash.of(app: app, activityType: "", identity: "url:" + page.url))
    }

    @Test func aPageFitsTheWireWhateverItWasGiven() {
        let long = String(repeating: "é", count: WireLimits.maximumStringBytes)
        let fitted = CrawledPage(url: "u", title: long, keywords: Array(repeating: "k", count: 100), rating: .nan, ratingCount: -3)
        #expect(fitted.title?.utf8.count == WireLimits.maximumStringBytes && fitted.title?.last == "é", "cut at a character")
        #expect(fitted.keywords.count == WireLimits.maximumKeywords && fitted.rating == nil && fitted.ratingCount == 0)
        // Characters of 601 bytes each (a base and 300 marks), a page's worth of them.
        let heavy = "e" + String(repeating: "\u{301}", count: 300)
        let marks = CrawledPage(url: "u", title: String(repeating: heavy, count: 3_000))
        #expect(marks.title?.utf8.count == 6 * heavy.utf8.count && marks.title?.count == 6, "whole characters within 4,096 bytes")
    }

    /// The fields after the URL, title and description, written by hand.
    private func encoded(url: String = "u", keywords: UInt64 = 0, rating: String? = nil, ratingCount: UInt64? = nil) -> [UInt8] {
        var writer = BinaryWriter()
        writer.string(url)
        writer.optional(nil as String?) { $0.string($1) }
        writer.optional(nil as String?) { $0.string($1) }
        writer.uvarint(keywords)
        for _ in 0..<min(keywords, 100) { writer.string("k") }
        for _ in 0..<4 { writer.optional(nil as String?) { $0.string($1) } }
        writer.optional(rating) { $0.string($1) }
        writer.optional(ratingCount) { $0.uvarint($1) }
        writer.optional(nil as String?) { $0.string($1) }
        return writer.bytes
    }

    @Test(arguments: [
        ("an empty URL", "", 0, nil, nil, "URL is empty"),
        ("too many keywords", "u", 65, nil, nil, "65 keywords"),
        ("a rating that is no number", "u", 0, "five", nil, "rating \"five\""),
        ("an infinite rating", "u", 0, "inf", nil, "not a finite"),
        ("a negative rating", "u", 0, "-1", nil, "non-negative"),
        ("a rating not written canonically", "u", 0, "4.50", nil, "not written as \"4.5\""),
        ("a count past 2^53 - 1", "u", 0, nil, UInt64(1) << 53, "rating count"),
    ] as [(String, String, UInt64, String?, UInt64?, String)])
    func aHandWrittenPageOutOfRangeIsRefusedSayingWhy(_ what: String, url: String, keywords: UInt64, rating: String?,
                                                      ratingCount: UInt64?, message: String) {
        #expect(throws: CodecError.self, "\(what)") {
            try CrawledPage.decode(encoded(url: url, keywords: keywords, rating: rating, ratingCount: ratingCount))
        }
        do {
            _ = try CrawledPage.decode(encoded(url: url, keywords: keywords, rating: rating, ratingCount: ratingCount))
        } catch {
            #expect(error.message.contains(message), "\(what): \(error)")
        }
    }
}
