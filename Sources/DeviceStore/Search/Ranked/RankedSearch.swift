import Foundation
import GRDB
import IndexQuery
import SQLiteSupport

/// Top-k ranked search over `SearchIndex`, reading posting lists best first and
/// stopping as soon as no unread posting can beat the results it has.
///
/// A document matches when it has every word typed, the last one (while it is
/// still being typed) as a prefix. Its score for one typed word is its best key
/// among the words it has that match; its score for the search is the sum over
/// typed words, each weighted by the typed word's idf when there is more than one.
///
/// Each typed word is a *stream*: the posting lists of the vocabulary words it
/// matches, merged best first, opening a list only when its best possible
/// key (`search_terms.max_key`) could still come next. The streams are read in
/// turns, a growing batch at a time (the threshold algorithm): a document seen in
/// one stream is scored completely from its `search_docs` row, and a scored
/// document is final once its score is at least the sum of what each stream
/// could still deliver. When a stream runs out, every match has been seen.
struct RankedSearch {
    /// How documents that have every word are found when there is more than one.
    enum Strategy {
        /// Whichever the cost estimate says is cheaper.
        case automatic
        /// The threshold algorithm over the impact-ordered streams.
        case threshold
        /// Every document with all the words, from the complete block layers, then the best.
        case intersection
        /// Every document of the rarest word that has all the words, each
        /// looked up in `search_docs`, then the best.
        case rarestLookedUp
        /// Only the high-impact layer; fails when that cannot decide.
        case highLayer
    }

    let words: [SearchWord]
    let limit: Int
    let now: Int64
    var strategy = Strategy.automatic
    /// Each result carries the parts of its score (`SearchExplanation`).
    var explain = false

    func run(_ db: Database) throws -> [SearchResult] {
        let streams = try words.map { try WordStream(db: db, word: $0) }
        let weights = try idfWeights(db, streams)
        var assembler = ResultAssembler(db: db, limit: limit, now: now, explaining: explaining(weights))
        var candidates = ScoreHeap()
        var scored = Set<Int64>()
        if streams.count > 1, strategy == .automatic || strategy == .highLayer {
            if let results = try highLayer(db, streams, weights: weights) { return results }
            guard strategy == .automatic else { throw SearchIndexError("the high-impact layer cannot decide this search") }
        }
        let intersect = switch strategy {
        case .automatic: streams.count > 1 ? try prefersIntersection(db, streams) : false
        case .threshold, .highLayer: false
        case .intersection, .rarestLookedUp: true
        }
        if streams.count > 1, intersect, var all = try intersection(db, streams, weights: weights) {
            while let best = all.peek {
                all.pop()
                if try assembler.settle(doc: best.doc, score: best.score) { break }
            }
            return try assembler.results()
        }
        let lookup = try DirectStatement(db, "SELECT multiplier, terms FROM search_docs WHERE doc = ?")
        var matcher = SearchDocument.Matcher(words)
        var batches = [Int](repeating: 8, count: streams.count)
        var turn = 0
        while true {
            var bound = 0.0
            for (stream, weight) in zip(streams, weights) {
                guard let next = try stream.bound() else {
                    bound = -.infinity
                    break
                }
                bound += weight * next
            }
            while let best = candidates.peek, best.score >= bound {
                candidates.pop()
                if try assembler.settle(doc: best.doc, score: best.score) { return try assembler.results() }
            }
            guard bound > -.infinity else { break }

            let index = turn % streams.count
            turn += 1
            var fresh: [Posting] = []
            while fresh.count < batches[index], let posting = try streams[index].next() {
                if scored.insert(posting.doc).inserted { fresh.append(posting) }
            }
            batches[index] = min(batches[index] * 2, 64)
            if streams.count == 1 {
                for posting in fresh { candidates.push(score: posting.key, doc: posting.doc) }
                continue
            }
            for posting in fresh {
                lookup.bind(1, posting.doc)
                defer { lookup.reset() }
                guard try lookup.step(), let score = matcher.score(lookup, multiplier: 0, terms: 1, weights: weights)
                else { continue }
                candidates.push(score: score, doc: posting.doc)
            }
        }
        return try assembler.results()
    }

