import Foundation
import GRDB
import IndexModel
import SQLiteSupport

/// The ranked-search index: impact-ordered posting lists that let a search stop
/// after the best matches instead of scoring every match.
///
/// It is a projection of the journal like the others, but folded lazily: the
/// append path never touches it (so `bench append` pays nothing for it), and each
/// search first folds the journal entries it has not seen yet
/// (`indexed_through`). A full build replaces it when it has never been built,
/// after `rebuildProjections()`, or when the backlog is large enough that
/// rebuilding is cheaper than folding.
///
/// Tables (all derived; dropping them loses nothing):
/// - `search_meta(key, value)`: `layout` (`SearchIndex.layout`), `indexed_through`
///   (journal seq) and `documents`;
/// - `search_docs(doc, kind, index_name, identifier, multiplier, terms)`: one row per
///   searchable item or activity, with its words and impacts (`SearchDocument`);
/// - `search_runs(term, rank, doc, entries)`: every word's postings, best first,
///   in runs of consecutive postings (`SearchIndex.Run`): a posting is a document
///   and `rank = -(impact × multiplier)`, ordered by `(rank, doc)`, and each row
///   is keyed by its run's first posting, so that the primary key order is best
///   first and a batch of postings is written a run at a time;
/// - `search_terms(term, df, max_key)`: the vocabulary, with each word's document
///   count and an upper bound of its keys (never lowered, so always a bound);
/// - `search_refs(ref, doc)`: which documents an engagement reference affects;
/// - `search_high(term, block, entries)`: the postings of impact at least
///   `highImpact`, in document order, a block of 1,024 document numbers per row;
/// - `search_low(term, block, entries)`: the other postings, the same way, so
///   that the two together hold every word's documents in document order;
/// - `search_heads(prefix, rank, term)`: each word under its first one and first two
///   characters, with `rank = -max_key`, so that a search for a short prefix opens
///   the words it starts best first without reading all of them.
enum SearchIndex {
    static let tables = ["search_meta", "search_docs", "search_runs", "search_terms", "search_refs", "search_heads",
                         "search_high", "search_low"]

    /// Tables of older layouts, dropped when the index is built again.
    static let retiredTables = ["search_postings"]

    /// Postings of at least this impact (a word in a title, display name or
    /// keywords; a description alone stays below it) are also kept in
    /// `search_high`, in document order.
    static let highImpact = 3.0

    /// `search_high` and `search_low` group a word's documents by `doc >> blockShift`.
    static let blockShift: Int64 = 10

    /// The largest multiplier any document was indexed with (never lowered).
    static func maximumMultiplier(_ db: Database) throws -> Double {
        try Double.fetchOne(db.cachedStatement(sql: "SELECT value FROM search_meta WHERE key = 'max_multiplier'")) ?? 0
    }

