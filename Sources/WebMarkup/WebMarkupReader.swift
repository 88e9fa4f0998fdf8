import Foundation
import IndexModel
import SyncWire

/// A page that cannot be read at all: too large, not HTML, or not in the
/// charset it declares. The message says what is wrong and where.
public struct WebMarkupError: Error, Hashable, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }

    public init(message: String) {
        self.message = message
    }
}

/// Reads a page's markup with libxml2's HTML parser (`HTMLDocument`):
/// `<title>`, meta description and keywords, the canonical link, Smart App
/// Banner, App Links, Twitter Cards, Open Graph, and schema.org in JSON-LD
/// and in microdata. Every value is checked where it is read: a URL must be
/// absolute, JSON-LD must be JSON, a rating a finite number; what fails is a
/// `WebMarkup.Problem` and the rest of the page is still read.
public enum WebMarkupReader {
    /// The largest page read, in bytes.
    public static let maximumBytes = 2 * 1024 * 1024
    /// The longest text kept of one value, in characters.
    static let maximumText = 4096
    /// The most JSON-LD blocks and top-level microdata items read of a page:
    /// each microdata item is found by walking the page's elements, so a
    /// page of thousands of them would cost that many walks.
    public static let maximumThings = 16

    /// The `meta` names read as App Links, Twitter Cards and Open Graph.
    static let propertyNames: Set<String> = [
        "al:ios:url", "al:ios:app_store_id", "al:ios:app_name",
        "twitter:title", "twitter:description", "twitter:image", "twitter:app:url:iphone",
        "og:title", "og:description", "og:image", "og:url", "og:type",
    ]
    /// Those whose value is a URL, which must be absolute.
    static let urlProperties: Set<String> = ["al:ios:url", "twitter:image", "twitter:app:url:iphone", "og:image", "og:url"]
    /// Those whose URL is a deep link into the app.
    static let deepLinkProperties: Set<String> = ["al:ios:url", "twitter:app:url:iphone"]

    /// Reads the page `bytes`. A deep link (App Links, Twitter's app card,
    /// the Smart App Banner's argument, a schema.org action) may be an
    /// `http` or `https` URL or use one of `linkSchemes`, the app's own
    /// (lowercase); every other URL must be `http` or `https`.
    ///
    /// The page is read in one walk over libxml2's tree that visits each
    /// node once: a value taken from an element's text is gathered as the
    /// walk passes its text nodes, and stops at `maximumText` characters.
    ///
    /// - Throws: `WebMarkupError` when the page is over `maximumBytes`, is not
    ///   HTML (binary data, or text that does not begin with markup), is not
    ///   valid UTF-8 while declaring UTF-8 or nothing, or declares a charset
    ///   libxml2 does not know.
    public static func read(_ bytes: [UInt8], linkSchemes: Set<String> = []) throws(WebMarkupError) -> WebMarkup {
        guard bytes.count <= maximumBytes else {
            throw WebMarkupError(message: "the page is \(bytes.count) bytes; the limit is \(maximumBytes)")
        }
        var body = bytes[...]
        if body.starts(with: [0xEF, 0xBB, 0xBF]) { body = body.dropFirst(3) }
        if let nul = body.firstIndex(of: 0) {
            throw WebMarkupError(message: "not HTML: a NUL byte at byte \(nul + 1) (binary data)")
        }
        guard body.first(where: { ![0x20, 0x09, 0x0A, 0x0D, 0x0C].contains($0) }) == UInt8(ascii: "<") else {
            throw WebMarkupError(message: "not HTML: the page does not begin with markup")
        }
        guard let document = HTMLDocument(Array(body)) else {
            throw WebMarkupError(message: "not HTML: libxml2 could not read it")
        }
        var reading = PageReading(linkSchemes: linkSchemes)
        document.walk { step in reading.take(step) }
        let markup = reading.finish()
        try checkCharset(markup.declaredCharset, body)
        return markup
    }

    /// The page must be in the charset it declares: UTF-8 (declared or not)
    /// is checked byte by byte; another charset must be one libxml2 decodes.
    static func checkCharset(_ declared: String?, _ body: ArraySlice<UInt8>) throws(WebMarkupError) {
        let name = declared?.lowercased()
        if name == nil || name == "utf-8" || name == "utf8" {
            if let offset = TextRule.firstInvalidUTF8(Array(body)) {
                throw WebMarkupError(message: declared.map { "the page declares charset \(TextRule.printable($0, limit: 64)) but is not valid UTF-8 (byte \(offset + 1))" }
                                     ?? "the page is not valid UTF-8 (byte \(offset + 1)) and declares no charset")
            }
        } else if let declared, !libxml2KnowsCharset(declared) {
            throw WebMarkupError(message: "the page declares charset \"\(TextRule.printable(declared, limit: 64))\", which is not one libxml2 decodes")
        }
    }