    /// The search answered from `search_high`, or nil when that layer cannot
    /// decide it.
    ///
    /// A document with every word at high impact (in a title, display name or
    /// keywords) has its exact score in the layer. A document with only some of
    /// them there has a bound: its known keys, plus `highImpact × maxMultiplier`
    /// for each word it lacks there; those whose bound could still make the results
    /// are scored from `search_docs`. A document with no word there scores at most
    /// `Σ w × highImpact × maxMultiplier`; once that bound is reached the layer
    /// cannot decide and the search falls back to the other strategies. For pairs
    /// of common words this reads a few thousand entries packed in blobs and a few
    /// dozen documents, instead of scoring thousands of postings one by one.
    private func highLayer(_ db: Database, _ streams: [WordStream], weights: [Double]) throws -> [SearchResult]? {
        // Worth trying only when, if the words were independent and about a third
        // of each word's occurrences were high-impact, enough documents would
        // have them all there.
        let total = Double(max(try SearchIndex.documentCount(db), 1))
        var expected = total
        for stream in streams { expected *= 0.3 * min(Double(try stream.documentFrequency()), total) / total }
        guard expected >= Double(2 * limit) else { return nil }
        let lowCeiling = SearchIndex.highImpact * (try SearchIndex.maximumMultiplier(db))
        guard let lists = try blockLists(db, from: ["search_high"], atMost: RankedSearch.highLayerEntries)?.map({ $0.decoded() })
        else { return nil }
        // Merge the lists: a document in all of them has its exact score; one in
        // some has a bound.
        var exactScores: [(score: Double, doc: Int64)] = []
        var partial: [(upper: Double, doc: Int64)] = []
        var positions = [Int](repeating: 0, count: lists.count)
        let counts = lists.map(\.count)
        // Indexed, not `for (index, list) in lists.enumerated()`, which
        // copied (retained and released) each list for every document.
        while true {
            var doc = Int64.max
            for index in lists.indices where positions[index] < counts[index] {
                doc = min(doc, lists[index][positions[index]].doc)
            }
            guard doc != .max else { break }
            var score = 0.0
            var complete = true
            for index in lists.indices {
                if positions[index] < counts[index], lists[index][positions[index]].doc == doc {
                    score += weights[index] * lists[index][positions[index]].key
                    positions[index] += 1
                } else {
                    score += weights[index] * lowCeiling
                    complete = false
                }
            }
            if complete { exactScores.append((score, doc)) } else { partial.append((score, doc)) }
        }
        guard exactScores.count >= limit else { return nil }
        // Keep the best few exact documents (the assembler may skip or join
        // some); the rest are remembered as one bound.
        let keep = 4 * limit
        var best: [(score: Double, doc: Int64)] = []
        var droppedExact = -Double.infinity
        for entry in exactScores {
            if best.count == keep {
                guard entry.score > best[0].score else {
                    droppedExact = max(droppedExact, entry.score)
                    continue
                }
                droppedExact = max(droppedExact, best[0].score)
                best.removeFirst()
            }
            let index = best.firstIndex { $0.score > entry.score } ?? best.count
            best.insert(entry, at: index)
        }
        // Only partial documents that could beat the limit-th exact score need a
        // lookup; the rest are remembered as one bound too.
        let unseen = weights.reduce(0) { $0 + $1 * lowCeiling }
        var cut = unseen
        if best.count >= limit { cut = max(cut, best[best.count - limit].score) }
        var dropped = droppedExact
        partial.removeAll { entry in
            guard entry.upper < cut else { return false }
            dropped = max(dropped, entry.upper)
            return true
        }
        guard partial.count <= 4096 else { return nil }
        partial.sort { $0.upper != $1.upper ? $0.upper > $1.upper : $0.doc < $1.doc }
        var exact = ScoreHeap()
        for entry in best { exact.push(score: entry.score, doc: entry.doc) }
        let floor = max(unseen, dropped)
        let lookup = try DirectStatement(db, "SELECT multiplier, terms FROM search_docs WHERE doc = ?")
        var matcher = SearchDocument.Matcher(words)
        var assembler = ResultAssembler(db: db, limit: limit, now: now, explaining: explaining(weights))
        var next = 0
        while true {
            let nextPartial = next < partial.count ? partial[next].upper : -.infinity
            if let best = exact.peek, best.score >= max(nextPartial, floor) {
                exact.pop()
                if try assembler.settle(doc: best.doc, score: best.score) { return try assembler.results() }
                continue
            }
            guard nextPartial > floor else { return nil }
            let doc = partial[next].doc
            next += 1
            lookup.bind(1, doc)
            defer { lookup.reset() }
            if try lookup.step(), let score = matcher.score(lookup, multiplier: 0, terms: 1, weights: weights) {
                exact.push(score: score, doc: doc)
            }
        }
    }