    /// `search_high.entries` and `search_low.entries`: for each document of the block, in document order,
    /// its offset in the block (UInt16) and its key (IEEE 754 double), little-endian.
    static func decodeHigh(_ bytes: UnsafeRawBufferPointer, block: Int64, into entries: inout [(doc: Int64, key: Double)]) {
        let base = block << blockShift
        for index in 0..<bytes.count / entryBytes {
            let offset = index * entryBytes
            let low = Int64(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self)))
            let pattern = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 2, as: UInt64.self))
            entries.append((base | low, Double(bitPattern: pattern)))
        }
    }

    /// The key of the document at `offset` in its block, from one blob of
    /// entries (in document order), or nil when the blob lacks it.
    static func key(of offset: UInt16, in blob: [UInt8]) -> Double? {
        blob.withUnsafeBytes { bytes in
            var low = 0
            var high = bytes.count / entryBytes
            while low < high {
                let middle = (low + high) / 2
                let found = UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: middle * entryBytes, as: UInt16.self))
                if found == offset {
                    let pattern = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: middle * entryBytes + 2, as: UInt64.self))
                    return Double(bitPattern: pattern)
                }
                if found < offset { low = middle + 1 } else { high = middle }
            }
            return nil
        }
    }

    /// Bytes of one entry: the offset in the block and the key.
    static let entryBytes = 10

    static func encodeHigh(_ entries: [(doc: Int64, key: Double)]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(entries.count * 10)
        for entry in entries {
            let low = UInt16(entry.doc & ((1 << blockShift) - 1))
            bytes.append(UInt8(low & 0xFF))
            bytes.append(UInt8(low >> 8))
            withUnsafeBytes(of: entry.key.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
        }
        return bytes
    }

    /// The prefixes under which `search_heads` files a word: its first one and
    /// first two characters.
    static func headPrefixes(of term: String) -> [String] {
        var prefixes: [String] = []
        var prefix = ""
        for character in term.prefix(2) {
            prefix.append(character)
            prefixes.append(prefix)
        }
        return prefixes
    }

    /// The tables and index of `ddl`: derived data a store builds again when
    /// they are missing (a restore drops them when an older layout made them).
    static let schemaObjects: Set<String> = Set(tables + retiredTables + ["search_refs_by_doc"])

    static let ddl = """
        CREATE TABLE IF NOT EXISTS search_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS search_docs (
            doc INTEGER PRIMARY KEY,
            kind INTEGER NOT NULL,
            index_name TEXT NOT NULL,
            identifier TEXT NOT NULL,
            multiplier REAL NOT NULL,
            terms BLOB NOT NULL,
            UNIQUE (identifier, index_name, kind)
        );
        CREATE TABLE IF NOT EXISTS search_runs (
            term TEXT NOT NULL, rank REAL NOT NULL, doc INTEGER NOT NULL, entries BLOB NOT NULL,
            PRIMARY KEY (term, rank, doc)
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS search_terms (
            term TEXT PRIMARY KEY, df INTEGER NOT NULL, max_key REAL NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS search_refs (
            ref TEXT NOT NULL, doc INTEGER NOT NULL, PRIMARY KEY (ref, doc)
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS search_refs_by_doc ON search_refs (doc);
        CREATE TABLE IF NOT EXISTS search_high (
            term TEXT NOT NULL, block INTEGER NOT NULL, entries BLOB NOT NULL, PRIMARY KEY (term, block)
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS search_low (
            term TEXT NOT NULL, block INTEGER NOT NULL, entries BLOB NOT NULL, PRIMARY KEY (term, block)
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS search_heads (
            prefix TEXT NOT NULL, rank REAL NOT NULL, term TEXT NOT NULL, PRIMARY KEY (prefix, rank, term)
        ) WITHOUT ROWID;
        """

    /// What a refresh did.
    struct Refresh {
        var fullBuild: Bool
        var documentsWritten: Int
        var indexedThrough: Int64
    }

    static func exists(_ db: Database) throws -> Bool {
        try SchemaLookup.hasTable(db, "search_meta")
    }

    /// Whether a refresh ever built the index, of this layout or another:
    /// a new store has the tables, empty (a refresh always writes
    /// `search_meta`).
    static func isBuilt(_ db: Database) throws -> Bool {
        try exists(db) && Row.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM search_meta LIMIT 1")) != nil
    }

    /// The layout of these tables. An index of another layout (built by another
    /// version of Sightline) counts as never built, and the next refresh replaces it.
    static let layout: Int64 = 5

    /// The layout `search_meta` records; nil for tables never built.
    static func recordedLayout(_ db: Database) throws -> Int64? {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT value FROM search_meta WHERE key = 'layout'"))
    }

    /// The journal seq the index reflects, or nil when it was never built.
    static func indexedThrough(_ db: Database) throws -> Int64? {
        guard try exists(db) else { return nil }
        guard try recordedLayout(db) == layout else {
            return nil
        }
        return try Int64.fetchOne(db.cachedStatement(sql: "SELECT value FROM search_meta WHERE key = 'indexed_through'"))
    }

    static func journalHead(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT max(seq) FROM event_journal")) ?? 0
    }

    /// Blocks of document numbers in `search_high` and `search_low`.
    static func blockCount(_ db: Database) throws -> Int64 {
        try documentCount(db) >> blockShift + 1
    }

    static func documentCount(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT value FROM search_meta WHERE key = 'documents'")) ?? 0
    }

    /// Forgets the index; the next search builds it again from the projections.
    static func reset(_ db: Database) throws {
        guard try exists(db) else { return }
        for table in tables { try db.execute(sql: "DELETE FROM \(table)") }
    }

    /// Brings the index up to the journal head, in the caller's transaction.
    @discardableResult
    static func refresh(_ db: Database) throws -> Refresh {
        let head = try journalHead(db)
        let through = try indexedThrough(db)
        if through == head { return Refresh(fullBuild: false, documentsWritten: 0, indexedThrough: head) }
        // An index of this layout has all its tables, and so does a new
        // store's, whose `search_meta` is empty (a refresh always writes
        // it). The DDL runs only for the others: GRDB forgets every cached statement of the
        // connection after a schema statement, even `CREATE TABLE IF NOT
        // EXISTS` that creates nothing, and a search refreshes the index
        // each time; and a store that changes its schema leaves the
        // connections it shared (`StoreConnectionPool`).
        if through == nil, try !exists(db) || isBuilt(db) {
            for table in retiredTables { try db.execute(sql: "DROP TABLE IF EXISTS \(table)") }
            try db.execute(sql: ddl)
        }

        var builder = Builder(db: db)
        let documents = try documentCount(db)
        let full: Bool
        if let through, through < head, head - through <= max(10_000, documents / 2) {
            full = false
            try builder.fold(journalAfter: through)
        } else {
            full = true
            try reset(db)
            try builder.loadEverything()
        }
        try builder.apply()
        let maximum = max(full ? 0 : try maximumMultiplier(db), builder.maximumMultiplier)
        let setMeta = try db.cachedStatement(sql: "INSERT OR REPLACE INTO search_meta (key, value) VALUES (?, ?)")
        try setMeta.execute(arguments: ["layout", layout])
        try setMeta.execute(arguments: ["max_multiplier", maximum])
        try setMeta.execute(arguments: ["indexed_through", head])
        try setMeta.execute(arguments: ["documents", (full ? 0 : documents).addingSaturated(builder.documentDelta)])
        return Refresh(fullBuild: full, documentsWritten: builder.documentsWritten, indexedThrough: head)
    }
}

