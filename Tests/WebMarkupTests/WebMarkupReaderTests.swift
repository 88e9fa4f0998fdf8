import Foundation
import IndexModel
import Testing
@testable import WebMarkup

/// `WebMarkupReader` over realistic pages (`Pages/`): each standard read
/// where it is, the result chosen by the documented precedence, broken
/// pages read as browsers read them, and bad input refused with a reason.
@Suite struct WebMarkupReaderTests {
    static func page(_ name: String) throws -> [UInt8] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Pages/\(name)")
        return Array(try Data(contentsOf: url))
    }

    /// The URL schemes the fixture pages' apps declare for their deep links.
    static let linkSchemes: Set<String> = ["outdoorshop", "harbourtimes", "brokenapp", "everyapp"]

    static func read(_ name: String) throws -> WebMarkup {
        try WebMarkupReader.read(try page(name), linkSchemes: linkSchemes)
    }

    @Test func aProductPageShowsOpenGraphWithTheRatingPriceAndAppLinkOfItsOtherMarkup() throws {
        let markup = try Self.read("product.html")
        let preview = markup.preview
        #expect(preview.title == .init(source: "og:title", text: "Trail Runner 2"))
        #expect(preview.description?.text == "A lightweight trail shoe with a grippy sole.")
        #expect(preview.image == .init(source: "og:image", text: "https://cdn.example.com/img/trail-runner-2.jpg"))
        #expect(preview.url == .init(source: "canonical", text: "https://shop.example.com/p/trail-runner-2"))
        #expect(preview.deepLink == .init(source: "al:ios:url", text: "outdoorshop://product/trail-runner-2"))
        #expect(preview.appStoreID == .init(source: "apple-itunes-app app-id", text: "123456789"))
        #expect(preview.ratingValue == 4.5 && preview.ratingCount == 12 && preview.ratingSource == "json-ld")
        #expect(preview.price == .init(source: "json-ld", text: "119.99 USD"))
        #expect(preview.missing.isEmpty)
        #expect(markup.problems.isEmpty)
        #expect(markup.htmlTitle == "Trail Runner 2 – Outdoor Shop")
        #expect(markup.metaKeywords == ["shoes", "running", "trail"])
        #expect(markup.appBanner == ["app-id": "123456789", "app-argument": "https://shop.example.com/p/trail-runner-2"])
        #expect(markup.properties["al:ios:app_name"] == "Outdoor Shop")
        #expect(markup.things.first?.type == "Product")
    }

    @Test func aRecipeInMicrodataGivesItsNameImageAndNestedRating() throws {
        let markup = try Self.read("recipe.html")
        let preview = markup.preview
        #expect(preview.title == .init(source: "microdata", text: "Honey Roasted Carrots"))
        #expect(preview.image?.text == "https://recipes.example.com/img/carrots.jpg")
        #expect(preview.description?.text == "Sweet, caramelised carrots in thirty minutes.")
        #expect(preview.ratingValue == 4.8 && preview.ratingCount == 231 && preview.ratingSource == "microdata")
        // The author's nested name is not the recipe's.
        #expect(markup.things.count == 1 && markup.things[0].type == "Recipe")
        #expect(preview.missing == ["canonical URL", "deep link"])
    }

    @Test func anArticleTakesItsHeadlineFromAJSONLDGraphAndItsLinkFromTwitter() throws {
        let markup = try Self.read("article.html")
        let preview = markup.preview
        // No Open Graph or Twitter title: the JSON-LD headline comes before <title>.
        #expect(preview.title == .init(source: "json-ld", text: "Tide tables, explained"))
        #expect(preview.description == .init(source: "twitter:description", text: "Reading tide tables, simply."))
        #expect(preview.image == .init(source: "twitter:image", text: "https://news.example.com/img/tides.png"))
        #expect(preview.deepLink == .init(source: "twitter:app:url:iphone", text: "harbourtimes://article/tides"))
        #expect(markup.declaredCharset == "utf-8")
        #expect(preview.missing.isEmpty)
    }

    @Test func whenEveryStandardSpeaksThePrecedenceDecides() throws {
        let markup = try Self.read("everything.html")
        let preview = markup.preview
        #expect(preview.title?.source == "og:title" && preview.description?.source == "og:description")
        #expect(preview.image?.source == "og:image")
        #expect(preview.url?.text == "https://every.example.com/thing")
        #expect(preview.deepLink?.text == "everyapp://thing")
        #expect(preview.appStoreID?.text == "987654321")
        // JSON-LD before microdata.
        #expect(preview.ratingValue == 4.2 && preview.ratingCount == 50 && preview.ratingSource == "json-ld")
        #expect(preview.price?.text == "5 EUR")
        #expect(markup.things.map(\.source) == ["json-ld", "microdata"])
        #expect(markup.things[1].ratingValue == 3.1 && markup.things[1].ratingCount == 7 && markup.things[1].price == "6.00")
        #expect(markup.metaKeywords == ["one", "two", "three"])
        // With the first of each removed, the next one shows.
        var withoutOpenGraph = markup
        for key in ["og:title", "og:description", "og:image", "al:ios:url"] { withoutOpenGraph.properties[key] = nil }
        withoutOpenGraph.canonicalURL = nil
        let next = withoutOpenGraph.preview
        #expect(next.title?.text == "Twitter title" && next.description?.text == "Twitter description")
        #expect(next.image?.text == "https://every.example.com/twitter.png")
        #expect(next.url?.text == "https://every.example.com/thing?from=og")
        #expect(next.deepLink?.text == "everyapp://thing?from=twitter")
    }

    @Test func aBrokenPageIsReadAsABrowserWouldAndItsMistakesAreNamed() throws {
        let markup = try Self.read("broken.html")
        // Markup after an unclosed <title>, a second <head> and meta in <body> are all read.
        #expect(markup.metaDescription == "A page with every mistake")
        #expect(markup.preview.title == .init(source: "og:title", text: "Broken, but readable"))
        let problems = Dictionary(markup.problems.map { ($0.source, $0.message) }, uniquingKeysWith: { first, _ in first })
        #expect(problems["og:image"] == "\"/img/relative.png\" is not an absolute URL")
        #expect(problems["json-ld block 1"]?.hasPrefix("not JSON: ") == true)
        #expect(problems["apple-itunes-app app-id"] == "\"notanumber\" is not a number")
        #expect(problems["apple-itunes-app app-argument"] == "\"page/relative\" is not an absolute URL")
        #expect(markup.preview.image == nil)
        // The second block still counts: its action's URL template is the deep link.
        #expect(markup.preview.deepLink == .init(source: "json-ld potentialAction", text: "brokenapp://search?q={q}"))
    }

    @Test func aPageInTheCharsetItDeclaresIsDecoded() throws {
        let markup = try Self.read("latin1.html")
        #expect(markup.htmlTitle == "Café crème")
        #expect(markup.declaredCharset == "iso-8859-1")
    }

    /// Each unreadable page, and what the error must say.
    static let unreadable: [(name: String, bytes: [UInt8], message: String)] = [
        ("declares UTF-8, is not", Array("<html><head><meta charset=\"utf-8\"><title>Caf".utf8) + [0xE9] + Array("</title></head></html>".utf8),
         "the page declares charset utf-8 but is not valid UTF-8 (byte 45)"),
        ("declares nothing, is not UTF-8", Array("<p>caf".utf8) + [0xE9, 0x0A], "the page is not valid UTF-8 (byte 7) and declares no charset"),
        ("an unknown charset", Array("<html><head><meta charset=\"x-made-up\"></head></html>".utf8),
         "the page declares charset \"x-made-up\", which is not one libxml2 decodes"),
        ("binary", [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00], "not HTML: a NUL byte at byte 9 (binary data)"),
        ("plain text", Array("Just some words, no markup.\n".utf8), "not HTML: the page does not begin with markup"),
        ("too large", Array(repeating: UInt8(ascii: " "), count: WebMarkupReader.maximumBytes + 1),
         "the page is \(WebMarkupReader.maximumBytes + 1) bytes; the limit is \(WebMarkupReader.maximumBytes)"),
    ]

    @Test(arguments: unreadable.indices)
    func anUnreadablePageIsRefusedWithItsReason(_ index: Int) throws {
        let page = Self.unreadable[index]
        #expect(throws: WebMarkupError(message: page.message), "\(page.name)") { try WebMarkupReader.read(page.bytes) }
    }

    /// "İ" lowercases to two scalars: a charset found in the lowercased
    /// content is cut from that same string, never from the original.
    @Test func aContentTypeWhoseLowercaseIsLongerIsReadWithoutTrapping() throws {
        let page = #"<html><head><meta http-equiv="Content-Type" content="İİİİ text/html; charset=UTF-8"><title>T</title></head></html>"#
        #expect(try WebMarkupReader.read(Array(page.utf8)).declaredCharset == "utf-8")
    }

    @Test func theLyingCharsetFixtureIsRefused() throws {
        #expect(throws: WebMarkupError.self) { try Self.read("lying-charset.html") }
    }

    @Test func onlyTheFirstSchemaOrgItemsAreRead() throws {
        let item = #"<div itemscope itemtype="https://schema.org/Thing"><span itemprop="name">n</span></div>"#
        let block = #"<script type="application/ld+json">{"name": "ld"}</script>"#
        let page = "<html><head>" + String(repeating: block, count: 40) + "</head><body>" + String(repeating: item, count: 5_000)
            + "</body></html>"
        let markup = try WebMarkupReader.read(Array(page.utf8))
        #expect(markup.things.filter { $0.source == "json-ld" }.count == WebMarkupReader.maximumThings)
        #expect(markup.things.filter { $0.source == "microdata" }.count == WebMarkupReader.maximumThings)
    }

    /// Pages cut short and with bytes changed at random (seeded) are read or
    /// refused with a reason, never trap: every byte of a page is hostile.
    @Test func mangledPagesAreReadOrRefusedNeverTrap() throws {
        var random = SplitMix64(seed: 38)
        let pages = try ["product.html", "recipe.html", "article.html", "everything.html", "broken.html", "latin1.html"].map(Self.page)
        var read = 0
        var refused = 0
        for round in 0..<600 {
            var bytes = pages[round % pages.count]
            for _ in 0..<(1 + Int(random.next() % 8)) {
                let position = Int(random.next() % UInt64(bytes.count))
                switch random.next() % 3 {
                case 0: bytes[position] = UInt8(truncatingIfNeeded: random.next())
                case 1: bytes.removeSubrange(position...)
                default: bytes.insert(contentsOf: Array("<\"'>&{}[]<!--".utf8).shuffled(using: &random), at: position)
                }
                if bytes.isEmpty { bytes = [UInt8(ascii: "<")] }
            }
            do {
                _ = try WebMarkupReader.read(bytes).preview
                read += 1
            } catch {
                refused += 1
            }
        }
        #expect(read > 0 && refused > 0)
    }

    @Test func deeplyNestedMarkupIsReadWithoutExhaustingTheStack() throws {
        let depth = 100_000
        let page = "<html><head><title>Deep</title></head><body>" + String(repeating: "<div>", count: depth) + "x"
            + String(repeating: "</div>", count: depth) + "</body></html>"
        #expect(try WebMarkupReader.read(Array(page.utf8)).htmlTitle == "Deep")
    }

    /// libxml2 keeps no element deeper than 257 from the root: a microdata
    /// name under 300 levels is not in its tree, and the page says so as a
    /// problem instead of losing it without a word; at 200 it is read.
    @Test func markupDeeperThanLibxml2ReadsIsReportedNotLost() throws {
        func page(_ depth: Int) -> [UInt8] {
            Array(("<html><body><div itemscope itemtype=\"https://schema.org/Thing\">" + String(repeating: "<div>", count: depth)
                   + "<span itemprop=\"name\">Deep Name</span>" + String(repeating: "</div>", count: depth) + "</div></body></html>").utf8)
        }
        let shallow = try WebMarkupReader.read(page(200))
        #expect(shallow.things.first?.name == "Deep Name" && shallow.problems.isEmpty, "\(shallow.problems)")
        let deep = try WebMarkupReader.read(page(300))
        #expect(deep.things.first?.name == nil)
        #expect(deep.problems.contains { $0.source == "page" && $0.message.contains("as deep as libxml2 reads") }, "\(deep.problems)")
    }

    /// An element's text is gathered as the walk passes it: a property's
    /// value is its text with whitespace collapsed, cut at 4,096 characters,
    /// and its control characters (a JSON-LD `\u0000`, say) left out.
    @Test func valuesAreTheirTextCleanedAndCutAtTheirLimit() throws {
        let words = String(repeating: "word  \n\t ", count: 2_000)
        let page = "<html><head><script type=\"application/ld+json\">{\"@type\": \"Thing\", \"name\": \"Zero\\u0000Day\\u001b[2J\"}</script>"
            + "</head><body><div itemscope itemtype=\"https://schema.org/Thing\"><p itemprop=\"description\"><b>\(words)</b>"
            + "<i>\(words)</i></p></div></body></html>"
        let markup = try WebMarkupReader.read(Array(page.utf8))
        #expect(markup.things.first?.name == "ZeroDay[2J")
        let description = try #require(markup.things.last?.description)
        #expect(description.count == 4_096 && description.hasPrefix("word word") && !description.contains("  "))
    }
}

/// What `cloud crawl` records of a page (`WebMarkup.crawledPage`).
@Suite struct CrawledPageOfMarkupTests {
    @Test func aProductPageIsRecordedWithEveryFieldItsPreviewShows() throws {
        let page = try #require(try WebMarkupReaderTests.read("product.html").crawledPage)
        #expect(page.url == "https://shop.example.com/p/trail-runner-2" && page.title == "Trail Runner 2")
        #expect(page.deepLink == "outdoorshop://product/trail-runner-2" && page.appStoreID == "123456789")
        #expect(page.rating == 4.5 && page.ratingCount == 12 && page.price == "119.99 USD")
        #expect(page.keywords == ["shoes", "running", "trail"] && page.type == "product")
    }

    @Test func aPageWithoutACanonicalURLIsNotRecorded() throws {
        #expect(try WebMarkupReaderTests.read("recipe.html").crawledPage == nil)
    }
}
