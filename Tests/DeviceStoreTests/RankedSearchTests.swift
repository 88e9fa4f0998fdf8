import Foundation
import GRDB
import IndexModel
import IndexQuery
import Testing
@testable import DeviceStore
import Workloads

extension SearchDocument {
    /// The reference the search is held to: the best key among this document's
    /// words that `word` matches, found by looking at every word.
    func bestKey(for word: SearchWord) -> Double? {
        terms.filter { word.isPrefix ? $0.text.hasPrefix(word.text) : $0.text == word.text }.map(key).max()
    }
}

/// Ranked search stops early; these tests hold it to the answer that scoring
/// every document gives.
@Suite struct RankedSearchTests {
    /// The items of one index, with what their multiplier depends on.
    struct Corpus {
        var items: [String: SearchableItem] = [:]
        var counts: [String: (shown: Int, engaged: Int)] = [:]

        /// Every item scored against `words` the slow way, best first.
        func bestFirst(_ words: [SearchWord], limit: Int) -> [(identifier: String, score: Double)] {
            var documents: [(identifier: String, document: SearchDocument)] = []
            for (identifier, item) in items {
                let attributes = item.attributes
                let terms = SearchDocument.terms(of: SearchDocument.itemFields(
                    title: attributes.title, displayName: attributes.displayName,
                    contentDescription: attributes.contentDescription,
                    keywords: attributes.keywords.map { $0.joined(separator: "\n") }))
                let count = counts[identifier] ?? (0, 0)
                let hint = attributes.rankingHint ?? 0
                let multiplier = (1 + 0.25 * min(max(hint, 0), 1))
                    * SearchDocument.engagementFactor(shown: count.shown, engaged: count.engaged)
                    * SearchDocument.tieBreak(kind: .item, indexName: "t", identifier: identifier)
                documents.append((identifier, SearchDocument(kind: .item, indexName: "t", identifier: identifier,
                                                             terms: terms, multiplier: multiplier, refs: [identifier])))
            }
            let total = Double(documents.count)
            let weights: [Double] = words.count == 1 ? [1] : words.map { word in
                var df = 0
                for (_, document) in documents {
                    df += document.terms.filter { word.isPrefix ? $0.text.hasPrefix(word.text) : $0.text == word.text }.count
                }
                let frequency = min(Double(df), total)
                return log(1 + (total - frequency + 0.5) / (frequency + 0.5))
            }
            var scored: [(identifier: String, score: Double)] = []
            for (identifier, document) in documents {
                var score = 0.0
                var matches = true
                for (word, weight) in zip(words, weights) {
                    guard let key = document.bestKey(for: word) else {
                        matches = false
                        break
                    }
                    score += weight * key
                }
                if matches { scored.append((identifier, score)) }
            }
            scored.sort { $0.score != $1.score ? $0.score > $1.score : $0.identifier < $1.identifier }
            return Array(scored.prefix(limit))
        }
    }

    func queries(_ corpus: inout SearchCorpus, count: Int) -> [String] {
        (0..<count).map { number in
            switch number % 4 {
            case 0: corpus.prefixQuery()
            case 1: corpus.singleTermQuery()
            case 2: corpus.twoTermQuery() + (number % 8 == 2 ? " " : "")
            default: corpus.twoTermQuery() + " " + corpus.prefixQuery()
            }
        }
    }