    /// Each word's entries in `tables` (block layers), as stored: one range
    /// read per table over the vocabulary words it matches. Nil when a word
    /// brings more than `cap`, or none: then no document has every word
    /// there, and the other words' lists (a short prefix's may be long) are
    /// not read.
    private func blockLists(_ db: Database, from tables: [String], atMost cap: Int) throws -> [BlockList]? {
        var lists: [BlockList] = []
        for word in words {
            guard let list = try blockList(db, word, from: tables, atMost: cap), list.count > 0 else { return nil }
            lists.append(list)
        }
        return lists
    }

    /// `word`'s entries in `tables`, or nil when there are more than `cap`.
    private func blockList(_ db: Database, _ word: SearchWord, from tables: [String], atMost cap: Int) throws -> BlockList? {
        let list = BlockList()
        for table in tables {
            let read = try DirectStatement(db, "SELECT block, entries FROM \(table) WHERE term >= ? AND term < ?")
            defer { read.reset() }
            read.bind(1, word.text)
            read.bind(2, word.text + (word.isPrefix ? "\u{10FFFF}" : "\u{0}"))
            while try read.step() {
                list.add(block: read.int64(0), entries: read.blob(1))
                guard list.count <= cap else { return nil }
            }
        }
        return list
    }

    /// Whether finding every document that has all the words, by merging their
    /// complete document-ordered lists (`search_high` and `search_low`), is
    /// cheaper than the threshold algorithm. When few documents have all the
    /// words, the threshold algorithm reads every stream in turns until the
    /// rarest ends, a lookup per posting; the intersection decodes the rarest word's entries and finds
    /// each in the other words' blocks for a few hundredths of that, and the
    /// entries carry the keys, so nothing is looked up. When many documents
    /// have all the words, the threshold algorithm stops after a few hundred
    /// postings.
    private func prefersIntersection(_ db: Database, _ streams: [WordStream]) throws -> Bool {
        let total = Double(max(try SearchIndex.documentCount(db), 1))
        let frequencies = try streams.map { min(Double(try $0.documentFrequency()), total) }.sorted()
        guard let rarest = frequencies.first, rarest > 0 else { return false }
        // What the threshold algorithm scores, if the words are independent: when
        // enough documents have every word at high impact, about `limit` matches'
        // worth from the rarest stream; otherwise it reads every stream in turns
        // until the rarest one ends, a lookup per posting (as for a word in
        // most documents beside a rare one).
        let jointRate = frequencies.dropFirst().reduce(1.0) { $0 * $1 / total }
        let highMatches = frequencies.reduce(total) { $0 * 0.3 * $1 / total }
        let thresholdReads = highMatches >= Double(4 * limit)
            ? min(rarest, Double(limit) / max(jointRate, 1e-9))
            : rarest * Double(frequencies.count)
        let thresholdCost = thresholdReads * RankedSearch.lookupCost
        // The intersection decodes the rarest word's entries, looks for each in
        // the other words' blocks, and copies those blocks out of SQLite.
        let intersectionCost = frequencies.allSatisfy({ $0 <= Double(RankedSearch.intersectionEntries) })
            ? rarest * (RankedSearch.entryCost + Double(frequencies.count - 1) * RankedSearch.probeCost)
                + frequencies.dropFirst().reduce(0, +) * RankedSearch.copyCost
            : .infinity
        return intersectionCost < thresholdCost
    }