// MARK: - Folding changes into the index

extension SearchIndex {
    private struct DocumentKey: Hashable, Comparable {
        var kind: SearchDocument.Kind
        var indexName: String
        var identifier: String

        static func < (lhs: DocumentKey, rhs: DocumentKey) -> Bool {
            (lhs.kind.rawValue, lhs.indexName, lhs.identifier) < (rhs.kind.rawValue, rhs.indexName, rhs.identifier)
        }
    }

    /// What one fold changes of one word (by its number in the fold): the
    /// postings that leave and those that arrive, from which its runs, its
    /// blocks of `search_high` and `search_low`, its document count and its
    /// largest new key follow. Kept per word in an array indexed by that
    /// number, so that a posting costs an append rather than lookups by
    /// (word, block), and each word's lists are sorted on their own.
    private struct TermChanges {
        var removals: [Entry] = []
        var additions: [Entry] = []
    }

    /// One posting: a document, its key, and whether it is in the high-impact layer.
    private struct Entry {
        var doc: Int64
        var key: Double
        var isHigh: Bool
    }

    /// Collects the documents to write, then writes every posting change in key
    /// order, which SQLite's B-trees take fastest.
    private struct Builder {
        let db: Database
        var dirty = Set<DocumentKey>()
        var fresh = false
        /// Engagement counts by reference, loaded whole for a full build.
        var engagement: [String: (shown: Int, engaged: Int)]?
        var documentsWritten = 0
        var documentDelta: Int64 = 0
        var maximumMultiplier = 0.0

        init(db: Database) { self.db = db }

