import GRDB
import IndexModel
import IndexQuery
import SQLiteSupport

/// Turns documents, taken best first, into results: checks that each can still
/// be shown (not expired; an activity still eligible and its related item not
/// deleted) and joins documents that share an identity into one result.
///
/// Identities are an item's uniqueIdentifier and contentURL, an activity's key,
/// related identifiers and webpageURL. A document that shares one with a result
/// already taken joins it (the first such result, if it shares with several);
/// otherwise it starts a new result. A result's score is its best member's.
struct ResultAssembler {
    private struct Member {
        var member: SearchResult.Member
        var title: String?
        var contentDescription: String?
        var url: String?
        var refs: [String]
    }

    private struct Pending {
        var members: [Member]
        var score: Double
        /// The document that started the result, whose score it has.
        var doc: Int64
    }

    /// What a search that explains its results needs: its words and their weights.
    struct Explaining {
        var words: [SearchWord]
        var weights: [Double]
    }

    private let db: Database
    private let limit: Int
    private let now: Int64
    private let explaining: Explaining?
    private var pending: [Pending] = []
    private var owner: [String: Int] = [:]

    init(db: Database, limit: Int, now: Int64, explaining: Explaining? = nil) {
        self.db = db
        self.limit = limit
        self.now = now
        self.explaining = explaining
    }

    /// Takes the next document in rank order; true once `limit` results exist.
    mutating func settle(doc: Int64, score: Double) throws -> Bool {
        guard let (member, tokens) = try load(doc) else { return false }
        if let joined = tokens.compactMap({ owner[$0] }).min() {
            pending[joined].members.append(member)
            for token in tokens where owner[token] == nil { owner[token] = joined }
            return false
        }
        for token in tokens { owner[token] = pending.count }
        pending.append(Pending(members: [member], score: score, doc: doc))
        return pending.count >= limit
    }

    private func load(_ doc: Int64) throws -> (Member, [String])? {
        let document = try DirectStatement(db, "SELECT kind, index_name, identifier FROM search_docs WHERE doc = ?")
        document.bind(1, doc)
        guard try document.step(), let kind = SearchDocument.Kind(rawValue: document.int64(0)),
              let indexName = document.text(1), let identifier = document.text(2) else {
            document.reset()
            return nil
        }
        document.reset()
        switch kind {
        case .item:
            let item = try DirectStatement(db, """
                SELECT title, display_name, content_description, content_url, expires
                FROM items WHERE item_id = ? AND index_name = ?
                """)
            defer { item.reset() }
            item.bind(1, identifier)
            item.bind(2, indexName)
            guard try item.step() else { return nil }
            if let expires = item.optionalInt64(4), expires <= now { return nil }
            let url = item.text(3)
            let member = Member(member: .item(index: indexName, identifier: identifier),
                                title: item.text(0) ?? item.text(1), contentDescription: item.text(2), url: url,
                                refs: [identifier] + (url.map { [$0] } ?? []))
            return (member, ["id:" + identifier] + (url.map { ["url:" + $0] } ?? []))
        case .activity:
            let activity = try DirectStatement(db, """
                SELECT title, content_description, webpage_url, related, weak_related, expires
                FROM activities WHERE activity_key = ? AND eligible_search = 1 AND related_deleted = 0
                """)
            defer { activity.reset() }
            activity.bind(1, identifier)
            guard try activity.step() else { return nil }
            if let expires = activity.optionalInt64(5), expires <= now { return nil }
            let url = activity.text(2)
            let related = [activity.text(3), activity.text(4)].compactMap { $0 }
            let member = Member(member: .activity(key: identifier), title: activity.text(0),
                                contentDescription: activity.text(1), url: url,
                                refs: related + (url.map { [$0] } ?? []))
            return (member, ["key:" + identifier] + related.map { "id:" + $0 } + (url.map { ["url:" + $0] } ?? []))
        }
    }