    /// The most high-layer entries one typed word may bring; beyond it the
    /// other strategies are cheaper.
    private static let highLayerEntries = 150_000
    /// The most entries one typed word may bring to an intersection (10 bytes
    /// each, copied but not decoded unless it is the rarest word).
    private static let intersectionEntries = 2_000_000

    /// Relative costs, a `search_docs` lookup and scoring per posting being 1:
    /// decoding a block layer's entry costs a small fraction of a lookup
    /// (fitted with `bench query`); looking for one document in a word's
    /// blocks and reading an entry out of SQLite are estimated from the
    /// binary search's steps and a 10-byte copy, not measured on their own.
    private static let lookupCost = 1.0
    private static let entryCost = 0.015
    private static let probeCost = 0.03
    private static let copyCost = 0.001

    /// Every document that has all the words, with its exact score, from the
    /// words' complete lists (`search_high` and `search_low`): the rarest is
    /// decoded and walked in document order, and each of its documents is
    /// looked for in the others' blocks by binary search, so that a rare word
    /// beside a common one decodes only the rare one's entries. A whole word
    /// far more common than the rarest is not read whole: only the blocks
    /// the rarest word's documents fall in, one point read each. The entries
    /// carry the keys, so no document is looked up, unless looking up each
    /// of the rarest word's documents costs less than reading the other words
    /// (`lookupsPayOff`). Nil when a word brings more than
    /// `intersectionEntries` entries.
    private func intersection(_ db: Database, _ streams: [WordStream], weights: [Double]) throws -> ScoreHeap? {
        let tables = ["search_high", "search_low"]
        let frequencies = try streams.map { try $0.documentFrequency() }
        guard let shortest = frequencies.indices.min(by: { frequencies[$0] < frequencies[$1] }),
              let walked = try blockList(db, words[shortest], from: tables, atMost: RankedSearch.intersectionEntries)
        else { return nil }
        let entries = walked.decoded()
        var touchedBlocks = 0
        var lastBlock = Int64.min
        for entry in entries where entry.doc >> SearchIndex.blockShift != lastBlock {
            touchedBlocks += 1
            lastBlock = entry.doc >> SearchIndex.blockShift
        }
        let blocks = Double(try SearchIndex.blockCount(db))
        let lookUp = switch strategy {
        case .rarestLookedUp: true
        case .intersection: false
        case .automatic, .threshold, .highLayer:
            try lookupsPayOff(db, streams, frequencies, rarest: shortest, documents: entries.count,
                              touchedBlocks: touchedBlocks, blocks: blocks)
        }
        if lookUp {
            return try lookedUp(db, entries, weights: weights)
        }
        var lists: [BlockList] = []
        for (index, word) in words.enumerated() {
            if index == shortest {
                lists.append(walked)
            } else if !word.isPrefix,
                      RankedSearch.pointReadsPayOff(touchedBlocks: touchedBlocks, documentFrequency: frequencies[index], blocks: blocks) {
                lists.append(try BlockList(db, pointReadsOf: word.text, from: tables))
            } else {
                guard let list = try blockList(db, word, from: tables, atMost: RankedSearch.intersectionEntries) else { return nil }
                lists.append(list)
            }
        }
        var heap = ScoreHeap()
        var keys = [Double](repeating: 0, count: lists.count)
        documents: for entry in entries {
            for index in lists.indices {
                if index == shortest {
                    keys[index] = entry.key
                } else {
                    guard let key = try lists[index].bestKey(of: entry.doc) else { continue documents }
                    keys[index] = key
                }
            }
            // Summed in word order, as `SearchDocument.Matcher` does.
            var score = 0.0
            for index in lists.indices { score += weights[index] * keys[index] }
            heap.push(score: score, doc: entry.doc)
        }
        return heap
    }

