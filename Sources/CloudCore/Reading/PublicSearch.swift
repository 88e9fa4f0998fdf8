import Foundation
import IndexModel
import IndexQuery
import SyncWire

/// One result of a cloud search: a public item and its score.
public struct PublicResult: Hashable, Sendable {
    public let entry: HashEntry
    public let score: Double
    /// The parts of `score`, when the search was asked to explain it.
    public var explanation: PublicExplanation?
}

/// Why a public item scored what it did, and how it became public
/// (`search(app:text:filter:limit:explain:)`). The score is `relevance ×
/// popularityFactor × engagementFactor`. Nothing in it says which devices
/// voted or engaged: only counts, as the public index itself shows.
public struct PublicExplanation: Hashable, Sendable {
    /// One typed word's part of the relevance.
    public struct Word: Hashable, Sendable {
        public var typed: String
        public var isPrefix: Bool
        /// The best field the word is in: `title` (3), `keywords` (2) or `description` (1).
        public var field: String
        /// The item's word in that field that it matched.
        public var matched: String
        public var weight: Double
    }

    public var words: [Word]
    /// The sum of the words' weights (1 for empty text).
    public var relevance: Double
    /// Engagements counted across devices, and `1 + ln(1 + engaged)`, where
    /// engaged is the estimate when there is one (below zero as zero).
    public var engaged: UInt64
    /// The engagements the app's sketch of private reports estimates, when
    /// its popularity is private (`HashEntry.estimatedEngaged`).
    public var estimatedEngaged: Double?
    public var popularityFactor: Double
    /// Impressions counted across devices, and `0.5 + (engaged + 1) / (shown + 2)`.
    public var shown: UInt64
    public var engagementFactor: Double
    public var score: Double
    /// How it became public: K, the live votes it has (at least K), and the
    /// identical content offers it needed (the content agreement).
    public var threshold: Int
    public var liveVotes: Int
    public var agreement: Int
    /// Where its public content came from: `devices` (offers from that many
    /// live voters agreed, byte for byte) or `page` (a crawled page at its
    /// web page URL: the first live voter's offer named it, and the page
    /// gives everything it shows).
    public var contentSource: String
}

extension CloudService {
    /// Free-text search over `app`'s public index, with the device search's word
    /// rules (`SearchText`: every word whole, the last one a prefix while it is
    /// being typed). Each public item must contain every word. Ranked by
    /// relevance × popularity × engagement:
    /// - relevance: per word, the best field it is in (title 3, keywords 2,
    ///   description 1), summed;
    /// - popularity: 1 + ln(1 + engagements), the estimated engagements when
    ///   the app's popularity is private (`HashEntry.rankedEngagements`);
    /// - engagement: 0.5 + (engaged + 1) / (shown + 2), so an item shown often and
    ///   rarely chosen sinks.
    ///
    /// Empty text lists the public index by popularity and engagement alone.
    /// `filter`, a Core Spotlight query (`docs/QUERY.md`), keeps only the items it
    /// matches, over `HashEntry.queryAttributes`. The public index holds only
    /// items with K votes, so it is scanned whole.
    ///
    /// With `explain`, each result carries the parts of its score and how it
    /// became public (`PublicExplanation`).
    ///
    /// The filter spends `budget` (`QueryBudget`); past it, or past its
    /// deadline, the search throws `queryTooExpensive`.
    public func search(app: AppID, text: String, filter: CompiledQuery? = nil, limit: Int = 20,
                       explain: Bool = false, budget: QueryBudget = QueryBudget()) throws(CloudError) -> [PublicResult] {
        let words = SearchText.search(text, limit: 16)
        var results: [PublicResult] = []
        for entry in try publicIndex(app: app) {
            guard let source = entry.contentSource else { continue }
            if let filter {
                do {
                    guard try filter.matches(entry.queryAttributes, budget: budget) else { continue }
                } catch {
                    throw CloudError(.queryTooExpensive, error.description)
                }
            }
            let fields: [(name: String, words: [String], weight: Double)] = [
                ("title", SearchText.words(in: entry.shownTitle ?? ""), 3),
                ("keywords", entry.shownKeywords.flatMap(SearchText.words(in:)), 2),
                ("description", SearchText.words(in: entry.shownDescription ?? ""), 1),
            ]
            var matched: [PublicExplanation.Word] = []
            for word in words {
                let best = fields.lazy.compactMap { field in
                    field.words.first { word.isPrefix ? $0.hasPrefix(word.text) : $0 == word.text }
                        .map { PublicExplanation.Word(typed: word.text, isPrefix: word.isPrefix, field: field.name, matched: $0,
                                                      weight: field.weight) }
                }.first
                guard let best else { break }
                matched.append(best)
            }
            guard matched.count == words.count else { continue }
            let relevance = words.isEmpty ? 1.0 : matched.reduce(0.0) { $0 + $1.weight }
            let popularity = 1 + log(1 + entry.rankedEngagements)
            let engagement = 0.5 + (Double(entry.popularity.engaged) + 1) / (Double(entry.popularity.shown) + 2)
            let score = relevance * popularity * engagement
            var result = PublicResult(entry: entry, score: score)
            if explain {
                result.explanation = PublicExplanation(
                    words: matched, relevance: relevance, engaged: entry.popularity.engaged,
                    estimatedEngaged: entry.estimatedEngaged, popularityFactor: popularity,
                    shown: entry.popularity.shown, engagementFactor: engagement, score: score, threshold: threshold,
                    liveVotes: entry.liveVotes, agreement: agreement, contentSource: source)
            }
            results.append(result)
        }
        results.sort { a, b in
            a.score != b.score ? a.score > b.score : a.entry.key.lexicographicallyPrecedes(b.entry.key)
        }
        return Array(results.prefix(max(limit, 0)))
    }
}

