import CloudIndex
import Foundation
import IndexModel
import ScratchDirectory
import Testing

/// `cloud crawl`: the web markup tool over the reader's fixture pages
/// (`--preview`), and recording them in a cloud store (`--db --app`).
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

    @Test func crawlRecordsThePagesWithAURLAndSaysWhatBecameOfEach() throws {
        let store = try ScratchDirectory.make("sightline-crawl").appendingPathComponent("cloud.sqlite").path
        try CloudIndex(at: .file(store)).registerApp(AppID("com.example.shop"), enrolmentSecret: "enrolment-secret-for-tests")
        let arguments = ["cloud", "crawl", "--db", store, "--app", "com.example.shop", "--json", Self.pages.path]
        let first = try CLIRunner.run(arguments)
        // lying-charset.html cannot be read; recipe.html, latin1.html and broken.html give no URL.
        #expect(first.status == 1, "\(first.stderr)")
        let report = try JSONReader.parse(first.stdout)
        #expect(report["recorded"] == .integer(3) && report["unchanged"] == .integer(0) && report["failed"] == .integer(4)
                && report["logRows"] == .integer(1), "\(first.stdout)")
        let pages = try #require(report["pages"]?.array)
        let product = try #require(pages.first { $0["path"]?.stringValue?.hasSuffix("/product.html") == true })
        #expect(product["status"] == .string("recorded") && product["url"] == .string("https://shop.example.com/p/trail-runner-2"))
        let recipe = try #require(pages.first { $0["path"]?.stringValue?.hasSuffix("/recipe.html") == true })
        #expect(recipe["status"] == .string("failed") && recipe["error"]?.stringValue?.contains("gives no URL") == true)
        let stats = try CLIRunner.run(["cloud", "stats", "--db", store, "--json"])
        #expect(try JSONReader.parse(stats.stdout)["pages"] == .integer(3), "\(stats.stdout)")

        let again = try CLIRunner.run(Array(arguments.dropLast()) + [Self.pages.appendingPathComponent("product.html").path])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try JSONReader.parse(again.stdout)["unchanged"] == .integer(1))
        let verify = try CLIRunner.run(["journal", "verify", "--db", store])
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
    }

    @Test func crawlRefusesAnAppTheStoreDoesNotHaveAndAStoreThatIsNotThere() throws {
        let directory = try ScratchDirectory.make("sightline-crawl")
        let store = directory.appendingPathComponent("cloud.sqlite").path
        _ = try CloudIndex(at: .file(store))
        let page = Self.pages.appendingPathComponent("product.html").path
        let unknown = try CLIRunner.run(["cloud", "crawl", "--db", store, "--app", "com.example.nobody", page])
        #expect(unknown.status == 3 && unknown.stderr.contains("not registered"), "\(unknown.stderr)")
        let absent = directory.appendingPathComponent("absent.sqlite").path
        let missing = try CLIRunner.run(["cloud", "crawl", "--db", absent, "--app", "com.example.shop", page])
        #expect(missing.status == 3 && missing.stderr.contains("no cloud store"), "\(missing.stderr)")
        #expect(!FileManager.default.fileExists(atPath: absent), "a crawl creates no store")
    }

    @Test func crawlNeedsPreviewOrAStoreAndPathsThatExist() throws {
        let without = try CLIRunner.run(["cloud", "crawl", Self.pages.path])
        #expect(without.status == 64)
        #expect(without.stderr.contains("or --preview"))
        let both = try CLIRunner.run(["cloud", "crawl", "--preview", "--db", "c.sqlite", "--app", "a", Self.pages.path])
        #expect(both.status == 64 && both.stderr.contains("records nothing"))
        let missing = try CLIRunner.run(["cloud", "crawl", "--preview", "/nonexistent/page.html"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("/nonexistent/page.html: no such file or folder"))
    }
}
