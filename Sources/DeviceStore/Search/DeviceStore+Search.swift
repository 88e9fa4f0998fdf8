import Foundation
import GRDB
import IndexModel

extension DeviceStore {
    /// Free-text search as a user types: every word of `text` must match a word of
    /// the title, display name, description or keywords, the last ones as prefixes
    /// ("sun" finds "Sunrise"); case and diacritics are ignored.
    ///
    /// Results are ranked by text relevance (bm25, title weighted highest) times
    /// the result's engagement ratio, with a lift for the item's rankingHint and
    /// an activity's views. Expired items and activities are never returned, even
    /// before their expiry is journaled; activities not eligible for search, or
    /// whose strongly related item was deleted, are not returned either.
    public func search(_ text: String, limit: Int = 20) throws(DeviceStoreError) -> [SearchResult] {
        let terms = SearchTerms.words(in: text)
        guard !terms.isEmpty, limit > 0 else { return [] }
        let match = terms.map { "\"\($0)\"*" }.joined(separator: " ")
        let now = clock.now().millisecondsSince1970
        let candidates = max(limit * 5, 50)
        return try read { db in
            var hits: [SearchHit] = []
            let itemRows = try Row.fetchAll(db, sql: """
                SELECT i.index_name, i.item_id, i.title, i.display_name, i.content_description, i.content_url,
                       i.ranking_hint, bm25(items_fts, 10.0, 8.0, 1.0, 4.0) AS rank
                FROM items_fts JOIN items i ON i.rowid = items_fts.rowid
                WHERE items_fts MATCH ? AND (i.expires IS NULL OR i.expires > ?)
                ORDER BY rank LIMIT ?
                """, arguments: [match, now, candidates])
            for row in itemRows {
                let identifier: String = row[1]
                let url: String? = row[5]
                var tokens = ["id:" + identifier]
                if let url { tokens.append("url:" + url) }
                let hint: Double = row[6] ?? 0
                hits.append(SearchHit(member: .item(index: row[0], identifier: identifier),
                                      title: row[2] ?? row[3], contentDescription: row[4], url: url,
                                      relevance: -(row[7] as Double), boost: 1 + 0.25 * min(max(hint, 0), 1),
                                      tokens: tokens, refs: [identifier] + (url.map { [$0] } ?? [])))
            }
            let activityRows = try Row.fetchAll(db, sql: """
                SELECT a.activity_key, a.title, a.content_description, a.webpage_url, a.related, a.weak_related,
                       a.view_count, bm25(activities_fts, 10.0, 4.0, 1.0) AS rank
                FROM activities_fts JOIN activities a ON a.rowid = activities_fts.rowid
                WHERE activities_fts MATCH ? AND a.eligible_search = 1 AND a.related_deleted = 0
                  AND (a.expires IS NULL OR a.expires > ?)
                ORDER BY rank LIMIT ?
                """, arguments: [match, now, candidates])
            for row in activityRows {
                let key: String = row[0]
                let url: String? = row[3]
                let related = [row[4] as String?, row[5] as String?].compactMap { $0 }
                var tokens = ["key:" + key] + related.map { "id:" + $0 }
                if let url { tokens.append("url:" + url) }
                let views: Int = row[6]
                hits.append(SearchHit(member: .activity(key: key), title: row[1], contentDescription: row[2], url: url,
                                      relevance: -(row[7] as Double), boost: 1 + 0.1 * log(1 + Double(views)),
                                      tokens: tokens, refs: related + (url.map { [$0] } ?? [])))
            }
            return try SearchHit.merge(hits, limit: limit, db: db)
        }
    }
}

/// Splits what a user typed into lowercase words of letters and digits, the
/// only characters that ever reach the FTS5 MATCH expression (so no user text
/// can be read as FTS5 syntax).
enum SearchTerms {
    static let maximumTerms = 16

    static func words(in text: String) -> [String] {
        var words: [String] = []
        var current = ""
        for character in text.lowercased() {
            if character.isLetter || character.isNumber {
                current.append(character)
            } else if !current.isEmpty {
                words.append(current)
                current = ""
            }
        }
        if !current.isEmpty { words.append(current) }
        return Array(words.prefix(maximumTerms))
    }
}

/// One matching item or activity before results are merged.
struct SearchHit {
    var member: SearchResult.Member
    var title: String?
    var contentDescription: String?
    var url: String?
    var relevance: Double
    var boost: Double
    /// Identity tokens: hits sharing any token are one result.
    var tokens: [String]
    /// Engagement references that count for this hit.
    var refs: [String]

    static func merge(_ hits: [SearchHit], limit: Int, db: Database) throws -> [SearchResult] {
        // Union-find over hits that share an identity token.
        var parent = Array(hits.indices)
        func find(_ index: Int) -> Int {
            var root = index
            while parent[root] != root { root = parent[root] }
            var node = index
            while parent[node] != root {
                let next = parent[node]
                parent[node] = root
                node = next
            }
            return root
        }
        var owner: [String: Int] = [:]
        for (index, hit) in hits.enumerated() {
            for token in hit.tokens {
                if let other = owner[token] {
                    parent[find(index)] = find(other)
                } else {
                    owner[token] = index
                }
            }
        }
        var groups: [Int: [Int]] = [:]
        for index in hits.indices { groups[find(index), default: []].append(index) }

        let statement = try db.cachedStatement(sql: "SELECT shown, engaged FROM engagement WHERE ref = ?")
        var results: [SearchResult] = []
        for members in groups.values {
            let ordered = members.sorted { hits[$0].member < hits[$1].member }
            var refs = Set<String>()
            for index in ordered { refs.formUnion(hits[index].refs) }
            var shown = 0
            var engaged = 0
            for ref in refs.sorted() {
                if let row = try Row.fetchOne(statement, arguments: [ref]) {
                    shown += row[0] as Int
                    engaged += row[1] as Int
                }
            }
            // Laplace-smoothed engagement ratio: 0.5 with no data, towards 1 when
            // shown results are always tapped, towards 0 when never.
            let ratio = (Double(engaged) + 1) / (Double(max(shown, engaged)) + 2)
            let best = ordered.map { hits[$0].relevance * hits[$0].boost }.max() ?? 0
            let lead = hits[ordered[0]]
            results.append(SearchResult(
                members: ordered.map { hits[$0].member },
                title: ordered.lazy.compactMap { hits[$0].title }.first,
                contentDescription: ordered.lazy.compactMap { hits[$0].contentDescription }.first,
                url: ordered.lazy.compactMap { hits[$0].url }.first ?? lead.url,
                score: best * (0.5 + ratio), shown: shown, engaged: engaged))
        }
        results.sort { left, right in
            if left.score != right.score { return left.score > right.score }
            return left.members[0] < right.members[0]
        }
        return Array(results.prefix(limit))
    }
}
