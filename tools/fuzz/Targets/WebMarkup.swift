// Fuzz target web-markup: WebMarkup's `WebMarkupReader.read`, libxml2's HTML
// parser and the walk over what it made, as `cloud crawl` reads a page.
//
// Every input is read or refused with a `WebMarkupError`; a page that is read
// has a preview whose fields are non-empty, whose URL and images are absolute
// http or https URLs and whose deep link is one too or of the app's schemes,
// whose text holds no NUL, which lists as missing exactly the fields it lacks,
// and which can be recorded (`CrawledPage.textProblem`).
import Foundation
import SyncWire
import WebMarkup

enum Target {
    static func run(_ bytes: [UInt8]) {
        guard case .success(let markup) = Result(catching: { () throws(WebMarkupError) in
            try WebMarkupReader.read(bytes, linkSchemes: ["myapp"])
        }) else {
            return
        }
        let preview = markup.preview
        let shown: [(String, WebMarkup.Value?)] = [("title", preview.title), ("description", preview.description),
                                                   ("image", preview.image), ("canonical URL", preview.url),
                                                   ("deep link", preview.deepLink)]
        for (name, value) in shown {
            contract((value == nil) == preview.missing.contains(name), "\(name) is \(String(describing: value)) but missing says \(preview.missing)")
            contract(value.map { !$0.text.isEmpty } ?? true, "\(name) is empty")
        }
        for value in [preview.image, preview.url].compactMap({ $0 }) {
            let scheme = URLComponents(string: value.text)?.scheme?.lowercased()
            contract(scheme == "http" || scheme == "https", "\(value.source) \(value.text) is not an http or https URL")
        }
        if let link = preview.deepLink {
            let scheme = URLComponents(string: link.text)?.scheme?.lowercased()
            contract(["http", "https", "myapp"].contains(scheme ?? ""), "\(link.source) \(link.text) is not a link the app allows")
        }
        for (name, value) in shown {
            contract(!(value?.text.utf8.contains(0) ?? false), "\(name) holds a NUL")
        }
        if let page = markup.crawledPage {
            contract(page.textProblem == nil, "the page cannot be recorded: its \(page.textProblem ?? "")")
        }
        contract(markup.things.count <= 2 * WebMarkupReader.maximumThings, "\(markup.things.count) things read")
    }

    /// None made here: tools/fuzz/corpus/web-markup is a link to the
    /// reader's fixture pages (Tests/WebMarkupTests/Pages), so the seeds are
    /// the pages the tests read, kept in one place.
    static func seeds() throws -> [(String, [UInt8])] {
        []
    }
}