    /// The results in rank order, with members sorted (items first) and the
    /// shown and engaged counts summed over all their references.
    func results() throws -> [SearchResult] {
        let counts = try DirectStatement(db, "SELECT shown, engaged FROM engagement WHERE ref = ?")
        return try pending.map { result in
            let members = result.members.sorted { $0.member < $1.member }
            var shown = 0
            var engaged = 0
            for ref in Set(members.flatMap(\.refs)).sorted() {
                counts.bind(1, ref)
                if try counts.step() {
                    shown = shown.addingSaturated(Int(counts.int64(0)))
                    engaged = engaged.addingSaturated(Int(counts.int64(1)))
                }
                counts.reset()
            }
            var found = SearchResult(members: members.map(\.member),
                                     title: members.lazy.compactMap(\.title).first,
                                     contentDescription: members.lazy.compactMap(\.contentDescription).first,
                                     url: members.lazy.compactMap(\.url).first,
                                     score: result.score, shown: shown, engaged: engaged)
            if let explaining, let first = result.members.first {
                found.explanation = try explanation(of: result.doc, member: first.member, explaining)
            }
            return found
        }
    }

    /// The parts of `doc`'s score, read back from its `search_docs` row and
    /// the projections it was indexed from.
    private func explanation(of doc: Int64, member: SearchResult.Member, _ explaining: Explaining) throws -> SearchExplanation? {
        let document = try DirectStatement(db, "SELECT kind, index_name, identifier, multiplier, terms FROM search_docs WHERE doc = ?")
        defer { document.reset() }
        document.bind(1, doc)
        guard try document.step(), let kind = SearchDocument.Kind(rawValue: document.int64(0)),
              let indexName = document.text(1), let identifier = document.text(2) else { return nil }
        let multiplier = document.double(3)
        let terms = try SearchDocument.decode(document.blob(4))
        var words: [SearchExplanation.Word] = []
        for (word, weight) in zip(explaining.words, explaining.weights) {
            let typed = Array(word.text.utf8)
            let best = terms.filter { term in
                word.isPrefix ? term.text.utf8.starts(with: typed) : term.text.utf8.elementsEqual(typed)
            }.max { $0.impact < $1.impact }
            guard let best else { return nil }
            words.append(SearchExplanation.Word(typed: word.text, isPrefix: word.isPrefix, matched: best.text, relevance: best.impact,
                                                weight: weight, points: weight * (best.impact * multiplier)))
        }
        let tieBreak = SearchDocument.tieBreak(kind: kind, indexName: indexName, identifier: identifier)
        var hint: Double?
        var views: Int64?
        var refs: [String]
        var expires: Int64?
        switch kind {
        case .item:
            let item = try DirectStatement(db, "SELECT ranking_hint, content_url, expires FROM items WHERE item_id = ? AND index_name = ?")
            defer { item.reset() }
            item.bind(1, identifier)
            item.bind(2, indexName)
            guard try item.step() else { return nil }
            hint = item.optionalDouble(0)
            refs = [identifier] + (item.text(1).map { [$0] } ?? [])
            expires = item.optionalInt64(2)
        case .activity:
            let activity = try DirectStatement(db, """
                SELECT view_count, related, weak_related, webpage_url, expires FROM activities WHERE activity_key = ?
                """)
            defer { activity.reset() }
            activity.bind(1, identifier)
            guard try activity.step() else { return nil }
            views = activity.int64(0)
            refs = [activity.text(1), activity.text(2), activity.text(3)].compactMap { $0 }
            expires = activity.optionalInt64(4)
        }
        let counts = try DirectStatement(db, "SELECT shown, engaged FROM engagement WHERE ref = ?")
        var shown = 0
        var engaged = 0
        for ref in refs {
            counts.bind(1, ref)
            if try counts.step() {
                shown = shown.addingSaturated(Int(counts.int64(0)))
                engaged = engaged.addingSaturated(Int(counts.int64(1)))
            }
            counts.reset()
        }
        let parts = views.map { SearchDocument.Multiplier.activity(views: $0, shown: shown, engaged: engaged, tieBreak: tieBreak) }
            ?? SearchDocument.Multiplier.item(hint: hint, shown: shown, engaged: engaged, tieBreak: tieBreak)
        return SearchExplanation(member: member, words: words, rankingHint: hint, hintFactor: parts.hintFactor, views: views,
                                 viewFactor: parts.viewFactor, shown: shown, engaged: engaged,
                                 engagementFactor: parts.engagementFactor, tieBreak: tieBreak, multiplier: multiplier,
                                 expires: expires.map { Timestamp(millisecondsSince1970: $0) },
                                 score: words.reduce(0) { $0 + $1.points })
    }
}
