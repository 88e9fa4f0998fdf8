import Foundation
import IndexModel
import Testing

/// `cloud crawl --preview`: the web markup tool over the reader's fixture pages.
@Suite struct CrawlCommandTests {
    static let pages = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("WebMarkupTests/Pages")

    @Test func previewShowsWhatEachPageGivesAndTheExitStatusSaysSomeFailed() throws {
        let result = try CLIRunner.run(["cloud", "crawl", "--preview", "--json", Self.pages.path])
        // lying-charset.html cannot be read and broken.html is malformed; the rest are read all the same.
        #expect(result.status == 1, "\(result.stderr)")
        let pages = try #require(try JSONReader.parse(result.stdout)["pages"]?.array)
        #expect(pages.count == 7)
        func page(_ name: String) -> JSONValue? {
            pages.first { $0["path"]?.stringValue?.hasSuffix("/" + name) == true }
        }
        let product = try #require(page("product.html"))
        #expect(product["preview"]?["title"]?["text"] == .string("Trail Runner 2"))
        #expect(product["preview"]?["title"]?["source"] == .string("og:title"))
        #expect(product["preview"]?["deepLink"]?["text"] == .string("outdoorshop://product/trail-runner-2"))
        #expect(product["preview"]?["rating"]?["value"] == .double(4.5))
        #expect(product["missing"]?.array?.isEmpty == true && product["problems"]?.array?.isEmpty == true)
        #expect(page("lying-charset.html")?["error"]?.stringValue?.contains("declares charset utf-8 but is not valid UTF-8") == true)
        let problems = try #require(page("broken.html")?["problems"]?.array)
        #expect(problems.contains { $0["source"] == .string("og:image") })
        #expect(page("recipe.html")?["missing"]?.array == [.string("canonical URL"), .string("deep link")])
    }

    @Test func aGoodPageAloneExitsZeroInWords() throws {
        let result = try CLIRunner.run(["cloud", "crawl", "--preview", Self.pages.appendingPathComponent("product.html").path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("Trail Runner 2"))
        #expect(result.stdout.contains("(og:title)"))
        #expect(!result.stdout.contains("missing:"))
    }

    @Test func crawlNeedsPreviewAndPathsThatExist() throws {
        let without = try CLIRunner.run(["cloud", "crawl", Self.pages.path])
        #expect(without.status == 64)
        #expect(without.stderr.contains("give --preview"))
        let missing = try CLIRunner.run(["cloud", "crawl", "--preview", "/nonexistent/page.html"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("/nonexistent/page.html: no such file or folder"))
    }
}