extension HashEntry {
    /// What a query sees of a public item: `title`, `keywords`,
    /// `contentDescription` (a crawled page's, when it has one),
    /// `contentURL` (its web page), and the custom attributes
    /// `activityType`, `views`, `shown`, `engaged`, `devices`, `liveVotes`,
    /// `engagementRatio` (absent before any impression) and
    /// `estimatedEngaged` (when the app's popularity is private).
    public var queryAttributes: AttributeSet {
        var attributes = AttributeSet()
        if let content {
            attributes.title = shownTitle
            attributes.keywords = shownKeywords.isEmpty ? nil : shownKeywords
            attributes.contentDescription = shownDescription
            attributes.contentURL = content.webpageURL
            attributes[.custom("activityType")] = .string(content.activityType)
        }
        attributes[.custom("views")] = .number(Double(popularity.views))
        attributes[.custom("shown")] = .number(Double(popularity.shown))
        attributes[.custom("engaged")] = .number(Double(popularity.engaged))
        if let estimatedEngaged { attributes[.custom("estimatedEngaged")] = .number(estimatedEngaged) }
        attributes[.custom("devices")] = .number(Double(voters))
        attributes[.custom("liveVotes")] = .number(Double(liveVotes))
        if let engagementRatio { attributes[.custom("engagementRatio")] = .number(engagementRatio) }
        return attributes
    }

    /// The entry as the HTTP API and `cloud search --json` print it. The raw
    /// hash appears only when the cloud holds it (K live votes). A public
    /// entry of an app whose popularity is private has `estimatedEngaged`.
    /// A public entry says where its content came from (`contentSource`) and has
    /// the crawled page's fields (`CrawledPage.addJSONFields`: its title,
    /// description and keywords replace the devices', and the image, deep
    /// link, App Store id, type, rating, price and page URL follow; null
    /// without a page). A link an older build kept that is no link this
    /// build would take (`LinkRule`) is null.
    public var jsonValue: JSONValue {
        var object: JSONObject = [
            "liveVotes": .integer(Int64(liveVotes)),
            "devices": .integer(Int64(voters)),
            "views": .integer(Int64(clamping: popularity.views)),
            "shown": .integer(Int64(clamping: popularity.shown)),
            "engaged": .integer(Int64(clamping: popularity.engaged)),
            "engagementRatio": engagementRatio.map(JSONValue.double) ?? .null,
            "public": .bool(isPublic),
        ]
        if let estimatedEngaged { object["estimatedEngaged"] = .double(estimatedEngaged) }
        if let hash { object["hash"] = .string(hash.hex) }
        if let content {
            content.addJSONFields(to: &object)
            object["contentSource"] = contentSource.map(JSONValue.string) ?? .null
            if let page {
                page.addJSONFields(to: &object)
            } else {
                for field in ["image", "deepLink", "appStoreID", "pageType", "rating", "ratingCount", "price", "pageURL"] {
                    object[field] = .null
                }
            }
            // What this build takes is a link already (`LinkRule`); a row an
            // older build kept may not be, and is served as no link.
            for field in ["url", "image", "pageURL"] {
                if case .string(let link)? = object[field], !LinkRule.isWeb(link) { object[field] = .null }
            }
            if case .string(let link)? = object["deepLink"], LinkRule.scheme(of: link).map(LinkRule.refusedSchemes.contains) != false {
                object["deepLink"] = .null
            }
        }
        return .object(object)
    }
}

extension PublicResult {
    public var jsonValue: JSONValue {
        guard case .object(var object) = entry.jsonValue else { return entry.jsonValue }
        object["score"] = .double(score)
        if let explanation { object["explanation"] = explanation.jsonValue }
        return .object(object)
    }
}

extension PublicExplanation {
    public var jsonValue: JSONValue {
        .object([
            "words": .array(words.map { word in
                .object(["typed": .string(word.typed), "prefix": .bool(word.isPrefix), "field": .string(word.field),
                         "matched": .string(word.matched), "weight": .double(word.weight)])
            }),
            "relevance": .double(relevance),
            "engaged": .integer(Int64(clamping: engaged)),
            "estimatedEngaged": estimatedEngaged.map(JSONValue.double) ?? .null,
            "popularityFactor": .double(popularityFactor),
            "shown": .integer(Int64(clamping: shown)),
            "engagementFactor": .double(engagementFactor),
            "score": .double(score),
            "threshold": .integer(Int64(threshold)),
            "liveVotes": .integer(Int64(liveVotes)),
            "agreement": .integer(Int64(agreement)),
            "contentSource": .string(contentSource),
        ])
    }
}

extension CloudStats {
    public var jsonValue: JSONValue {
        .object([
            "apps": .integer(Int64(apps)),
            "devices": .integer(Int64(devices)),
            "logRows": .integer(Int64(logRows)),
            "messages": .integer(Int64(messages)),
            "hashes": .integer(Int64(hashes)),
            "publicItems": .integer(Int64(publicItems)),
            "wanted": .integer(Int64(wanted)),
            "pages": .integer(Int64(pages)),
            "reports": .integer(Int64(reports)),
            "privatePopularity": .object(privateApps.sorted { $0.key.rawValue < $1.key.rawValue }.reduce(into: JSONObject()) { apps, app in
                var object = JSONObject()
                PopularityMode.ldp(app.value).addJSONFields(to: &object)
                apps[app.key.rawValue] = .object(object)
            }),
            "equivocations": .integer(Int64(equivocations)),
            "threshold": .integer(Int64(threshold)),
            "agreement": .integer(Int64(agreement)),
        ])
    }
}
