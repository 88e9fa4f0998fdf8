import ArgumentParser
import CloudCore
import CloudPostgres
import CloudSQLite
import Foundation
import IndexModel
import SyncWire
import WebMarkup

/// `cloud crawl`: what a crawler reads of local HTML pages. With `--db` and
/// `--app` it records each page in the cloud (`CloudStore.recordPages`);
/// with `--preview` it shows how each would show in search and records
/// nothing: the "web markup tool" for people checking their pages
/// (`docs/WEBMARKUP.md`).
struct CrawlCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "crawl",
        abstract: "Read the web markup of local HTML pages and record them in the cloud, or show how each would appear in search.",
        discussion: """
            Reads each HTML file, and every .html and .htm file under each folder, with libxml2's \
            HTML parser (no network access). With --db and --app, records each page in the app's \
            cloud log under its canonical URL (a page the cloud has already, unchanged, is left out); \
            a public activity whose web page URL is a page's then shows the page's title, \
            description, image, rating, price and deep link. Servers may serve the store meanwhile. \
            With --preview, prints what each page's markup gives \
            (each field with the markup it came from), what a good result has that it lacks, and what \
            is malformed, recording nothing. A page that cannot be read (too large, not HTML, not in \
            the charset it declares, or, to be recorded, without a canonical URL) is reported and the \
            rest go on. Exit status 1 when some page could not be read or recorded, or has malformed \
            markup.
            """
    )

    @Flag(name: .long, help: "Show what each page gives, recording nothing.")
    var preview = false

    @Option(name: .long, help: ArgumentHelp(
        "The cloud store to record the pages in: a SQLite file, or postgres://USER@HOST:PORT/DATABASE.", valueName: "path-or-url"))
    var db: String?

    @Option(name: .long, help: ArgumentHelp("With --db: the app (registered) whose pages these are.", valueName: "name"))
    var app: AppID?

    @Option(name: .customLong("link-scheme"), help: ArgumentHelp("""
        A URL scheme of the app's own that its deep links may use (App Links, Twitter's app card, the Smart App \
        Banner's argument, a schema.org action), besides http and https; repeat for more.
        """, valueName: "scheme"))
    var linkSchemes: [String] = []

    @OptionGroup(title: "PostgreSQL") var postgres: PostgresOptions

    @OptionGroup var output: JSONOption

    @OptionGroup var progressOption: ProgressOption

    @Argument(help: ArgumentHelp("HTML files, or folders of them.", valueName: "path"))
    var paths: [String]

    func validate() throws {
        guard !paths.isEmpty else { throw ValidationError("give at least one HTML file or folder") }
        for scheme in linkSchemes {
            // RFC 3986: a letter, then letters, digits, +, - and .
            guard let first = scheme.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic,
                  scheme.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "+-.".unicodeScalars.contains($0)) }),
                  !LinkRule.refusedSchemes.union(["http", "https"]).contains(scheme.lowercased()) else {
                throw ValidationError("--link-scheme \(TextRule.printable(scheme, limit: 64)) is not an app's URL scheme (a letter, then letters, digits, +, - or .; not javascript, data, vbscript, file, http or https)")
            }
        }
        if preview {
            guard db == nil, app == nil else { throw ValidationError("--preview records nothing: give it without --db and --app") }
            return
        }
        guard let db, app != nil else {
            throw ValidationError("give --db and --app to record the pages, or --preview to show what they give")
        }
        if PostgresLocation.isPostgresURL(db) { try CloudStoreOption.validatePostgresURL(db, option: "--db") }
    }

    /// The app's link schemes, lowercase.
    var schemes: Set<String> { Set(linkSchemes.map { $0.lowercased() }) }

    func run() throws {
        if let db, let app, !preview {
            try record(db: db, app: app)
            return
        }
        var pages: [JSONValue] = []
        var failed = false
        for path in try CrawlCommand.files(paths) {
            let read = CrawlCommand.read(path, linkSchemes: schemes)
            switch read {
            case .failure(let error):
                failed = true
                if output.json {
                    pages.append(.object(["path": .string(path), "error": .string(error.message)]))
                } else {
                    Output.line("\(path): \(error.message)")
                }
            case .success(let markup):
                failed = failed || !markup.problems.isEmpty
                if output.json {
                    pages.append(CrawlCommand.json(path, markup))
                } else {
                    CrawlCommand.print(path, markup)
                }
            }
        }
        if output.json { Output.json(.object(["pages": .array(pages)])) }
        if failed { throw ExitStatus.checkFailed }
    }

    /// Reads every page and records those that read, with a URL, in one
    /// `recordPages`; reports each page, what became of it, and a total.
    private func record(db: String, app: AppID) throws {
        struct Report {
            var path: String
            var url: String?
            var error: String?
            var problems: [WebMarkup.Problem] = []
        }
        var reports: [Report] = []
        var pages: [CrawledPage] = []
        let files = try CrawlCommand.files(paths)
        let line = ProgressLine(mode: progressOption.mode, phase: "reading", total: files.count, unit: "pages")
        defer { line.finish() }
        for (index, path) in files.enumerated() {
            line.update(done: index)
            switch CrawlCommand.read(path, linkSchemes: schemes) {
            case .failure(let error):
                reports.append(Report(path: path, error: error.message))
            case .success(let markup):
                guard let page = markup.crawledPage else {
                    reports.append(Report(path: path, error: "the page gives no URL (<link rel=\"canonical\"> or og:url): not recorded",
                                          problems: markup.problems))
                    continue
                }
                reports.append(Report(path: path, url: page.url, problems: markup.problems))
                pages.append(page)
            }
        }
        line.begin(phase: "recording \(pages.count) pages", total: nil, unit: "")
        if !PostgresLocation.isPostgresURL(db), !FileManager.default.fileExists(atPath: db) {
            line.finish()
            Output.error("error: no cloud store at \(db)")
            throw ExitStatus.storeUnavailable
        }
        let cloud = try CloudStoreOption.open(db, postgres: postgres.settings, options: CloudOptions())
        let outcome: CrawlOutcome
        do {
            outcome = try cloud.recordPages(pages, app: app)
            line.finish()
        } catch {
            line.finish()
            Output.error("error: \(error.commandLineMessage)")
            throw ExitStatus.storeUnavailable
        }
        let unchanged = Set(outcome.unchanged)
        func status(_ report: Report) -> String {
            guard report.error == nil, let url = report.url else { return "failed" }
            return unchanged.contains(url) ? "unchanged" : "recorded"
        }
        let failed = reports.filter { $0.error != nil }.count
        if output.json {
            Output.json(.object([
                "pages": .array(reports.map { report in
                    .object(["path": .string(report.path), "url": report.url.map(JSONValue.string) ?? .null,
                             "status": .string(status(report)), "error": report.error.map(JSONValue.string) ?? .null,
                             "problems": CrawlCommand.json(report.problems)])
                }),
                "recorded": .integer(Int64(outcome.recorded.count)), "unchanged": .integer(Int64(outcome.unchanged.count)),
                "failed": .integer(Int64(failed)), "logRows": .integer(Int64(outcome.frames)),
            ]))
        } else {
            for report in reports {
                Output.line("\(report.path): \(report.error ?? "\(status(report)) as \(report.url ?? "")")")
                for problem in report.problems { Output.line("  malformed: \(problem.source): \(problem.message)") }
            }
            Output.line("\(outcome.recorded.count) pages recorded in \(outcome.frames) cloud log rows of \(app), "
                        + "\(outcome.unchanged.count) unchanged, \(failed) failed")
        }
        if failed > 0 || reports.contains(where: { !$0.problems.isEmpty }) { throw ExitStatus.checkFailed }
    }

    /// The files `paths` name: each file, and the .html and .htm files under
    /// each folder, sorted; a path that does not exist is a usage error.
    static func files(_ paths: [String]) throws -> [String] {
        var files: [String] = []
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                Output.error("error: \(path): no such file or folder")
                throw ExitStatus.invalidInput
            }
            guard isDirectory.boolValue else {
                files.append(path)
                continue
            }
            let found = FileManager.default.enumerator(atPath: path)?.compactMap { $0 as? String }
                .filter { ["html", "htm"].contains(($0 as NSString).pathExtension.lowercased()) } ?? []
            files.append(contentsOf: found.sorted().map { (path as NSString).appendingPathComponent($0) })
        }
        return files
    }

    /// The page at `path`, read through one open file: its size is what
    /// `fstat` says of the file opened (a symbolic link's target, not the
    /// link), and at most one byte past the limit is read whatever it says,
    /// so a file that grows or a device file costs no more.
    static func read(_ path: String, linkSchemes: Set<String>) -> Result<WebMarkup, WebMarkupError> {
        let limit = WebMarkupReader.maximumBytes
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { return .failure(WebMarkupError(message: "cannot read the file: \(String(cString: strerror(errno)))")) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            return .failure(WebMarkupError(message: "cannot read the file: it is not a regular file"))
        }
        guard status.st_size <= limit else {
            return .failure(WebMarkupError(message: "the page is \(status.st_size) bytes; the limit is \(limit)"))
        }
        var bytes = [UInt8](repeating: 0, count: limit + 1)
        var filled = 0
        while filled < bytes.count {
            let got = bytes.withUnsafeMutableBytes { buffer in
                Foundation.read(descriptor, buffer.baseAddress! + filled, buffer.count - filled)
            }
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else { return .failure(WebMarkupError(message: "cannot read the file: \(String(cString: strerror(errno)))")) }
            if got == 0 { break }
            filled += got
        }
        guard filled <= limit else {
            return .failure(WebMarkupError(message: "the page is more than \(limit) bytes; the limit is \(limit)"))
        }
        bytes.removeSubrange(filled...)
        return Result { () throws(WebMarkupError) in try WebMarkupReader.read(bytes, linkSchemes: linkSchemes) }
    }

    static func print(_ path: String, _ markup: WebMarkup) {
        let preview = markup.preview
        Output.line(path)
        var rows: [[String]] = []
        func row(_ name: String, _ value: WebMarkup.Value?) {
            if let value { rows.append(["  " + name, value.text, "(\(value.source))"]) }
        }
        row("title", preview.title)
        row("description", preview.description)
        row("image", preview.image)
        if let rating = preview.ratingValue {
            rows.append(["  rating", String(format: "%g", rating) + (preview.ratingCount.map { " (\($0) ratings)" } ?? ""),
                         "(\(preview.ratingSource ?? ""))"])
        }
        row("price", preview.price)
        row("url", preview.url)
        row("deep link", preview.deepLink)
        row("App Store id", preview.appStoreID)
        Output.table(rows)
        if !preview.missing.isEmpty { Output.line("  missing: " + preview.missing.joined(separator: ", ")) }
        for problem in markup.problems { Output.line("  malformed: \(problem.source): \(problem.message)") }
    }

    /// Malformed markup as `--json` prints it: each with its source and message.
    static func json(_ problems: [WebMarkup.Problem]) -> JSONValue {
        .array(problems.map { .object(["source": .string($0.source), "message": .string($0.message)]) })
    }

    static func json(_ path: String, _ markup: WebMarkup) -> JSONValue {
        let preview = markup.preview
        func value(_ value: WebMarkup.Value?) -> JSONValue {
            value.map { .object(["text": .string($0.text), "source": .string($0.source)]) } ?? .null
        }
        var shown: JSONObject = [
            "title": value(preview.title), "description": value(preview.description), "image": value(preview.image),
            "url": value(preview.url), "deepLink": value(preview.deepLink), "appStoreID": value(preview.appStoreID),
            "price": value(preview.price),
        ]
        shown["rating"] = preview.ratingValue.map { rating in
            .object(["value": .double(rating), "count": preview.ratingCount.map { .integer(Int64($0)) } ?? .null,
                     "source": .string(preview.ratingSource ?? "")])
        } ?? .null
        return .object([
            "path": .string(path),
            "preview": .object(shown),
            "missing": .array(preview.missing.map(JSONValue.string)),
            "problems": json(markup.problems),
            "charset": markup.declaredCharset.map(JSONValue.string) ?? .null,
        ])
    }
}