        mutating func fold(journalAfter through: Int64) throws {
            var refs = Set<String>()
            _ = try DeviceStore.scanJournal(db, from: Seq(UInt64(through + 1))) { record in
                switch try record.event() {
                case .itemIndexed(let index, let item):
                    dirty.insert(DocumentKey(kind: .item, indexName: index, identifier: item.uniqueIdentifier))
                case .itemUpdated(let index, let update):
                    dirty.insert(DocumentKey(kind: .item, indexName: index, identifier: update.uniqueIdentifier))
                case .itemDeleted(let index, let identifier, _), .itemExpired(let index, let identifier):
                    dirty.insert(DocumentKey(kind: .item, indexName: index, identifier: identifier))
                case .activityRecorded(let activity):
                    dirty.insert(DocumentKey(kind: .activity, indexName: "", identifier: activity.key))
                case .activityDeleted(let key, _), .activityExpired(let key):
                    dirty.insert(DocumentKey(kind: .activity, indexName: "", identifier: key))
                case .activityPurged(let residue):
                    dirty.insert(DocumentKey(kind: .activity, indexName: "", identifier: residue.key))
                case .resultShown(let ref), .resultEngaged(let ref):
                    refs.insert(ref)
                case .clientStateSet, .publicContentRequested, .storeRestored, .reindexRequested, .reindexAcknowledged, .epochAdvanced,
                     .popularityModeLearned, .cloudReindexAsked, .votesReindexRequested:
                    break
                }
                return true
            }
            // Engagement changes a document's multiplier, so every document that
            // counts a changed reference is written again.
            let affected = try db.cachedStatement(sql: """
                SELECT d.kind, d.index_name, d.identifier FROM search_refs r JOIN search_docs d ON d.doc = r.doc
                WHERE r.ref = ?
                """)
            for ref in refs.sorted() {
                let rows = try Row.fetchAll(affected, arguments: [ref])
                for row in rows {
                    guard let kind = SearchDocument.Kind(rawValue: try StoredValue.column(row, 0, "search_docs.kind")) else { continue }
                    dirty.insert(DocumentKey(kind: kind, indexName: try StoredValue.column(row, 1, "search_docs.index_name"),
                                             identifier: try StoredValue.column(row, 2, "search_docs.identifier")))
                }
            }
        }

        /// Makes the next `apply` a full build: every document is read by
        /// one scan of its table, and the engagement counts are loaded whole.
        mutating func loadEverything() throws {
            fresh = true
            var counts: [String: (shown: Int, engaged: Int)] = [:]
            let rows = try Row.fetchCursor(db, sql: "SELECT ref, shown, engaged FROM engagement")
            while let row = try rows.next() {
                counts[try StoredValue.column(row, 0, "engagement.ref")] = (try StoredValue.column(row, 1, "engagement.shown"),
                                                                            try StoredValue.column(row, 2, "engagement.engaged"))
            }
            engagement = counts
        }

        // MARK: Reading documents

        private func counts(_ ref: String) throws -> (shown: Int, engaged: Int) {
            if let engagement { return engagement[ref] ?? (0, 0) }
            let statement = try DirectStatement(db, "SELECT shown, engaged FROM engagement WHERE ref = ?")
            defer { statement.reset() }
            statement.bind(1, ref)
            guard try statement.step() else { return (0, 0) }
            return (Int(statement.int64(0)), Int(statement.int64(1)))
        }

        private func engagement(_ refs: [String]) throws -> (shown: Int, engaged: Int) {
            var shown = 0
            var engaged = 0
            for ref in refs {
                let count = try counts(ref)
                shown = shown.addingSaturated(count.shown)
                engaged = engaged.addingSaturated(count.engaged)
            }
            return (shown, engaged)
        }

        static let itemColumns = "title, display_name, content_description, keywords, content_url, ranking_hint"
        static let activityColumns = "title, keywords, content_description, webpage_url, related, weak_related, view_count"

        /// Each document to write with its key: for a full build, every item
        /// and searchable activity, each table read by one scan in the order
        /// it holds them; otherwise the dirty keys in key order, each read by
        /// its key, with nil for a document that is gone or not searchable.
        /// Expiry is checked by each search, against its clock.
        func forEachDocument(_ body: (DocumentKey, SearchDocument?) throws -> Void) throws {
            guard fresh else {
                for key in dirty.sorted() { try body(key, try document(key)) }
                return
            }
            let items = try DirectStatement(db, "SELECT index_name, item_id, \(Builder.itemColumns) FROM items")
            defer { items.reset() }
            while try items.step() {
                let key = DocumentKey(kind: .item, indexName: try StoredValue.text(items, 0, "items.index_name"),
                                      identifier: try StoredValue.text(items, 1, "items.item_id"))
                try body(key, try item(key, items, from: 2))
            }
            let activities = try DirectStatement(db, """
                SELECT activity_key, \(Builder.activityColumns) FROM activities WHERE eligible_search = 1
                """)
            defer { activities.reset() }
            while try activities.step() {
                let key = DocumentKey(kind: .activity, indexName: "", identifier: try StoredValue.text(activities, 0, "activities.activity_key"))
                try body(key, try activity(key, activities, from: 1))
            }
        }