    /// Returns how many queries the high-impact layer could answer alone.
    @discardableResult
    func expectSameAsScoringEverything(_ store: DeviceStore, _ corpus: Corpus, _ queries: [String]) throws -> Int {
        var decidedByHighLayer = 0
        for query in queries {
            let expected = corpus.bestFirst(SearchText.search(query, limit: 16), limit: 10)
            for strategy in [RankedSearch.Strategy.automatic, .threshold, .intersection, .rarestLookedUp, .highLayer] {
                let results: [SearchResult]
                if strategy == .highLayer {
                    guard let answered = try? store.search(query, limit: 10, strategy: strategy) else { continue }
                    results = answered
                    decidedByHighLayer += 1
                } else {
                    results = try store.search(query, limit: 10, strategy: strategy)
                }
                #expect(results.map(\.members) == expected.map { [.item(index: "t", identifier: $0.identifier)] },
                        "query \"\(query)\", \(strategy)")
                #expect(results.map(\.score) == expected.map(\.score), "query \"\(query)\", \(strategy)")
            }
        }
        return decidedByHighLayer
    }

    @Test(arguments: [UInt64(3), 4])
    func rankedSearchFindsWhatScoringEveryDocumentFinds(seed: UInt64) throws {
        let store = try makeStore(seed: seed)
        var generator = SearchCorpus(seed: seed, vocabularySize: 120)
        var corpus = Corpus()
        var random = SplitMix64(seed: seed)
        for batch in 0..<4 {
            let items = (0..<100).map { number in
                var item = generator.item(identifier: "\(batch * 100 + number)")
                if random.next() % 5 == 0 { item.attributes.rankingHint = Double(random.next() % 100) / 100 }
                return item
            }
            try store.index(named: "t").indexSearchableItems(items)
            for item in items { corpus.items[item.uniqueIdentifier] = item }
        }
        for _ in 0..<150 {
            let ref = "\(random.next() % 400)"
            try store.recordShown(ref: ref)
            corpus.counts[ref, default: (0, 0)].shown += 1
            if random.next() % 3 == 0 {
                try store.recordEngaged(ref: ref)
                corpus.counts[ref, default: (0, 0)].engaged += 1
            }
        }
        let decided = try expectSameAsScoringEverything(store, corpus, queries(&generator, count: 40))
        #expect(decided >= 3, "the high-impact layer answered \(decided) of the searches")

        // Replacements, deletions and more engagement, folded in incrementally.
        let replaced = Set((0..<60).map { _ in random.next() % 400 }).sorted().map { generator.item(identifier: "\($0)") }
        try store.index(named: "t").indexSearchableItems(replaced)
        for item in replaced { corpus.items[item.uniqueIdentifier] = item }
        let deleted = Set((0..<40).map { _ in random.next() % 400 }).sorted().map { "\($0)" }
        try store.index(named: "t").deleteSearchableItems(withIdentifiers: deleted)
        for identifier in deleted { corpus.items[identifier] = nil }
        for _ in 0..<50 {
            let ref = "\(random.next() % 400)"
            try store.recordEngaged(ref: ref)
            corpus.counts[ref, default: (0, 0)].engaged += 1
        }
        try expectSameAsScoringEverything(store, corpus, queries(&generator, count: 40))
    }

    /// Everything the search index holds, keyed by item rather than by its
    /// internal document number. `max_key` is left out: it is only a bound.
    func searchIndexContents(_ store: DeviceStore) throws -> [String] {
        try store.read { db in
            var lines: [String] = []
            for row in try Row.fetchAll(db, sql: """
                SELECT kind, index_name, identifier, multiplier, hex(terms) FROM search_docs ORDER BY kind, index_name, identifier
                """) {
                lines.append("doc \(row[0] as Int64) \(row[1] as String) \(row[2] as String) \(row[3] as Double) \(row[4] as String)")
            }
            lines.append(contentsOf: try postings(db).map { "posting \($0.term) \($0.rank) \($0.owner)" })
            for row in try Row.fetchAll(db, sql: "SELECT term, df FROM search_terms ORDER BY term") {
                lines.append("term \(row[0] as String) \(row[1] as Int64)")
            }
            for row in try Row.fetchAll(db, sql: """
                SELECT r.ref, d.kind, d.index_name, d.identifier FROM search_refs r JOIN search_docs d ON d.doc = r.doc
                ORDER BY 1, 2, 3, 4
                """) {
                lines.append("ref \(row[0] as String) \(row[1] as Int64) \(row[2] as String) \(row[3] as String)")
            }
            lines.append("documents \(try SearchIndex.documentCount(db))")
            var high: [String] = []
            for row in try Row.fetchAll(db, sql: "SELECT term, block, entries FROM search_high") {
                var entries: [(doc: Int64, key: Double)] = []
                let bytes = [UInt8]((row[2] as Data))
                bytes.withUnsafeBytes { SearchIndex.decodeHigh($0, block: row[1], into: &entries) }
                for entry in entries {
                    let owner = try Row.fetchOne(db, sql: "SELECT kind, index_name, identifier FROM search_docs WHERE doc = ?",
                                                 arguments: [entry.doc])
                    let name = owner.map { "\($0[0] as Int64) \($0[1] as String) \($0[2] as String)" } ?? "missing"
                    high.append("high \(row[0] as String) \(name) \(entry.key)")
                }
            }
            lines.append(contentsOf: high.sorted())
            // Every word is filed under its one- and two-character prefixes with
            // its current max_key, and nothing else is.
            let heads = try Row.fetchAll(db, sql: "SELECT prefix, rank, term FROM search_heads ORDER BY 1, 2, 3")
                .map { "\($0[0] as String) \($0[1] as Double) \($0[2] as String)" }
            var filed: [(prefix: String, rank: Double, term: String)] = []
            for row in try Row.fetchAll(db, sql: "SELECT term, max_key FROM search_terms") {
                let term: String = row[0]
                let maxKey: Double = row[1]
                for prefix in SearchIndex.headPrefixes(of: term) { filed.append((prefix, -maxKey, term)) }
            }
            filed.sort { ($0.prefix, $0.rank, $0.term) < ($1.prefix, $1.rank, $1.term) }
            let expected = filed.map { "\($0.prefix) \($0.rank) \($0.term)" }
            if heads != expected { lines.append("search_heads disagrees with search_terms") }
            return lines
        }
    }

    /// Every posting of `search_runs`, by word and rank, with the document it
    /// names (kind, index, identifier); checks that each word's runs hold
    /// their postings in order, each run keyed by its first.
    func postings(_ db: Database) throws -> [(term: String, rank: Double, owner: String)] {
        var postings: [(term: String, rank: Double, owner: String)] = []
        var previous: (term: String, posting: SearchIndex.RankedPosting)?
        for row in try Row.fetchAll(db, sql: "SELECT term, rank, doc, entries FROM search_runs ORDER BY term, rank, doc") {
            let term: String = row[0]
            var run: [SearchIndex.RankedPosting] = []
            try [UInt8]((row[3] as Data)).withUnsafeBytes { try SearchIndex.Run.decode($0, term: term, into: &run) }
            #expect(run.first == SearchIndex.RankedPosting(rank: row[1], doc: row[2]))
            #expect(run.count <= 2 * SearchIndex.Run.length)
            for posting in run {
                if let previous, previous.term == term { #expect(SearchIndex.RankedPosting.precedes(previous.posting, posting)) }
                previous = (term, posting)
                let owner = try Row.fetchOne(db, sql: "SELECT kind, index_name, identifier FROM search_docs WHERE doc = ?",
                                             arguments: [posting.doc])
                postings.append((term, posting.rank, owner.map { "\($0[0] as Int64) \($0[1] as String) \($0[2] as String)" } ?? "missing"))
            }
        }
        return postings.sorted { ($0.term, $0.rank, $0.owner) < ($1.term, $1.rank, $1.owner) }
    }

    @Test func theIndexFoldedCallByCallEqualsOneBuiltFromScratch() throws {
        let store = try makeStore()
        var generator = SearchCorpus(seed: 9, vocabularySize: 80)
        var random = SplitMix64(seed: 9)
        for round in 0..<30 {
            switch random.next() % 6 {
            case 0, 1:
                try store.index(named: "t").indexSearchableItems(Set((0..<5).map { _ in random.next() % 60 }).sorted().map {
                    generator.item(identifier: "\($0)")
                })
            case 2:
                try store.index(named: "t").deleteSearchableItems(withIdentifiers: ["\(random.next() % 60)"])
            case 3:
                try store.record(UserActivity(activityType: "view", title: generator.item(identifier: "x").attributes.title,
                                              eligibleForSearch: random.next() % 4 != 0,
                                              relatedUniqueIdentifier: "\(random.next() % 60)"))
            case 4:
                try store.recordShown(ref: "\(random.next() % 60)")
            default:
                try store.recordEngaged(ref: "\(random.next() % 60)")
            }
            if round % 3 == 0 { _ = try store.search(generator.prefixQuery()) }
        }
        _ = try store.refreshSearchIndex()
        let folded = try searchIndexContents(store)
        #expect(folded.contains { $0.hasPrefix("posting ") })
        try store.rebuildProjections()
        let refresh = try store.refreshSearchIndex()
        #expect(refresh.fullBuild)
        #expect(try searchIndexContents(store) == folded)
    }

    /// A word in hundreds of documents, folded a batch at a time with
    /// updates, deletions and engagement moving its postings, ends in runs
    /// that split as they grew, and the index equals one built at once.
    @Test func aCommonWordsRunsSplitAsTheyGrowAndEqualAFullBuild() throws {
        let store = try makeStore()
        let words = ["amber", "birch", "cedar", "dune", "ember", "fjord", "grove"]
        for batch in 0..<12 {
            try store.index(named: "t").indexSearchableItems((0..<25).map { offset in
                let number = batch * 25 + offset
                return item("\(number)", title: "common \(words[number % words.count]) \(number)",
                            description: String(repeating: "filler ", count: number % 5) + "common")
            })
            if batch > 0 {
                try store.index(named: "t").indexSearchableItems([item("\(batch * 7)", title: "common edited \(batch)")])
                try store.index(named: "t").deleteSearchableItems(withIdentifiers: ["\(batch * 11)"])
                try store.recordEngaged(ref: "\(batch * 13)")
            }
            #expect(try !store.search("common").isEmpty)
        }
        let runs = try store.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM search_runs WHERE term = 'common'") ?? 0 }
        #expect(runs >= 300 / (2 * SearchIndex.Run.length))
        let folded = try searchIndexContents(store)
        try store.rebuildProjections()
        #expect(try store.refreshSearchIndex().fullBuild)
        #expect(try searchIndexContents(store) == folded)
        #expect(try store.resultTitles("common edited 11") == ["common edited 11"])
    }

    /// A run that an edit of the store file cut short is an error naming the
    /// table and the word, not a crash or a wrong answer.
    @Test func aDamagedRunIsAnErrorNamingItsWord() throws {
        let store = try makeStore()
        try store.index(named: "t").indexSearchableItems([item("1", title: "Harbour lights")])
        _ = try store.refreshSearchIndex()
        try store.write { db in try db.execute(sql: "UPDATE search_runs SET entries = x'000000000000F03F80' WHERE term = 'harbour'") }
        let error = try #require(throws: DeviceStoreError.self) { try store.search("harbour") }
        #expect(error.message.contains("search_runs") && error.message.contains("harbour"), "\(error)")
    }

    /// A store file someone edited may hold any count: document frequencies,
    /// engagement and the document count at Int64.max are summed and folded
    /// saturating, and searches still answer.
    @Test func countsAtTheirLargestInAnEditedStoreDoNotOverflow() throws {
        let store = try makeStore()
        try store.index(named: "t").indexSearchableItems([
            item("1", title: "Harbour lights", url: "https://example.com/1"),
            item("2", title: "Harbours bells", url: "https://example.com/2"),
        ])
        for ref in ["1", "https://example.com/1", "2", "https://example.com/2"] { try store.recordShown(ref: ref) }
        _ = try store.refreshSearchIndex()
        let largest = Int64.max
        try store.write { db in
            try db.execute(sql: "UPDATE search_terms SET df = ?", arguments: [largest])
            try db.execute(sql: "UPDATE engagement SET shown = ?, engaged = ?", arguments: [largest, largest])
            try db.execute(sql: "UPDATE search_meta SET value = ? WHERE key = 'documents'", arguments: [largest])
        }
        // Two words under one prefix, whole and lazily read, and a result whose references' counts add up past Int64.max.
        #expect(try store.resultTitles("harb").count == 2)
        #expect(try store.resultTitles("h").count == 2)
        #expect(try store.resultTitles("harbour lights") == ["Harbour lights"])
        // Folding a new document and engagement into those counts.
        try store.index(named: "t").indexSearchableItems([item("3", title: "Harbour", url: "https://example.com/3")])
        try store.recordEngaged(ref: "https://example.com/1")
        #expect(try store.resultTitles("harbour ").count == 2)
        #expect(try store.read { try SearchIndex.documentCount($0) } == largest)
    }

    @Test func anIndexOfAnotherLayoutIsBuiltAgain() throws {
        let store = try makeStore()
        try store.index(named: "t").indexSearchableItems([item("1", title: "Harbour lights")])
        _ = try store.refreshSearchIndex()
        try store.write { db in
            try db.execute(sql: "UPDATE search_meta SET value = 4 WHERE key = 'layout'")
            try db.execute(sql: "DELETE FROM search_heads")
            try db.execute(sql: """
                CREATE TABLE search_postings (term TEXT NOT NULL, rank REAL NOT NULL, doc INTEGER NOT NULL,
                PRIMARY KEY (term, rank, doc)) WITHOUT ROWID
                """)
        }
        let refresh = try store.refreshSearchIndex()
        #expect(refresh.fullBuild)
        #expect(try store.read { try $0.tableExists("search_postings") } == false)
        #expect(try store.read { try SearchIndex.documentCount($0) } == 1)
        #expect(try store.resultTitles("h") == ["Harbour lights"])
    }

    @Test func searchSeesEveryCallBeforeIt() throws {
        let store = try makeStore()
        try store.index(named: "t").indexSearchableItems([item("1", title: "Harbour lights")])
        #expect(try store.resultTitles("harb") == ["Harbour lights"])
        try store.index(named: "t").indexSearchableItems([item("1", title: "Mountain lights")])
        #expect(try store.resultTitles("harb").isEmpty)
        #expect(try store.resultTitles("moun") == ["Mountain lights"])
        try store.index(named: "t").deleteSearchableItems(withIdentifiers: ["1"])
        #expect(try store.resultTitles("lights").isEmpty)
    }

    @Test func aReadOnlyStoreSearchesOnlyWhenItsIndexIsCurrent() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("device.sqlite").path
        do {
            let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
            try store.index(named: "t").indexSearchableItems([item("1", title: "Quiet harbour")])
        }
        do {
            let reader = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart), readOnly: true))
            let error = #expect(throws: DeviceStoreError.self) { try reader.search("harbour") }
            #expect(error?.code == .readOnly)
            #expect(error?.message.contains("search index is behind the journal") == true)
        }
        do {
            let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
            #expect(try store.resultTitles("harbour") == ["Quiet harbour"])
        }
        let reader = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart), readOnly: true))
        #expect(try reader.resultTitles("harbour") == ["Quiet harbour"])
    }

    @Test func onlyTheWordBeingTypedIsAPrefix() {
        #expect(SearchText.search("sunset be", limit: 16) == [SearchWord(text: "sunset", isPrefix: false),
                                                               SearchWord(text: "be", isPrefix: true)])
        #expect(SearchText.search("sunset be ", limit: 16).allSatisfy { !$0.isPrefix })
        #expect(SearchText.search("a b c", limit: 2).allSatisfy { !$0.isPrefix })
    }

    @Test(arguments: ["strasse creme", "der straße", "der ærø", "crème lodz", "creme łódź", "creme brulee", "naive cafe",
                      "naïve ÉCOLE", "ǆemal istanbul", "ǆemal İstanbul", "strasse lodz"])
    func bothStrategiesAgreeOnTextBeyondASCII(query: String) throws {
        let store = try makeStore()
        try store.index(named: "t").indexSearchableItems([
            item("1", title: "Straße der Ærø"), item("2", title: "Łódź crème brûlée"), item("3", title: "naïve café École"),
            item("4", title: "İstanbul ǅemal"), item("5", title: "Strasse lodz creme"),
        ])
        for text in [query, query + " "] {
            #expect(SearchText.search(text, limit: 16).count == 2)
            let threshold = try store.search(text, limit: 10, strategy: .threshold)
            let intersection = try store.search(text, limit: 10, strategy: .intersection)
            let lookedUp = try store.search(text, limit: 10, strategy: .rarestLookedUp)
            #expect(threshold.map(\.members) == intersection.map(\.members), "\(text)")
            #expect(threshold.map(\.members) == lookedUp.map(\.members), "\(text)")
            #expect(!threshold.isEmpty, "\(text)")
        }
    }

    /// The intersection reads a common whole word either block by block where
    /// the rarest word's documents fall, or whole, or looks each of the rarest
    /// word's documents up; each must find what the threshold algorithm finds. 5,000 documents make five blocks of 1,024.
    @Test func intersectionsReadingACommonWordByBlockOrWholeAgreeWithTheThresholdAlgorithm() throws {
        let store = try makeStore()
        var items: [SearchableItem] = []
        for number in 0..<5_000 {
            var words = ["common", "filler\(number % 7)"]
            // "clustered" in five documents of the first block; "spread" in one
            // document of each block.
            if number < 5 { words.append("clustered") }
            if number % 1_024 == 3 { words.append("spread") }
            items.append(item("\(number)", title: words.joined(separator: " ")))
        }
        try store.index(named: "t").indexSearchableItems(items)
        #expect(RankedSearch.pointReadsPayOff(touchedBlocks: 1, documentFrequency: 5_000, blocks: 5))
        #expect(!RankedSearch.pointReadsPayOff(touchedBlocks: 5, documentFrequency: 5_000, blocks: 5))
        // With a trailing space "common" is a whole word; without, a prefix,
        // which is always read whole.
        for text in ["clustered common ", "spread common ", "clustered comm", "spread comm"] {
            let threshold = try store.search(text, limit: 10, strategy: .threshold)
            let intersection = try store.search(text, limit: 10, strategy: .intersection)
            let lookedUp = try store.search(text, limit: 10, strategy: .rarestLookedUp)
            let automatic = try store.search(text, limit: 10, strategy: .automatic)
            #expect(threshold.map(\.members) == intersection.map(\.members), "\(text)")
            #expect(threshold.map(\.members) == lookedUp.map(\.members), "\(text)")
            #expect(threshold.map(\.members) == automatic.map(\.members), "\(text)")
            #expect(threshold.count == 5, "\(text)")
        }
    }

    @Test func wordsAreFoldedTheSameWayOnBothSides() {
        #expect(SearchText.words(in: "Café au LAIT, n°5") == ["cafe", "au", "lait", "n", "5"])
        #expect(SearchText.words(in: "Haleakalā-Sunrise") == ["haleakala", "sunrise"])
        #expect(SearchText.words(in: String(repeating: "é", count: 40)) == [String(repeating: "e", count: 40)])
        #expect(SearchText.words(in: String(repeating: "a", count: 100)) == [String(repeating: "a", count: 64)])
    }
}