    /// Whether looking up each of the rarest word's `documents` in
    /// `search_docs` is cheaper than reading the other words' entries: for a
    /// rare word beside a prefix that starts many words, looking its few
    /// documents up costs far less than reading the prefix's rows.
    private func lookupsPayOff(_ db: Database, _ streams: [WordStream], _ frequencies: [Int64], rarest: Int,
                               documents: Int, touchedBlocks: Int, blocks: Double) throws -> Bool {
        let lookups = Double(documents) * RankedSearch.documentLookupMicroseconds
        var reads = 0.0
        for (index, word) in words.enumerated() where index != rarest {
            let rows = word.isPrefix ? try streams[index].blockRows() : min(Double(frequencies[index]), 2 * blocks)
            var cost = rows * RankedSearch.rangeRowMicroseconds + Double(frequencies[index]) * RankedSearch.entryCopyMicroseconds
            if !word.isPrefix { cost = min(cost, Double(touchedBlocks) * 2 * RankedSearch.pointReadMicroseconds) }
            reads += cost
            guard reads <= lookups else { return true }
        }
        return false
    }

    /// Every document of `entries` that has all the words, with its score
    /// from its `search_docs` row, as the threshold algorithm scores it.
    private func lookedUp(_ db: Database, _ entries: [(doc: Int64, key: Double)], weights: [Double]) throws -> ScoreHeap {
        let lookup = try DirectStatement(db, "SELECT multiplier, terms FROM search_docs WHERE doc = ?")
        var matcher = SearchDocument.Matcher(words)
        var heap = ScoreHeap()
        for entry in entries {
            lookup.bind(1, entry.doc)
            defer { lookup.reset() }
            if try lookup.step(), let score = matcher.score(lookup, multiplier: 0, terms: 1, weights: weights) {
                heap.push(score: score, doc: entry.doc)
            }
        }
        return heap
    }

    /// A `search_docs` lookup and scoring, in document order, as the cost
    /// model counts it: about half again what a lookup costs on its own, as
    /// the model's range costs come out about half again what range reads
    /// cost, so that both sides stay comparable (fitted with the two-word
    /// searches of `bench query` at 1,000,000 items).
    private static let documentLookupMicroseconds = 3.0

    /// Whether reading a whole word's blocks only where the rarest word's
    /// documents fall, one point read per block and table, is cheaper than one
    /// range read of all of them. Blocks hold 1,024 documents, so a rarest word
    /// of a few hundred documents touches most blocks of a large index, and
    /// a point read per block can then cost more than one range read of them
    /// all.
    static func pointReadsPayOff(touchedBlocks: Int, documentFrequency: Int64, blocks: Double) -> Bool {
        let pointReads = Double(touchedBlocks) * 2 * pointReadMicroseconds
        let rangeRead = min(Double(documentFrequency), blocks) * 2 * rangeRowMicroseconds
            + Double(documentFrequency) * entryCopyMicroseconds
        return pointReads < rangeRead
    }

    /// Read costs in microseconds, fitted with `bench query` at 1,000,000
    /// items: a point read costs about as much as forty-odd rows of a range
    /// read, or as copying some five hundred entries out of them.
    private static let pointReadMicroseconds = 17.0
    private static let rangeRowMicroseconds = 0.38
    private static let entryCopyMicroseconds = 0.032

    private func explaining(_ weights: [Double]) -> ResultAssembler.Explaining? {
        explain ? ResultAssembler.Explaining(words: words, weights: weights) : nil
    }

    /// One weight per typed word: 1 for a single word; otherwise BM25's idf of the
    /// documents that have a word it matches (for a prefix, the sum of the
    /// expanded words' document counts, at most the number of documents).
    private func idfWeights(_ db: Database, _ streams: [WordStream]) throws -> [Double] {
        guard streams.count > 1 else { return [1] }
        let total = Double(max(try SearchIndex.documentCount(db), 1))
        return try streams.map { stream in
            let df = min(Double(try stream.documentFrequency()), total)
            return log(1 + (total - df + 0.5) / (df + 0.5))
        }
    }
}

