import Crypto
import IndexModel

/// What the cloud's crawler recorded of one web page of an app
/// (`sightline cloud crawl`, `docs/WEBMARKUP.md`): the fields a search result
/// shows, chosen from the page's markup. A public activity whose web page URL
/// is `url` shows these instead of anything devices sent (`docs/CLOUD.md`,
/// "Crawled pages").
///
/// Every string fits the wire (`WireLimits.maximumStringBytes`, cut at a
/// character) and there are at most `WireLimits.maximumKeywords` keywords,
/// so every page the initializer makes can be recorded.
public struct CrawledPage: Hashable, Sendable {
    /// The page's canonical URL, which public activities are matched on.
    public var url: String
    public var title: String?
    public var description: String?
    public var keywords: [String]
    public var image: String?
    /// The link into the app (App Links, Twitter's app card, the Smart App
    /// Banner's argument, or a schema.org action).
    public var deepLink: String?
    /// The app's App Store id, digits.
    public var appStoreID: String?
    /// The page's type (`og:type`, or the schema.org thing's type).
    public var type: String?
    /// The schema.org aggregate rating: a finite, non-negative value and how
    /// many rated.
    public var rating: Double?
    public var ratingCount: Int64?
    /// The first offer's price with its currency, as the page gives it.
    public var price: String?

    /// The largest rating count kept: 2^53 − 1, exact as a `Double` and in JSON.
    public static let maximumRatingCount: Int64 = (1 << 53) - 1

    public init(url: String, title: String? = nil, description: String? = nil, keywords: [String] = [], image: String? = nil,
                deepLink: String? = nil, appStoreID: String? = nil, type: String? = nil, rating: Double? = nil,
                ratingCount: Int64? = nil, price: String? = nil) {
        // The longest run of whole characters within the limit, found in
        // one pass (a character may be many bytes: a base and its marks).
        func fit(_ text: String) -> String {
            guard text.utf8.count > WireLimits.maximumStringBytes else { return text }
            var end = text.startIndex
            var bytes = 0
            while end < text.endIndex {
                let next = text.index(after: end)
                bytes += text.utf8.distance(from: end, to: next)
                guard bytes <= WireLimits.maximumStringBytes else { break }
                end = next
            }
            return String(text[..<end])
        }
        self.url = fit(url)
        self.title = title.map(fit)
        self.description = description.map(fit)
        self.keywords = keywords.prefix(WireLimits.maximumKeywords).map(fit)
        self.image = image.map(fit)
        self.deepLink = deepLink.map(fit)
        self.appStoreID = appStoreID.map(fit)
        self.type = type.map(fit)
        // + 0 makes a negative zero positive, so that it has one encoding.
        self.rating = rating.flatMap { $0.isFinite && $0 >= 0 ? $0 + 0 : nil }
        self.ratingCount = ratingCount.map { min(max($0, 0), CrawledPage.maximumRatingCount) }
        self.price = price.map(fit)
    }

    /// The first field the cloud may not record as it is, and why: the URL,
    /// image, deep link, App Store id and type must be lines
    /// (`WireLimits.line`), the title, description, keywords and price text
    /// (`WireLimits.text`). Nil when every field passes. The markup reader
    /// leaves out a value that does not, as a problem of the page.
    public var textProblem: String? {
        func check(_ value: String?, _ rule: TextRule, _ field: String) -> String? { rule.problem(in: value, field: field) }
        let lines: [(String?, String)] = [(url, "url"), (image, "image"), (deepLink, "deep link"), (appStoreID, "App Store id"),
                                          (type, "type")]
        for (value, field) in lines { if let problem = check(value, WireLimits.line, field) { return problem } }
        let texts: [(String?, String)] = [(title, "title"), (description, "description"), (price, "price")]
            + keywords.enumerated().map { ($1, "keyword \($0)") }
        for (value, field) in texts { if let problem = check(value, WireLimits.text, field) { return problem } }
        return nil
    }

    /// The hash a page message of `app` carries for the page at `url`: it
    /// names the page, never an activity (a domain of its own).
    public static func hash(app: AppID, url: String) -> PublicHash {
        var writer = BinaryWriter()
        writer.string("sightline crawled page v1")
        writer.string(app.rawValue)
        writer.string(url)
        return PublicHash(unchecked: Array(SHA256.hash(data: writer.bytes)))
    }