        /// The document as the projections hold it now, or nil when it is gone or not searchable.
        func document(_ key: DocumentKey) throws -> SearchDocument? {
            switch key.kind {
            case .item:
                let statement = try DirectStatement(db, "SELECT \(Builder.itemColumns) FROM items WHERE item_id = ? AND index_name = ?")
                defer { statement.reset() }
                statement.bind(1, key.identifier)
                statement.bind(2, key.indexName)
                guard try statement.step() else { return nil }
                return try item(key, statement, from: 0)
            case .activity:
                let statement = try DirectStatement(db, """
                    SELECT \(Builder.activityColumns) FROM activities WHERE activity_key = ? AND eligible_search = 1
                    """)
                defer { statement.reset() }
                statement.bind(1, key.identifier)
                guard try statement.step() else { return nil }
                return try activity(key, statement, from: 0)
            }
        }

        /// The item document in `itemColumns` of `statement`'s row, from column `first`.
        private func item(_ key: DocumentKey, _ statement: DirectStatement, from first: Int32) throws -> SearchDocument {
            let terms = SearchDocument.terms(of: SearchDocument.itemFields(
                title: statement.text(first), displayName: statement.text(first + 1),
                contentDescription: statement.text(first + 2), keywords: statement.text(first + 3)))
            let refs = [key.identifier] + (statement.text(first + 4).map { [$0] } ?? [])
            let counts = try engagement(refs)
            let tieBreak = SearchDocument.tieBreak(kind: key.kind, indexName: key.indexName, identifier: key.identifier)
            let multiplier = SearchDocument.Multiplier.item(hint: statement.optionalDouble(first + 5), shown: counts.shown,
                                                            engaged: counts.engaged, tieBreak: tieBreak)
            return SearchDocument(kind: .item, indexName: key.indexName, identifier: key.identifier,
                                  terms: terms, multiplier: multiplier.value, refs: refs)
        }

        /// The activity document in `activityColumns` of `statement`'s row, from column `first`.
        private func activity(_ key: DocumentKey, _ statement: DirectStatement, from first: Int32) throws -> SearchDocument {
            let terms = SearchDocument.terms(of: SearchDocument.activityFields(
                title: statement.text(first), keywords: statement.text(first + 1), contentDescription: statement.text(first + 2)))
            let refs = [statement.text(first + 4), statement.text(first + 5), statement.text(first + 3)].compactMap { $0 }
            let counts = try engagement(refs)
            let tieBreak = SearchDocument.tieBreak(kind: key.kind, indexName: key.indexName, identifier: key.identifier)
            let multiplier = SearchDocument.Multiplier.activity(views: statement.int64(first + 6), shown: counts.shown,
                                                                engaged: counts.engaged, tieBreak: tieBreak)
            return SearchDocument(kind: .activity, indexName: "", identifier: key.identifier,
                                  terms: terms, multiplier: multiplier.value, refs: refs)
        }

        // MARK: Writing