// MARK: - Block lists

/// One typed word's entries in the block layers, as stored: for each block,
/// the entry blobs of the vocabulary words it matches (one per word and
/// table), each in document order (`SearchIndex.decodeHigh`). Filled by range
/// reads, or, for a whole word, one block at a time when it is first needed.
private final class BlockList {
    private var blocks: [Int64: [[UInt8]]] = [:]
    /// Entries in all the blobs read (a document under several words counts for each).
    private(set) var count = 0
    /// For a list read block by block: one point read per table.
    private let pointReads: [DirectStatement]

    init() {
        pointReads = []
    }

    /// A list of the whole word `term` that reads a block of `tables` only
    /// when `bestKey` first needs it.
    init(_ db: Database, pointReadsOf term: String, from tables: [String]) throws {
        pointReads = try tables.map { table in
            let statement = try DirectStatement(db, "SELECT entries FROM \(table) WHERE term = ? AND block = ?")
            statement.bind(1, term)
            return statement
        }
    }

    func add(block: Int64, entries: [UInt8]) {
        blocks[block, default: []].append(entries)
        count += entries.count / SearchIndex.entryBytes
    }

    /// Every document once, in document order, with its best key.
    func decoded() -> [(doc: Int64, key: Double)] {
        var entries: [(doc: Int64, key: Double)] = []
        entries.reserveCapacity(count)
        for block in blocks.keys.sorted() {
            guard let blobs = blocks[block] else { continue }
            let start = entries.count
            for blob in blobs {
                blob.withUnsafeBytes { SearchIndex.decodeHigh($0, block: block, into: &entries) }
            }
            // Several blobs in a block: order the block by document, best key first.
            if blobs.count > 1 {
                entries[start...].sort { $0.doc != $1.doc ? $0.doc < $1.doc : $0.key > $1.key }
            }
        }
        var unique: [(doc: Int64, key: Double)] = []
        unique.reserveCapacity(entries.count)
        for entry in entries where entry.doc != unique.last?.doc { unique.append(entry) }
        return unique
    }

    /// The best key of `doc` among the entries, or nil when it has none: a
    /// binary search in each blob of its block.
    func bestKey(of doc: Int64) throws -> Double? {
        let block = doc >> SearchIndex.blockShift
        if !pointReads.isEmpty, blocks[block] == nil {
            var blobs: [[UInt8]] = []
            for read in pointReads {
                read.bind(2, block)
                if try read.step() { blobs.append(read.blob(0)) }
                read.reset()
            }
            blocks[block] = blobs
        }
        guard let blobs = blocks[block] else { return nil }
        let offset = UInt16(doc & ((1 << SearchIndex.blockShift) - 1))
        var best: Double?
        for blob in blobs {
            if let key = SearchIndex.key(of: offset, in: blob), key > (best ?? -.infinity) { best = key }
        }
        return best
    }
}

// MARK: - Streams

/// The postings of every vocabulary word that `word` matches, best first,
/// each document once (at its best key).
private final class WordStream {
    private let vocabulary: Vocabulary
    private var open: [TermCursor] = []
    private var emitted = Set<Int64>()
    private let db: Database

    init(db: Database, word: SearchWord) throws {
        self.db = db
        vocabulary = try Vocabulary(db: db, word: word)
    }

    /// Documents with a word this one matches (for a prefix, the sum over the
    /// words it starts, so a document may count more than once).
    func documentFrequency() throws -> Int64 { try vocabulary.documentFrequency() }

    /// About how many rows of the block layers hold this stream's words.
    func blockRows() throws -> Double { try vocabulary.blockRows() }


    /// No unread posting of this stream has a higher key; nil when the stream is
    /// exhausted.
    func bound() throws -> Double? {
        var best = try vocabulary.peek()?.maxKey
        for cursor in open {
            if let key = cursor.headKey, best.map({ key > $0 }) ?? true { best = key }
        }
        return best
    }

