import Foundation
import GRDB
import IndexModel
import IndexQuery

extension DeviceStore {
    /// Free-text search as a user types: every word of `text` must be a word of
    /// the title, display name, description or keywords, and the last one, while
    /// it is being typed, the start of one ("sunset be" finds "Sunset beach";
    /// "sunset be " does not); case and diacritics are ignored.
    ///
    /// Results are ranked by text relevance (BM25F, the title weighted highest)
    /// times a multiplier for the item's rankingHint or the activity's views and
    /// for the engagement ratio of its references; items and activities that
    /// share an identity are one result. Expired items and activities are never
    /// returned, even before their expiry is journaled; activities not eligible
    /// for search, or whose strongly related item was deleted, are not returned
    /// either. `docs/SEARCH.md` has the formula and how the search stops early.
    ///
    /// The search index is brought up to the journal first. A read-only store
    /// cannot do that, so searching it fails while its index is behind.
    ///
    /// With `explain`, each result carries the parts of its score
    /// (`SearchResult.explanation`): each word's relevance and weight, the
    /// rankingHint, views and engagement factors, and the expiry.
    public func search(_ text: String, limit: Int = 20, explain: Bool = false) throws(DeviceStoreError) -> [SearchResult] {
        try search(text, limit: limit, strategy: .automatic, explain: explain)
    }

    func search(_ text: String, limit: Int, strategy: RankedSearch.Strategy, explain: Bool = false) throws(DeviceStoreError) -> [SearchResult] {
        let words = SearchText.search(text, limit: DeviceStore.maximumSearchWords)
        guard !words.isEmpty, limit > 0 else { return [] }
        var search = RankedSearch(words: words, limit: limit, now: clock.now().millisecondsSince1970, strategy: strategy)
        search.explain = explain
        if isReadOnly {
            return try read { db in
                let head = try SearchIndex.journalHead(db)
                let through = try SearchIndex.indexedThrough(db)
                guard through == head else {
                    throw DeviceStoreError(.readOnly, """
                        the search index is behind the journal (indexed through seq \(through ?? 0), head \(head)); \
                        search the store once with write access to bring it up to date
                        """)
                }
                return try search.run(db)
            }
        }
        // The refresh writes only the search tables: the sync status and
        // the earliest expiry stay as they were.
        return try write(keepsMemos: true) { db in
            try SearchIndex.refresh(db)
            return try search.run(db)
        }
    }

    /// The most words of a search that count; the rest are ignored.
    public static let maximumSearchWords = 16

    /// Brings the search index up to the journal head now instead of at the next
    /// search, and says what that took.
    public func refreshSearchIndex() throws(DeviceStoreError) -> SearchIndexRefresh {
        try write { db in
            let refresh = try SearchIndex.refresh(db)
            return SearchIndexRefresh(fullBuild: refresh.fullBuild, documentsWritten: refresh.documentsWritten,
                                      indexedThrough: Seq(UInt64(refresh.indexedThrough)))
        }
    }
}

/// What `refreshSearchIndex()` did.
public struct SearchIndexRefresh: Hashable, Sendable {
    /// The index was built from the projections rather than folded from the journal.
    public var fullBuild: Bool
    /// Items and activities written, added or removed.
    public var documentsWritten: Int
    public var indexedThrough: Seq
}