    static func readMeta(_ element: HTMLElement, linkSchemes: Set<String>, into markup: inout WebMarkup) {
        if let charset = element.attribute("charset"), markup.declaredCharset == nil {
            markup.declaredCharset = charset.trimmingCharacters(in: .whitespaces)
        }
        // Searched and cut in the same (lowercased) string: an index of one
        // string is no index of another, whose lowercasing may differ in length.
        if element.attribute("http-equiv")?.lowercased() == "content-type", markup.declaredCharset == nil,
           let content = element.attribute("content")?.lowercased(), let range = content.range(of: "charset=") {
            markup.declaredCharset = String(content[range.upperBound...]).trimmingCharacters(in: CharacterSet(charactersIn: " \"';"))
        }
        guard let key = (element.attribute("property") ?? element.attribute("name"))?.lowercased(),
              let raw = element.attribute("content") else { return }
        let content = clean(raw)
        switch key {
        case "description":
            if markup.metaDescription == nil { markup.metaDescription = content }
        case "keywords":
            if markup.metaKeywords.isEmpty {
                markup.metaKeywords = content.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            }
        case "apple-itunes-app":
            guard markup.appBanner.isEmpty else { return }
            for pair in content.split(separator: ",") {
                let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard parts.count == 2, ["app-id", "app-argument"].contains(parts[0].lowercased()) else { continue }
                let name = parts[0].lowercased()
                if name == "app-argument" {
                    if let url = absolute(parts[1], source: "apple-itunes-app app-argument", kind: .deepLink, linkSchemes: linkSchemes,
                                          &markup.problems) {
                        markup.appBanner[name] = url
                    }
                } else if parts[1].allSatisfy(\.isNumber), !parts[1].isEmpty {
                    markup.appBanner[name] = parts[1]
                } else {
                    markup.problems.append(.init(source: "apple-itunes-app app-id", message: "\"\(parts[1].prefix(64))\" is not a number"))
                }
            }
        default:
            guard propertyNames.contains(key), markup.properties[key] == nil else { return }
            if urlProperties.contains(key) {
                let kind: LinkKind = deepLinkProperties.contains(key) ? .deepLink : .web
                if let url = absolute(raw, source: key, kind: kind, linkSchemes: linkSchemes, &markup.problems) {
                    markup.properties[key] = url
                }
            } else {
                markup.properties[key] = content
            }
        }
    }

    // MARK: - schema.org

    /// The things of one JSON-LD block: an object, an array of them, or a
    /// `@graph`; those with a name (or an article's headline).
    static func things(inJSONLD text: String, block: Int, linkSchemes: Set<String>,
                       _ problems: inout [WebMarkup.Problem]) -> [WebMarkup.Thing] {
        let source = "json-ld"
        let value: JSONValue
        do {
            value = try JSONReader.parse(text)
        } catch {
            problems.append(.init(source: "json-ld block \(block)", message: "not JSON: \(error)"))
            return []
        }
        var objects: [JSONObject] = []
        var pending = [value]
        var visited = 0
        while let next = pending.popLast(), visited < 1000 {
            visited += 1
            switch next {
            case .array(let elements): pending.append(contentsOf: elements.reversed())
            case .object(let object):
                if case .array(let graph)? = object["@graph"] { pending.append(contentsOf: graph.reversed()) } else { objects.append(object) }
            default: break
            }
        }
        return objects.compactMap { object in
            let name = string(object["name"]) ?? string(object["headline"])
            guard name != nil || string(object["description"]) != nil else { return nil }
            var thing = WebMarkup.Thing(source: source, type: string(object["@type"]) ?? firstString(object["@type"]), name: name,
                                        description: string(object["description"]))
            if let image = url(in: object["image"]) {
                thing.image = absolute(image, source: "json-ld image", kind: .web, linkSchemes: linkSchemes, &problems)
            }
            if case .object(let rating)? = firstObject(object["aggregateRating"]) {
                thing.ratingValue = number(rating["ratingValue"], source: "json-ld ratingValue", &problems)
                thing.ratingCount = (number(rating["ratingCount"], source: "json-ld ratingCount", &problems)
                    ?? number(rating["reviewCount"], source: "json-ld reviewCount", &problems)).flatMap { Int(exactly: $0.rounded()) }
            }
            if case .object(let offer)? = firstObject(object["offers"]) {
                thing.price = string(offer["price"]) ?? string(offer["lowPrice"]) ?? numberText(offer["price"] ?? offer["lowPrice"])
                thing.priceCurrency = string(offer["priceCurrency"])
            }
            if case .object(let action)? = firstObject(object["potentialAction"]) {
                let target = string(action["target"]) ?? firstObject(action["target"]).flatMap { target in
                    if case .object(let entry) = target { string(entry["urlTemplate"]) } else { nil }
                }
                if let target {
                    thing.actionTarget = absolute(target, source: "json-ld potentialAction target", kind: .deepLink,
                                                  linkSchemes: linkSchemes, &problems)
                }
            }
            return thing
        }
    }