        mutating func apply() throws {
            var vocabulary: [String: Int] = [:]
            var words: [String] = []
            var changes: [TermChanges] = []
            func termID(_ text: String) -> Int {
                if let id = vocabulary[text] { return id }
                vocabulary[text] = words.count
                words.append(text)
                changes.append(TermChanges())
                return words.count - 1
            }

            let findDoc = try DirectStatement(db, """
                SELECT doc, multiplier, terms FROM search_docs WHERE identifier = ? AND index_name = ? AND kind = ?
                """)
            let insertDoc = try DirectStatement(db, """
                INSERT INTO search_docs (kind, index_name, identifier, multiplier, terms) VALUES (?, ?, ?, ?, ?)
                """)
            let updateDoc = try DirectStatement(db, "UPDATE search_docs SET multiplier = ?, terms = ? WHERE doc = ?")
            let deleteDoc = try DirectStatement(db, "DELETE FROM search_docs WHERE doc = ?")
            let insertRef = try DirectStatement(db, "INSERT OR IGNORE INTO search_refs (ref, doc) VALUES (?, ?)")
            let deleteRefs = try DirectStatement(db, "DELETE FROM search_refs WHERE doc = ?")

            // Counted apart from `self`, which `forEachDocument` reads while the body runs.
            var written = (documents: 0, delta: Int64(0), maximumMultiplier: maximumMultiplier)
            try forEachDocument { key, new in
                var old: (doc: Int64, multiplier: Double, terms: [UInt8])?
                if !fresh {
                    findDoc.bind(1, key.identifier)
                    findDoc.bind(2, key.indexName)
                    findDoc.bind(3, key.kind.rawValue)
                    if try findDoc.step() { old = (findDoc.int64(0), findDoc.double(1), findDoc.blob(2)) }
                    findDoc.reset()
                }
                let newTerms = new.map { SearchDocument.encode($0.terms) }
                if let old, let new, old.multiplier == new.multiplier, old.terms == newTerms { return }

                let doc: Int64
                if let old {
                    let oldTerms = try SearchDocument.decode(old.terms)
                    for term in oldTerms {
                        let id = termID(term.text)
                        changes[id].removals.append(Entry(doc: old.doc, key: term.impact * old.multiplier,
                                                          isHigh: term.impact >= SearchIndex.highImpact))
                    }
                    deleteRefs.bind(1, old.doc)
                    try deleteRefs.execute()
                    if let new, let newTerms {
                        updateDoc.bind(1, new.multiplier)
                        updateDoc.bind(2, newTerms)
                        updateDoc.bind(3, old.doc)
                        try updateDoc.execute()
                    } else {
                        deleteDoc.bind(1, old.doc)
                        try deleteDoc.execute()
                        written.delta -= 1
                    }
                    doc = old.doc
                } else {
                    guard let new, let newTerms else { return }
                    insertDoc.bind(1, key.kind.rawValue)
                    insertDoc.bind(2, key.indexName)
                    insertDoc.bind(3, key.identifier)
                    insertDoc.bind(4, new.multiplier)
                    insertDoc.bind(5, newTerms)
                    try insertDoc.execute()
                    doc = insertDoc.lastInsertedRowID
                    written.delta += 1
                }
                written.documents += 1
                guard let new else { return }
                for term in new.terms {
                    let id = termID(term.text)
                    changes[id].additions.append(Entry(doc: doc, key: new.key(term), isHigh: term.impact >= SearchIndex.highImpact))
                }
                written.maximumMultiplier = max(written.maximumMultiplier, new.multiplier)
                for ref in new.refs {
                    insertRef.bind(1, ref)
                    insertRef.bind(2, doc)
                    try insertRef.execute()
                }
            }

            documentsWritten += written.documents
            documentDelta += written.delta
            maximumMultiplier = written.maximumMultiplier

            // Postings and vocabulary in key order.
            let order = words.indices.sorted { words[$0] < words[$1] }
            try writeRuns(changes, words: words, order: order)
            try writeBlocks(changes, high: true, into: "search_high", words: words, order: order)
            try writeBlocks(changes, high: false, into: "search_low", words: words, order: order)
            try writeVocabulary(order.map { words[$0] }, dfDelta: order.map { changes[$0].additions.count - changes[$0].removals.count },
                                maxKey: order.map { changes[$0].additions.lazy.map(\.key).max() })
        }

        /// Writes each word's posting changes into its runs, in key order.
        private func writeRuns(_ changes: [TermChanges], words: [String], order: [Int]) throws {
            let writer = try RunWriter(db)
            func ranked(_ entries: [Entry]) -> [RankedPosting] {
                entries.map { RankedPosting(rank: -$0.key, doc: $0.doc) }.sorted(by: RankedPosting.precedes)
            }
            for term in order where !changes[term].removals.isEmpty || !changes[term].additions.isEmpty {
                try writer.write(term: words[term], removing: ranked(changes[term].removals)[...],
                                 adding: ranked(changes[term].additions)[...], isNew: fresh)
            }
        }

