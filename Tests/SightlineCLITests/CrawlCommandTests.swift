import CloudCore
import CloudSQLite
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
        let result = try CLIRunner.run(["cloud", "crawl", "--preview", "--link-scheme", "outdoorshop", "--json", Self.pages.path])
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
        let result = try CLIRunner.run(["cloud", "crawl", "--preview", "--link-scheme", "outdoorshop",
                                          Self.pages.appendingPathComponent("product.html").path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("Trail Runner 2"))
        #expect(result.stdout.contains("(og:title)"))
        #expect(!result.stdout.contains("missing:"))
    }

    @Test func crawlRecordsThePagesWithAURLAndSaysWhatBecameOfEach() throws {
        let store = try ScratchDirectory.make("sightline-crawl").appendingPathComponent("cloud.sqlite").path
        try CloudIndex(at: .file(store)).registerApp(AppID("com.example.shop"), enrolmentSecret: "enrolment-secret-for-tests")
        let arguments = ["cloud", "crawl", "--db", store, "--app", "com.example.shop", "--link-scheme", "outdoorshop", "--json",
                         Self.pages.path]
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

    /// A page's size is what the file opened says, not the path: a link to
    /// a file past the limit is refused by its target's size, and a FIFO or
    /// a device, which have no size, are no pages.
    @Test func aLinkToAFileOverTheLimitOrAFIFOIsRefusedWithoutBeingRead() throws {
        let directory = try ScratchDirectory.make("sightline-crawl-links")
        let large = directory.appendingPathComponent("large.bin")
        #expect(FileManager.default.createFile(atPath: large.path, contents: nil))
        let handle = try FileHandle(forWritingTo: large)
        try handle.truncate(atOffset: 200 * 1024 * 1024)
        try handle.close()
        let link = directory.appendingPathComponent("page.html").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: large.path)
        let linked = try CLIRunner.run(["cloud", "crawl", "--preview", "--json", link])
        #expect(linked.status == 1)
        #expect(try JSONReader.parse(linked.stdout)["pages"]?.array?.first?["error"]?.stringValue
                == "the page is 209715200 bytes; the limit is 2097152", "\(linked.stdout)")
        let fifo = directory.appendingPathComponent("fifo.html").path
        #expect(mkfifo(fifo, 0o600) == 0)
        for path in [fifo, "/dev/zero"] {
            let special = try CLIRunner.run(["cloud", "crawl", "--preview", "--json", path])
            #expect(special.status == 1, "\(path): \(special.stderr)")
            #expect(special.stdout.contains("not a regular file"), "\(path): \(special.stdout)")
        }
    }

    /// A URL that leaves the cloud as a link is http or https, or, for a
    /// deep link, one of the schemes the crawl names as the app's: the
    /// others are malformed markup, reported and never recorded.
    @Test func linksOfOtherSchemesAreMalformedMarkupAndNeverRecorded() throws {
        let directory = try ScratchDirectory.make("sightline-crawl-schemes")
        let page = directory.appendingPathComponent("page.html")
        try Data("""
            <html><head><link rel="canonical" href="javascript:alert(1)">
            <meta property="og:url" content="https://example.com/p">
            <meta property="og:image" content="data:image/png;base64,AAAA">
            <meta name="twitter:image" content="file:///etc/passwd">
            <meta property="al:ios:url" content="vbscript:msgbox">
            <meta name="twitter:app:url:iphone" content="myapp://p">
            <title>P</title></head><body></body></html>
            """.utf8).write(to: page)
        let result = try CLIRunner.json(["cloud", "crawl", "--preview", "--link-scheme", "myapp", "--json", page.path])
        let shown = try #require(result["pages"]?.array?.first)
        #expect(shown["preview"]?["url"]?["text"] == .string("https://example.com/p"))
        #expect(shown["preview"]?["image"] == .null)
        #expect(shown["preview"]?["deepLink"]?["text"] == .string("myapp://p"))
        let sources = Set(shown["problems"]?.array?.compactMap { $0["source"]?.stringValue } ?? [])
        #expect(sources == ["canonical", "og:image", "twitter:image", "al:ios:url"], "\(sources)")
        let refused = try CLIRunner.run(["cloud", "crawl", "--preview", "--link-scheme", "javascript", page.path])
        #expect(refused.status == 64 && refused.stderr.contains("is not an app's URL scheme"), "\(refused.stderr)")
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
