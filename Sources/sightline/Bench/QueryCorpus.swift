import Crypto
import DeviceStore
import Foundation
import IndexModel
import IndexQuery

/// A user's corpus for `bench query --corpus`, read line by line: either a
/// `device apply` operations file (JSON Lines, its first line beginning with
/// `{`) or a TSV of `ID<TAB>TITLE[<TAB>DESCRIPTION]`, one item a line, indexed
/// into index `bench` in calls of up to 1,000 items.
///
/// Every line is checked where it is read (valid UTF-8, the fields, the
/// limits of an operation); a bad line is an error that names the file and
/// the line, and nothing after it is applied. A TSV line whose ID comes again
/// replaces the earlier item, as indexing it again does.
struct QueryCorpus {
    enum Format: String {
        case operations = "operations file"
        case tsv = "TSV"
    }

    let path: String

    /// The most items' words kept for drawing queries: a uniform sample
    /// (reservoir) of the corpus's items beyond that.
    static let sampledItems = 20_000
    /// Items a TSV call indexes at once.
    static let batchItems = 1000

    struct Read {
        var format: Format
        /// The lines that held an item or an operation.
        var lines = 0
        /// Items indexed (a TSV line, or an item of an operation's `index`).
        var items = 0
        /// The words of a uniform sample of the items, lowercased, in text order.
        var sample: [[String]] = []
    }

    /// A SHA-256 of the file's bytes (hexadecimal), which names a kept store.
    func digest() throws -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw BenchInputError(message: "cannot open the corpus \(path): no such file or not readable")
        }
        defer { try? handle.close() }
        var hasher = SHA256()
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            hasher.update(data: chunk)
        }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }

    /// Reads the corpus, handing each call it makes to `perform` (nil: only
    /// read, for the sample), and keeps the sample of items' words drawn
    /// with `seed`.
    func read(seed: UInt64, perform: ((AppOperation) throws -> Void)?) throws -> Read {
        var reader: LineReader
        do {
            reader = try LineReader(path: path)
        } catch {
            throw BenchInputError(message: "cannot open the corpus \(path): no such file or not readable")
        }
        var format: Format?
        var lines = 0
        var items = 0
        var sample: [[String]] = []
        var sampler = SplitMix64(seed: seed ^ 0x5EED_C0A9)
        var batch: [SearchableItem] = []
        var batchIdentifiers = Set<String>()

        func fail(_ line: Int, _ message: String) -> BenchInputError {
            BenchInputError(message: "\(path) line \(line): \(message)")
        }
        func keep(_ item: SearchableItem) {
            items += 1
            let words = QueryCorpus.words(of: [item.attributes.title, item.attributes.displayName, item.attributes.contentDescription]
                + (item.attributes.keywords ?? []))
            if sample.count < QueryCorpus.sampledItems {
                sample.append(words)
            } else {
                let slot = Int(sampler.next() % UInt64(items))
                if slot < QueryCorpus.sampledItems { sample[slot] = words }
            }
        }
        func flush(line: Int) throws {
            guard !batch.isEmpty else { return }
            do {
                try perform?(.index(index: "bench", items: batch))
            } catch let error as DeviceStoreError {
                throw fail(line, "indexing the items up to this line: \(error.message)")
            }
            batch.removeAll(keepingCapacity: true)
            batchIdentifiers.removeAll(keepingCapacity: true)
        }

        while let line = try reader.next() {
            let number = reader.lineNumber
            guard case .text(let bytes) = line else {
                throw fail(number, "the line is longer than \(Limits.lineBytes) bytes")
            }
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
            let lineFormat = format ?? (bytes.first(where: { $0 != 0x20 && $0 != 0x09 }) == UInt8(ascii: "{") ? .operations : .tsv)
            format = lineFormat
            lines += 1
            switch lineFormat {
            case .operations:
                let operation: AppOperation
                do {
                    operation = try OperationParser.parse(line: bytes)
                } catch {
                    throw fail(number, error.description)
                }
                do {
                    try perform?(operation)
                } catch let error as DeviceStoreError {
                    throw fail(number, "\(operation.name): \(error.message)")
                }
                for item in QueryCorpus.indexedItems(operation) { keep(item) }
            case .tsv:
                let item = try QueryCorpus.item(tsv: bytes, line: number, path: path)
                if batchIdentifiers.contains(item.uniqueIdentifier) || batch.count == QueryCorpus.batchItems {
                    try flush(line: number - 1)
                }
                batch.append(item)
                batchIdentifiers.insert(item.uniqueIdentifier)
                keep(item)
            }
        }
        try flush(line: reader.lineNumber)
        guard let format, items > 0 else {
            throw BenchInputError(message: "the corpus \(path) indexes no item")
        }
        return Read(format: format, lines: lines, items: items, sample: sample)
    }

    /// The items an operation indexes, those of a batch's included.
    static func indexedItems(_ operation: AppOperation) -> [SearchableItem] {
        switch operation {
        case .index(_, let items): items
        case .batch(let batch): batch.operations.flatMap(indexedItems)
        default: []
        }
    }

    /// A TSV line as an item: an ID, a title and an optional description,
    /// checked as an operation's item is.
    static func item(tsv bytes: [UInt8], line: Int, path: String) throws -> SearchableItem {
        func fail(_ message: String) -> BenchInputError {
            BenchInputError(message: "\(path) line \(line): \(message)")
        }
        if let invalid = TextRule.firstInvalidUTF8(bytes) { throw fail("not valid UTF-8 (byte \(invalid + 1))") }
        var text = String(decoding: bytes, as: UTF8.self)
        if text.hasSuffix("\r") { text.removeLast() }
        let fields = text.split(separator: "\t", omittingEmptySubsequences: false)
        guard (2...3).contains(fields.count) else {
            throw fail("\(fields.count) tab-separated field\(fields.count == 1 ? "" : "s"); a TSV corpus line is ID, TITLE and an optional DESCRIPTION")
        }
        guard !fields[0].isEmpty else { throw fail("the ID (the first field) is empty") }
        var attributes = AttributeSet()
        if !fields[1].isEmpty { attributes.title = String(fields[1]) }
        if fields.count == 3, !fields[2].isEmpty { attributes.contentDescription = String(fields[2]) }
        guard attributes.title != nil || attributes.contentDescription != nil else {
            throw fail("the item has neither a title nor a description")
        }
        let item = SearchableItem(uniqueIdentifier: String(fields[0]), attributes: attributes)
        do {
            try AppOperation.index(index: "bench", items: [item]).validate()
        } catch {
            throw fail(error.description.replacingOccurrences(of: "items[0].", with: ""))
        }
        return item
    }

    /// The words search sees in `texts` (`SearchText`, as devices index them).
    static func words(of texts: [String?]) -> [String] {
        texts.compactMap { $0 }.flatMap(SearchText.words(in:))
    }
}

