import ArgumentParser
import Foundation
import IndexModel
import WebMarkup

/// `cloud crawl --preview PATH...`: what a crawler reads of local HTML pages
/// and how each would show in search, without recording anything: the
/// "web markup tool" for people checking their pages (`docs/WEBMARKUP.md`).
struct CrawlCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "crawl",
        abstract: "Read the web markup of local HTML pages and show how each would appear in search.",
        discussion: """
            Reads each HTML file, and every .html and .htm file under each folder, with libxml2's \
            HTML parser (no network access), and prints what its markup gives (title, description, \
            image, rating, price, canonical URL, deep link, App Store id, each with the markup it came \
            from), what a good result has that it lacks, and what is malformed. A page that cannot be \
            read (too large, not HTML, not in the charset it declares) is reported and the rest go on. \
            Exit status 1 when some page could not be read or has malformed markup.
            """
    )

    @Flag(name: .long, help: "Show what each page gives, recording nothing.")
    var preview = false

    @OptionGroup var output: JSONOption

    @Argument(help: ArgumentHelp("HTML files, or folders of them.", valueName: "path"))
    var paths: [String]

    func validate() throws {
        guard preview else { throw ValidationError("give --preview: cloud crawl shows what pages give and records nothing") }
        guard !paths.isEmpty else { throw ValidationError("give at least one HTML file or folder") }
    }

    func run() throws {
        var pages: [JSONValue] = []
        var failed = false
        for path in try CrawlCommand.files(paths) {
            let read = CrawlCommand.read(path)
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

    /// The page at `path`, its size checked before it is read.
    static func read(_ path: String) -> Result<WebMarkup, WebMarkupError> {
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0
        guard size <= WebMarkupReader.maximumBytes else {
            return .failure(WebMarkupError(message: "the page is \(size) bytes; the limit is \(WebMarkupReader.maximumBytes)"))
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            return .failure(WebMarkupError(message: "cannot read the file"))
        }
        return Result { () throws(WebMarkupError) in try WebMarkupReader.read(Array(data)) }
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
            "problems": .array(markup.problems.map { .object(["source": .string($0.source), "message": .string($0.message)]) }),
            "charset": markup.declaredCharset.map(JSONValue.string) ?? .null,
        ])
    }
}
