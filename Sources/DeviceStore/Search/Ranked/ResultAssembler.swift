import GRDB
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
    }

    private let db: Database
    private let limit: Int
    private let now: Int64
    private var pending: [Pending] = []
    private var owner: [String: Int] = [:]

    init(db: Database, limit: Int, now: Int64) {
        self.db = db
        self.limit = limit
        self.now = now
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
        pending.append(Pending(members: [member], score: score))
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
                    shown += Int(counts.int64(0))
                    engaged += Int(counts.int64(1))
                }
                counts.reset()
            }
            return SearchResult(members: members.map(\.member),
                                title: members.lazy.compactMap(\.title).first,
                                contentDescription: members.lazy.compactMap(\.contentDescription).first,
                                url: members.lazy.compactMap(\.url).first,
                                score: result.score, shown: shown, engaged: engaged)
        }
    }
}