    /// Writes the fields as a page message carries them, after its hash:
    /// equal pages write equal bytes.
    public func encode(to writer: inout BinaryWriter) {
        writer.string(url)
        writer.optional(title) { $0.string($1) }
        writer.optional(description) { $0.string($1) }
        writer.uvarint(UInt64(keywords.count))
        for keyword in keywords { writer.string(keyword) }
        writer.optional(image) { $0.string($1) }
        writer.optional(deepLink) { $0.string($1) }
        writer.optional(appStoreID) { $0.string($1) }
        writer.optional(type) { $0.string($1) }
        // The rating as the shortest decimal that reads back as the same
        // Double, so that both cloud backends keep the same bytes.
        writer.optional(rating) { $0.string(String($1)) }
        writer.optional(ratingCount) { $0.uvarint(UInt64($1)) }
        writer.optional(price) { $0.string($1) }
    }

    /// The page's encoding alone, as the cloud's `pages` projection keeps it.
    public var encoded: [UInt8] {
        var writer = BinaryWriter(capacity: 256)
        encode(to: &writer)
        return writer.bytes
    }

    /// Reads the fields `encode` writes, each checked: strings within
    /// `WireLimits.maximumStringBytes`, a URL that is not empty, at most
    /// `WireLimits.maximumKeywords` keywords, a rating that is a finite,
    /// non-negative number written as `encode` writes it, and a count within
    /// `maximumRatingCount`.
    public static func decode(from reader: inout BinaryReader) throws(CodecError) -> CrawledPage {
        let urlAt = reader.offset
        let url = try reader.wireString()
        guard !url.isEmpty else { throw CodecError(.typeMismatch, at: urlAt, "a page's URL is empty") }
        let title = try reader.optionalWireString()
        let description = try reader.optionalWireString()
        let keywords = try reader.wireKeywords()
        let image = try reader.optionalWireString()
        let deepLink = try reader.optionalWireString()
        let appStoreID = try reader.optionalWireString()
        let type = try reader.optionalWireString()
        let ratingAt = reader.offset
        let rating = try reader.optionalWireString()
        var ratingValue: Double?
        if let rating {
            guard let value = Double(rating), value.isFinite, value >= 0 else {
                throw CodecError(.typeMismatch, at: ratingAt, "a page's rating \"\(rating.prefix(32))\" is not a finite, non-negative number")
            }
            guard String(value + 0) == rating else {
                throw CodecError(.nonCanonical, at: ratingAt, "a page's rating \"\(rating.prefix(32))\" is not written as \"\(value + 0)\"")
            }
            ratingValue = value
        }
        let ratingCountAt = reader.offset
        let ratingCount = try reader.optional { (reader: inout BinaryReader) throws(CodecError) in try reader.uvarint() }
        if let ratingCount, ratingCount > UInt64(maximumRatingCount) {
            throw CodecError(.limitExceeded, at: ratingCountAt, "a page's rating count \(ratingCount) is above \(maximumRatingCount)")
        }
        let price = try reader.optionalWireString()
        return CrawledPage(url: url, title: title, description: description, keywords: keywords, image: image, deepLink: deepLink,
                           appStoreID: appStoreID, type: type, rating: ratingValue, ratingCount: ratingCount.map { Int64($0) },
                           price: price)
    }

    /// Decodes a page's encoding alone (`encoded`), with nothing after it.
    public static func decode(_ bytes: [UInt8]) throws(CodecError) -> CrawledPage {
        try BinaryReader.whole(bytes, "the page") { (reader: inout BinaryReader) throws(CodecError) in try decode(from: &reader) }
    }

    /// Adds the page's fields to `object` under the names every JSON output
    /// uses: title, description, keywords, then `image`, `deepLink`,
    /// `appStoreID`, `pageType`, `rating`, `ratingCount`, `price` and
    /// `pageURL`, absent ones as null.
    public func addJSONFields(to object: inout JSONObject) {
        object["title"] = title.map(JSONValue.string) ?? .null
        object["description"] = description.map(JSONValue.string) ?? .null
        object["keywords"] = .array(keywords.map(JSONValue.string))
        object["image"] = image.map(JSONValue.string) ?? .null
        object["deepLink"] = deepLink.map(JSONValue.string) ?? .null
        object["appStoreID"] = appStoreID.map(JSONValue.string) ?? .null
        object["pageType"] = type.map(JSONValue.string) ?? .null
        object["rating"] = rating.map(JSONValue.double) ?? .null
        object["ratingCount"] = ratingCount.map(JSONValue.integer) ?? .null
        object["price"] = price.map(JSONValue.string) ?? .null
        object["pageURL"] = .string(url)
    }
}