    // MARK: - Values

    /// Whitespace collapsed, control characters left out, at most
    /// `maximumText` characters.
    static func clean(_ text: String) -> String {
        var cleaned = CleanText(limit: maximumText)
        cleaned.append(text)
        return cleaned.text
    }

    /// What a URL may be: a page's own (canonical, image), which must be
    /// `http` or `https`, or a deep link, which may also use the app's schemes.
    enum LinkKind {
        case web
        case deepLink
    }

    /// `text` when it is an absolute URL of a scheme `kind` allows (and
    /// a host, for `http` and `https`), on one line with no control
    /// character; otherwise a problem and nil. `javascript:`, `data:`,
    /// `file:` and the like never leave the cloud as links.
    static func absolute(_ text: String, source: String, kind: LinkKind, linkSchemes: Set<String>,
                         _ problems: inout [WebMarkup.Problem]) -> String? {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        func refuse(_ why: String) -> String? {
            problems.append(.init(source: source, message: "\"\(TextRule.printable(trimmed, limit: 200))\" \(why)"))
            return nil
        }
        guard WireLimits.line.admits(trimmed) else { return refuse("is not a URL on one line of at most 4,096 bytes") }
        guard let scheme = LinkRule.scheme(of: trimmed) else { return refuse("is not an absolute URL") }
        if scheme == "http" || scheme == "https" {
            guard LinkRule.isWeb(trimmed) else { return refuse("is not an absolute URL (it has no host)") }
            return trimmed
        }
        guard kind == .deepLink, LinkRule.isDeepLink(trimmed, schemes: linkSchemes) else {
            let allowed = kind == .deepLink ? "http, https or one of the app's link schemes" : "http or https"
            return refuse("is not a URL a search result may link to: its scheme is not \(allowed)")
        }
        return trimmed
    }

    static func string(_ value: JSONValue?) -> String? {
        if case .string(let text)? = value { return clean(text) }
        return nil
    }

    static func firstString(_ value: JSONValue?) -> String? {
        if case .array(let elements)? = value { return elements.lazy.compactMap { string($0) }.first }
        return nil
    }

    static func firstObject(_ value: JSONValue?) -> JSONValue? {
        switch value {
        case .object?: value
        case .array(let elements)?: elements.first { if case .object = $0 { true } else { false } }
        default: nil
        }
    }

    /// An image: a URL string, an `ImageObject`'s `url`, or the first of an array of them.
    static func url(in value: JSONValue?) -> String? {
        switch value {
        case .string(let text)?: text
        case .object(let object)?: string(object["url"]) ?? string(object["contentUrl"])
        case .array(let elements)?: elements.lazy.compactMap { url(in: $0) }.first
        default: nil
        }
    }

    /// A finite, non-negative number, written as a number or as text.
    static func number(_ value: JSONValue?, source: String, _ problems: inout [WebMarkup.Problem]) -> Double? {
        let parsed: Double?
        switch value {
        case nil, .null?: return nil
        case .integer(let integer)?: parsed = Double(integer)
        case .double(let double)?: parsed = double
        case .string(let text)?: parsed = Double(text.trimmingCharacters(in: .whitespaces))
        default: parsed = nil
        }
        guard let parsed, parsed.isFinite, parsed >= 0 else {
            problems.append(.init(source: source, message: "not a finite, non-negative number"))
            return nil
        }
        return parsed
    }

    static func numberText(_ value: JSONValue?) -> String? {
        switch value {
        case .integer(let integer)?: String(integer)
        case .double(let double)? where double.isFinite: String(double)
        default: nil
        }
    }
}