    func next() throws -> Posting? {
        while true {
            var bestCursor: TermCursor?
            for cursor in open {
                guard let key = cursor.headKey else { continue }
                if let current = bestCursor?.headKey, current >= key { continue }
                bestCursor = cursor
            }
            if let unopened = try vocabulary.peek(), bestCursor?.headKey.map({ $0 < unopened.maxKey }) ?? true {
                vocabulary.take()
                let cursor = try TermCursor(db: db, term: unopened.term)
                if cursor.headKey != nil { open.append(cursor) }
                continue
            }
            guard let cursor = bestCursor, let head = try cursor.pop() else { return nil }
            open.removeAll { $0.headKey == nil }
            if emitted.insert(head.doc).inserted { return head }
        }
    }
}

/// The vocabulary words a typed word matches, highest `max_key` first. A whole
/// word or a long prefix has few and reads them all; a prefix of one or two
/// characters, which can start thousands, reads `search_heads` a batch at a time.
private final class Vocabulary {
    private let db: Database
    private let word: SearchWord
    private var terms: [(term: String, maxKey: Double)] = []
    private var position = 0
    private var lazy: Bool
    private var exhausted = false
    /// Each matched word's document count, when all were read (not lazy).
    private var wordFrequencies: [Int64] = []
    /// For a lazy word: the summed document counts of the words it matches,
    /// and their estimated rows in the block layers (`blockRows`), read once.
    private var frequencies: (documents: Int64, blockRows: Double)?

    init(db: Database, word: SearchWord) throws {
        self.db = db
        self.word = word
        lazy = word.isPrefix && SearchIndex.headPrefixes(of: word.text).last == word.text
        guard !lazy else { return }
        let statement = try DirectStatement(db, "SELECT term, max_key, df FROM search_terms WHERE term >= ? AND term < ?")
        defer { statement.reset() }
        statement.bind(1, word.text)
        // A whole word's range holds only itself: the next string after it.
        statement.bind(2, word.text + (word.isPrefix ? "\u{10FFFF}" : "\u{0}"))
        while try statement.step() {
            terms.append((statement.text(0) ?? "", statement.double(1)))
            wordFrequencies.append(statement.int64(2))
        }
        terms.sort { $0.maxKey > $1.maxKey }
        exhausted = true
    }

    func peek() throws -> (term: String, maxKey: Double)? {
        if position == terms.count, !exhausted { try load() }
        return position < terms.count ? terms[position] : nil
    }

    func take() { position += 1 }

    private func load() throws {
        let statement: DirectStatement
        if let last = terms.last {
            statement = try DirectStatement(db, """
                SELECT term, rank FROM search_heads WHERE prefix = ? AND (rank, term) > (?, ?) ORDER BY rank, term LIMIT 64
                """)
            statement.bind(1, word.text)
            statement.bind(2, -last.maxKey)
            statement.bind(3, last.term)
        } else {
            statement = try DirectStatement(db, "SELECT term, rank FROM search_heads WHERE prefix = ? ORDER BY rank, term LIMIT 64")
            statement.bind(1, word.text)
        }
        defer { statement.reset() }
        var count = 0
        while try statement.step() {
            terms.append((statement.text(0) ?? "", -statement.double(1)))
            count += 1
        }
        exhausted = count < 64
    }

    /// About how many rows of `search_high` and `search_low` hold the words
    /// this one matches: a word in fewer documents than there are blocks has
    /// about one row per document; a common one, one per block and table.
    func blockRows() throws -> Double {
        if !lazy {
            let rowsPerWord = try Vocabulary.rowsPerWord(db)
            return wordFrequencies.reduce(0) { $0 + min(Double($1), rowsPerWord) }
        }
        return try readFrequencies().blockRows
    }

    func documentFrequency() throws -> Int64 {
        lazy ? try readFrequencies().documents : wordFrequencies.reduce(0) { $0.addingSaturated($1) }
    }

    /// The most rows one word can have in the block layers: one per block and table.
    private static func rowsPerWord(_ db: Database) throws -> Double {
        2 * Double(try SearchIndex.blockCount(db))
    }

