import Foundation
import IndexModel
import IndexQuery
import SyncWire

/// One result of a cloud search: a public item and its score.
public struct PublicResult: Hashable, Sendable {
    public let entry: HashEntry
    public let score: Double
}

extension CloudStore {
    /// Free-text search over `app`'s public index, with the device search's word
    /// rules (`SearchText`: every word whole, the last one a prefix while it is
    /// being typed). Each public item must contain every word. Ranked by
    /// relevance × popularity × engagement:
    /// - relevance: per word, the best field it is in (title 3, keywords 2,
    ///   description 1), summed;
    /// - popularity: 1 + ln(1 + engagements);
    /// - engagement: 0.5 + (engaged + 1) / (shown + 2), so an item shown often and
    ///   rarely chosen sinks.
    ///
    /// Empty text lists the public index by popularity and engagement alone.
    /// `filter`, a Core Spotlight query (`docs/QUERY.md`), keeps only the items it
    /// matches, over `HashEntry.queryAttributes`. The public index holds only
    /// items with K votes, so it is scanned whole.
    public func search(app: AppID, text: String, filter: CompiledQuery? = nil, limit: Int = 20) throws(CloudError) -> [PublicResult] {
        let words = SearchText.search(text, limit: 16)
        var results: [PublicResult] = []
        for entry in try publicIndex(app: app) {
            guard let content = entry.content else { continue }
            if let filter, !filter.matches(entry.queryAttributes) { continue }
            let fields: [(words: [String], weight: Double)] = [
                (SearchText.words(in: content.title ?? ""), 3),
                (content.keywords.flatMap(SearchText.words(in:)), 2),
                (SearchText.words(in: content.contentDescription ?? ""), 1),
            ]
            var relevance = words.isEmpty ? 1.0 : 0.0
            var matchesAll = true
            for word in words {
                let best = fields.filter { field in
                    field.words.contains { word.isPrefix ? $0.hasPrefix(word.text) : $0 == word.text }
                }.map(\.weight).max()
                guard let best else {
                    matchesAll = false
                    break
                }
                relevance += best
            }
            guard matchesAll else { continue }
            let popularity = 1 + log(1 + Double(entry.popularity.engaged))
            let engagement = 0.5 + (Double(entry.popularity.engaged) + 1) / (Double(entry.popularity.shown) + 2)
            results.append(PublicResult(entry: entry, score: relevance * popularity * engagement))
        }
        results.sort { a, b in
            a.score != b.score ? a.score > b.score : a.entry.key.lexicographicallyPrecedes(b.entry.key)
        }
        return Array(results.prefix(max(limit, 0)))
    }
}

extension HashEntry {
    /// What a query sees of a public item: `title`, `keywords`,
    /// `contentDescription`, `contentURL` (its web page), and the custom
    /// attributes `activityType`, `views`, `shown`, `engaged`, `devices`,
    /// `liveVotes` and `engagementRatio` (absent before any impression).
    public var queryAttributes: AttributeSet {
        var attributes = AttributeSet()
        if let content {
            attributes.title = content.title
            attributes.keywords = content.keywords.isEmpty ? nil : content.keywords
            attributes.contentDescription = content.contentDescription
            attributes.contentURL = content.webpageURL
            attributes[.custom("activityType")] = .string(content.activityType)
        }
        attributes[.custom("views")] = .number(Double(popularity.views))
        attributes[.custom("shown")] = .number(Double(popularity.shown))
        attributes[.custom("engaged")] = .number(Double(popularity.engaged))
        attributes[.custom("devices")] = .number(Double(voters))
        attributes[.custom("liveVotes")] = .number(Double(liveVotes))
        if let engagementRatio { attributes[.custom("engagementRatio")] = .number(engagementRatio) }
        return attributes
    }

    /// The entry as the HTTP API and `cloud search --json` print it. The raw
    /// hash appears only when the cloud holds it (K live votes).
    public var jsonValue: JSONValue {
        var object: JSONObject = [
            "liveVotes": .integer(Int64(liveVotes)),
            "devices": .integer(Int64(voters)),
            "views": .integer(Int64(popularity.views)),
            "shown": .integer(Int64(popularity.shown)),
            "engaged": .integer(Int64(popularity.engaged)),
            "engagementRatio": engagementRatio.map(JSONValue.double) ?? .null,
            "public": .bool(isPublic),
        ]
        if let hash { object["hash"] = .string(hash.hex) }
        if let content {
            content.addJSONFields(to: &object)
        }
        return .object(object)
    }
}

extension PublicResult {
    public var jsonValue: JSONValue {
        guard case .object(var object) = entry.jsonValue else { return entry.jsonValue }
        object["score"] = .double(score)
        return .object(object)
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
            "equivocations": .integer(Int64(equivocations)),
            "threshold": .integer(Int64(threshold)),
            "agreement": .integer(Int64(agreement)),
        ])
    }
}