/// The queries `bench query` draws from a user's corpus, three kinds as it
/// draws from its synthetic one: the first 1 to 4 letters of a word, one
/// word, two different words of one item. Each picks a sampled item
/// uniformly, then its words uniformly, so a word comes about as often as
/// it occurs in the corpus.
struct CorpusQueries {
    private let items: [[String]]
    /// The items with at least two different words.
    private let pairs: [[String]]
    private var generator: SplitMix64

    init(sample: [[String]], seed: UInt64) {
        items = sample.filter { !$0.isEmpty }
        pairs = items.filter { Set($0).count >= 2 }
        generator = SplitMix64(seed: seed)
    }

    private mutating func uniform(_ upperBound: Int) -> Int {
        Int(generator.next() % UInt64(upperBound))
    }

    private mutating func word() -> String? {
        guard !items.isEmpty else { return nil }
        let words = items[uniform(items.count)]
        return words[uniform(words.count)]
    }

    mutating func prefixQuery() -> String {
        guard let word = word() else { return "" }
        return String(word.prefix(1 + uniform(4)))
    }

    mutating func singleTermQuery() -> String {
        word() ?? ""
    }

    mutating func twoTermQuery() -> String {
        guard !pairs.isEmpty else { return singleTermQuery() }
        let words = pairs[uniform(pairs.count)]
        let first = words[uniform(words.count)]
        while true {
            let second = words[uniform(words.count)]
            if second != first { return first + " " + second }
        }
    }
}

/// A file of queries for `bench query --queries FILE`: one a line, blank
/// lines skipped, each valid UTF-8 of at most `maximumBytes`.
enum QueryFile {
    static let maximumBytes = 1024
    static let maximumQueries = 100_000

    static func read(_ path: String) throws -> [String] {
        var reader: LineReader
        do {
            reader = try LineReader(path: path, maximumBytes: maximumBytes)
        } catch {
            throw BenchInputError(message: "cannot open the queries \(path): no such file or not readable")
        }
        var queries: [String] = []
        while let line = try reader.next() {
            let number = reader.lineNumber
            guard case .text(let bytes) = line else {
                throw BenchInputError(message: "\(path) line \(number): a query is at most \(maximumBytes) bytes")
            }
            if let invalid = TextRule.firstInvalidUTF8(bytes) {
                throw BenchInputError(message: "\(path) line \(number): not valid UTF-8 (byte \(invalid + 1))")
            }
            let query = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespaces)
            guard !query.isEmpty else { continue }
            guard queries.count < maximumQueries else {
                throw BenchInputError(message: "\(path) holds more than \(maximumQueries) queries")
            }
            queries.append(query)
        }
        guard !queries.isEmpty else { throw BenchInputError(message: "\(path) holds no query") }
        return queries
    }
}