    /// A sum SQLite gave as a double, as a count: an edited file's counts
    /// may sum past what an Int64 holds, or to infinity.
    private static func clamped(_ total: Double) -> Int64 {
        if total.isNaN { return 0 }
        if total >= 0x1p63 { return .max }
        if total < -0x1p63 { return .min }
        return Int64(total)
    }

    /// For a lazy word: both sums, from one range read of the vocabulary.
    private func readFrequencies() throws -> (documents: Int64, blockRows: Double) {
        if let frequencies { return frequencies }
        let statement = try DirectStatement(db, "SELECT total(df), total(min(df, ?)) FROM search_terms WHERE term >= ? AND term < ?")
        defer { statement.reset() }
        statement.bind(1, try Vocabulary.rowsPerWord(db))
        statement.bind(2, word.text)
        statement.bind(3, word.text + "\u{10FFFF}")
        let read = try statement.step() ? (Vocabulary.clamped(statement.double(0)), statement.double(1)) : (0, 0)
        frequencies = read
        return read
    }
}

/// One posting of a stream.
private struct Posting {
    var doc: Int64
    var key: Double
}

/// One posting list, read a few runs at a time, more as it is read further.
private final class TermCursor {
    private let term: String
    private let db: Database
    private var rows: [SearchIndex.RankedPosting] = []
    private var position = 0
    /// Runs the next read takes.
    private var batch = 1
    /// The key of the last run read.
    private var lastRun: SearchIndex.RankedPosting?
    private var exhausted = false

    init(db: Database, term: String) throws {
        self.db = db
        self.term = term
        try fill()
    }

    var headKey: Double? { position < rows.count ? -rows[position].rank : nil }

    func pop() throws -> Posting? {
        guard position < rows.count else { return nil }
        let row = rows[position]
        position += 1
        if position == rows.count, !exhausted { try fill() }
        return Posting(doc: row.doc, key: -row.rank)
    }

    private func fill() throws {
        let statement: DirectStatement
        if let lastRun {
            statement = try DirectStatement(db, """
                SELECT rank, doc, entries FROM search_runs WHERE term = ? AND (rank, doc) > (?, ?) ORDER BY rank, doc LIMIT ?
                """)
            statement.bind(1, term)
            statement.bind(2, lastRun.rank)
            statement.bind(3, lastRun.doc)
            statement.bind(4, Int64(batch))
        } else {
            statement = try DirectStatement(db, "SELECT rank, doc, entries FROM search_runs WHERE term = ? ORDER BY rank, doc LIMIT ?")
            statement.bind(1, term)
            statement.bind(2, Int64(batch))
        }
        defer { statement.reset() }
        rows.removeAll(keepingCapacity: true)
        position = 0
        var runs = 0
        while try statement.step() {
            lastRun = SearchIndex.RankedPosting(rank: statement.double(0), doc: statement.int64(1))
            try statement.withBlob(2) { bytes in try SearchIndex.Run.decode(bytes, term: term, into: &rows) }
            runs += 1
        }
        exhausted = runs < batch
        batch = min(batch * 4, 32)
        // A run with no postings (only an edited file has one) ends nothing.
        if rows.isEmpty, !exhausted { try fill() }
    }
}

/// A max-heap of scored documents; equal scores pop in document order.
private struct ScoreHeap {
    private var entries: [(score: Double, doc: Int64)] = []

    var peek: (score: Double, doc: Int64)? { entries.first }

    private func above(_ left: Int, _ right: Int) -> Bool {
        let a = entries[left]
        let b = entries[right]
        return a.score != b.score ? a.score > b.score : a.doc < b.doc
    }

    mutating func push(score: Double, doc: Int64) {
        entries.append((score, doc))
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard above(child, parent) else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() {
        guard !entries.isEmpty else { return }
        entries.swapAt(0, entries.count - 1)
        entries.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var best = parent
            if left < entries.count, above(left, best) { best = left }
            if right < entries.count, above(right, best) { best = right }
            if best == parent { return }
            entries.swapAt(parent, best)
            parent = best
        }
    }
}