        /// Rewrites each changed block of `table` (`search_high` for the
        /// postings of high impact, or `search_low`): its entries without the
        /// documents that left, with those that arrived, in document order.
        private func writeBlocks(_ changes: [TermChanges], high: Bool, into table: String, words: [String], order: [Int]) throws {
            let readBlock = try DirectStatement(db, "SELECT entries FROM \(table) WHERE term = ? AND block = ?")
            let writeBlock = try DirectStatement(db, "INSERT OR REPLACE INTO \(table) (term, block, entries) VALUES (?, ?, ?)")
            let deleteBlock = try DirectStatement(db, "DELETE FROM \(table) WHERE term = ? AND block = ?")
            for term in order {
                // In document order, so each block's changes are consecutive
                // (a full build adds in document order already).
                let adds = changes[term].additions.filter { $0.isHigh == high }.map { (doc: $0.doc, key: $0.key) }.sorted { $0.doc < $1.doc }
                let drops = changes[term].removals.filter { $0.isHigh == high }.map(\.doc).sorted()
                var nextAdd = adds.startIndex
                var nextDrop = drops.startIndex
                while nextAdd < adds.endIndex || nextDrop < drops.endIndex {
                    let block = min(nextAdd < adds.endIndex ? adds[nextAdd].doc >> SearchIndex.blockShift : .max,
                                    nextDrop < drops.endIndex ? drops[nextDrop] >> SearchIndex.blockShift : .max)
                    let addsEnd = adds[nextAdd...].firstIndex { $0.doc >> SearchIndex.blockShift != block } ?? adds.endIndex
                    let dropsEnd = drops[nextDrop...].firstIndex { $0 >> SearchIndex.blockShift != block } ?? drops.endIndex
                    var entries: [(doc: Int64, key: Double)] = []
                    // A full build starts from empty tables.
                    if !fresh {
                        readBlock.bind(1, words[term])
                        readBlock.bind(2, block)
                        if try readBlock.step() {
                            readBlock.withBlob(0) { SearchIndex.decodeHigh($0, block: block, into: &entries) }
                        }
                        readBlock.reset()
                    }
                    if nextDrop < dropsEnd {
                        let dropped = Set(drops[nextDrop..<dropsEnd])
                        entries.removeAll { dropped.contains($0.doc) }
                    }
                    entries.append(contentsOf: adds[nextAdd..<addsEnd])
                    entries.sort { $0.doc < $1.doc }
                    if entries.isEmpty {
                        deleteBlock.bind(1, words[term])
                        deleteBlock.bind(2, block)
                        try deleteBlock.execute()
                    } else {
                        writeBlock.bind(1, words[term])
                        writeBlock.bind(2, block)
                        writeBlock.bind(3, SearchIndex.encodeHigh(entries))
                        try writeBlock.execute()
                    }
                    nextAdd = addsEnd
                    nextDrop = dropsEnd
                }
            }
        }

        /// Updates document counts and `max_key` of the words whose postings
        /// changed (given in term order), and files each word under its prefixes
        /// in `search_heads` again when its `max_key` moved.
        private func writeVocabulary(_ terms: [String], dfDelta: [Int], maxKey: [Double?]) throws {
            let findTerm = try DirectStatement(db, "SELECT df, max_key FROM search_terms WHERE term = ?")
            let upsertTerm = try DirectStatement(db, "INSERT OR REPLACE INTO search_terms (term, df, max_key) VALUES (?, ?, ?)")
            let deleteTerm = try DirectStatement(db, "DELETE FROM search_terms WHERE term = ?")
            let insertHead = try DirectStatement(db, "INSERT INTO search_heads (prefix, rank, term) VALUES (?, ?, ?)")
            let deleteHead = try DirectStatement(db, "DELETE FROM search_heads WHERE prefix = ? AND rank = ? AND term = ?")
            func file(_ term: String, maxKey: Double, under statement: DirectStatement) throws {
                for prefix in SearchIndex.headPrefixes(of: term) {
                    statement.bind(1, prefix)
                    statement.bind(2, -maxKey)
                    statement.bind(3, term)
                    try statement.execute()
                }
            }
            for (index, term) in terms.enumerated() {
                let delta = dfDelta[index]
                guard delta != 0 || maxKey[index] != nil else { continue }
                findTerm.bind(1, term)
                let old: (df: Int64, maxKey: Double)? = try findTerm.step() ? (findTerm.int64(0), findTerm.double(1)) : nil
                findTerm.reset()
                let df = (old?.df ?? 0).addingSaturated(Int64(delta))
                let newMax = max(old?.maxKey ?? -.infinity, maxKey[index] ?? -.infinity)
                let headsChange = df <= 0 || old?.maxKey != newMax
                if let old, headsChange { try file(term, maxKey: old.maxKey, under: deleteHead) }
                if df <= 0 {
                    deleteTerm.bind(1, term)
                    try deleteTerm.execute()
                    continue
                }
                upsertTerm.bind(1, term)
                upsertTerm.bind(2, df)
                upsertTerm.bind(3, newMax)
                try upsertTerm.execute()
                if headsChange { try file(term, maxKey: newMax, under: insertHead) }
            }
        }
    }
}
