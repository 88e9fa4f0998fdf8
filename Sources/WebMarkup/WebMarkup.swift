import Foundation
import IndexModel

/// What a web page's markup says of it, as a crawler reads it for the
/// public index: the standards Apple's public index reads (`docs/WEBMARKUP.md`),
/// each as the page gave it, and what a search result would show, chosen
/// from them by a fixed precedence.
public struct WebMarkup: Hashable, Sendable {
    /// One standard's value for one field, as the page gave it.
    public struct Value: Hashable, Sendable {
        /// Where it came from, e.g. `og:title`, `json-ld`, `microdata`, `<title>`.
        public var source: String
        public var text: String
    }

    /// Something on the page that is wrong: a URL that is not absolute,
    /// JSON-LD that is not JSON. The page is read without it.
    public struct Problem: Hashable, Sendable {
        /// The markup it is in, e.g. `og:image`, `json-ld block 2`.
        public var source: String
        public var message: String
    }

    /// A schema.org thing (JSON-LD or microdata), the fields a result shows.
    public struct Thing: Hashable, Sendable {
        public var source: String
        public var type: String?
        public var name: String?
        public var description: String?
        public var image: String?
        public var ratingValue: Double?
        public var ratingCount: Int?
        public var price: String?
        public var priceCurrency: String?
        public var actionTarget: String?
    }

    /// What a search result built from the page shows.
    public struct Preview: Hashable, Sendable {
        public var title: Value?
        public var description: Value?
        public var image: Value?
        public var url: Value?
        public var deepLink: Value?
        public var appStoreID: Value?
        public var price: Value?
        /// The rating (its value, how many rated, and the schema.org source).
        public var ratingValue: Double?
        public var ratingCount: Int?
        public var ratingSource: String?
        /// The fields a good result has that the page gives none of.
        public var missing: [String] = []
    }

    /// `<title>`, meta description and keywords, `<link rel="canonical">`.
    public var htmlTitle: String?
    public var metaDescription: String?
    public var metaKeywords: [String] = []
    public var canonicalURL: String?
    /// Smart App Banner (`apple-itunes-app`: `app-id`, `app-argument`).
    public var appBanner: [String: String] = [:]
    /// Every `meta` of App Links (`al:`), Twitter Cards (`twitter:`) and Open
    /// Graph (`og:`), by its name, the first of each.
    public var properties: [String: String] = [:]
    /// schema.org things: JSON-LD blocks first, then microdata, in page order.
    public var things: [Thing] = []
    public var problems: [Problem] = []
    /// The charset the page declares, if any.
    public var declaredCharset: String?

    /// The result a search shows, each field from the first source that
    /// gives it (`docs/WEBMARKUP.md`, "Precedence").
    public var preview: Preview {
        var preview = Preview()
        func first(_ candidates: [(String, String?)]) -> Value? {
            candidates.lazy.compactMap { source, text in
                text.flatMap { $0.isEmpty ? nil : Value(source: source, text: $0) }
            }.first
        }
        let thing = things.first
        preview.title = first([("og:title", properties["og:title"]), ("twitter:title", properties["twitter:title"]),
                               (thing?.source ?? "", thing?.name), ("<title>", htmlTitle)])
        preview.description = first([("og:description", properties["og:description"]),
                                     ("twitter:description", properties["twitter:description"]),
                                     (thing?.source ?? "", thing?.description), ("meta description", metaDescription)])
        preview.image = first([("og:image", properties["og:image"]), ("twitter:image", properties["twitter:image"]),
                               (thing?.source ?? "", thing?.image)])
        preview.url = first([("canonical", canonicalURL), ("og:url", properties["og:url"])])
        preview.deepLink = first([("al:ios:url", properties["al:ios:url"]),
                                  ("twitter:app:url:iphone", properties["twitter:app:url:iphone"]),
                                  ("apple-itunes-app app-argument", appBanner["app-argument"]),
                                  (thing.map { "\($0.source) potentialAction" } ?? "", thing?.actionTarget)])
        preview.appStoreID = first([("apple-itunes-app app-id", appBanner["app-id"]),
                                    ("al:ios:app_store_id", properties["al:ios:app_store_id"])])
        if let rated = things.first(where: { $0.ratingValue != nil }) {
            preview.ratingValue = rated.ratingValue
            preview.ratingCount = rated.ratingCount
            preview.ratingSource = rated.source
        }
        if let priced = things.first(where: { $0.price != nil }), let price = priced.price {
            preview.price = Value(source: priced.source, text: [price, priced.priceCurrency].compactMap { $0 }.joined(separator: " "))
        }
        preview.missing = [("title", preview.title), ("description", preview.description), ("image", preview.image),
                           ("canonical URL", preview.url), ("deep link", preview.deepLink)]
            .filter { $0.1 == nil }.map(\.0)
        return preview
    }
}
