import DeviceStore
import Foundation
import GRDBSQLite
import IndexModel
import Snapshot
import Workloads

/// `bench append`: how fast a device store journals app calls, against the raw
/// SQLite C API inserting the same rows.
///
/// Two workloads, each measured on both sides in the same run:
/// - activity and engagement calls: half new activities (searchable, private
///   and public), a quarter shown and a quarter engaged results;
/// - item indexing: one new item per call, with full-text fields.
///
/// Both sides write a file in WAL mode with `synchronous=FULL` and commit every
/// `commitEvery` events. The Sightline side goes through the public API
/// (`DeviceStore.performAll`): validation, the binary codec, the SHA-256 chain
/// and every projection. The baseline is what a hand-written C program would do
/// to store the same data: one prepared statement per row, inserting exactly the
/// rows the store wrote in an untimed warm-up run (journal rows, item or activity
/// rows, engagement upserts, and the privacy projection's public-activity rows,
/// reference and hash counts, votes and outbox messages) and the same text into plain FTS5 tables with the
/// same tokenizer, as FTS5 does by default each keeping its own copy of the text.
///
/// Both sides end with the text searchable: the baseline through FTS5, the store
/// through its ranked search index, which it folds from the journal when it is
/// next searched. The store's timed run therefore ends with that fold
/// (`refreshSearchIndex()`), so neither side leaves its text index to later.
struct AppendBenchmark {
    struct Workload {
        let name: String
        let summary: String
        let target: Double
        let operations: [AppOperation]
    }

    struct Side: Sendable {
        var seconds: [Double] = []
        /// Of each round's seconds, those the store spent making its text
        /// searchable (`refreshSearchIndex()`); empty for the baseline, whose
        /// FTS5 indexes within its inserts.
        var searchableSeconds: [Double] = []
        var median: Double { AppendBenchmark.median(seconds) }
        /// Each round's seconds less those making the text searchable.
        var appendingSeconds: [Double] { zip(seconds, searchableSeconds).map { $0 - $1 } }
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted[sorted.count / 2]
    }

    struct Result {
        let workload: Workload
        let events: Int
        let sightline: Side
        let raw: Side
        var sightlinePerSecond: Double { Double(events) / sightline.median }
        var rawPerSecond: Double { Double(events) / raw.median }
        /// Each round's ratio pairs two runs made one right after the other, so
        /// machine noise that spans a round (another process, a slow fsync)
        /// weighs on both; the median of the rounds' ratios is reported.
        var roundRatios: [Double] { zip(raw.seconds, sightline.seconds).map { $0 / $1 } }
        var ratio: Double { AppendBenchmark.median(roundRatios) }
        /// The ratio the store would reach if making its text searchable cost
        /// nothing: the baseline's whole round (FTS5 included) against the
        /// store's round less its search index fold. What no cheaper index
        /// can take the store beyond.
        var ratioWithoutSearchIndex: Double {
            AppendBenchmark.median(zip(raw.seconds, sightline.appendingSeconds).map { $0 / $1 })
        }
        var meetsTarget: Bool { ratio >= workload.target }
    }

    let events: Int
    let rounds: Int
    let commitEvery: Int
    let seed: UInt64
    /// Runs only the workload of this name when set.
    let only: String?
    let directory: URL

    static let workloadNames = ["activity-engagement", "item-index-fts"]
    let start = Timestamp(millisecondsSince1970: 1_795_000_000_000)

    func workloads() -> [Workload] {
        var activityWorkload = SyntheticWorkload(seed: seed)
        var activityOperations: [AppOperation] = []
        activityOperations.reserveCapacity(events)
        for position in 0..<events {
            switch position % 4 {
            case 0, 1:
                var activity = activityWorkload.activity()
                activity.persistentIdentifier = "activity-\(position)"
                activity.eligibleForSearch = true
                activityOperations.append(.activity(activity))
            case 2: activityOperations.append(.shown(ref: "item-\(position % 997)"))
            default: activityOperations.append(.engage(ref: "https://example.com/recipe/\(position % 40)"))
            }
        }
        var itemWorkload = SyntheticWorkload(seed: seed &+ 1)
        let itemOperations: [AppOperation] = (0..<events).map { position in
            .index(index: "photos", items: [itemWorkload.item(identifier: "item-\(position)")])
        }
        return [
            Workload(name: "activity-engagement",
                     summary: "new searchable activities (half), shown and engaged results (a quarter each)",
                     target: 0.6, operations: activityOperations),
            Workload(name: "item-index-fts",
                     summary: "one new item per call, with title, description and keywords in full-text search",
                     target: 1.0, operations: itemOperations),
        ]
    }

    func run(progress: (String) -> Void) throws -> [Result] {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var results: [Result] = []
        for workload in workloads() where only == nil || only == workload.name {
            let rows = try warmUp(workload)
            var sightline = Side()
            var raw = Side()
            for round in 0..<rounds {
                // Alternate which side goes first so neither always gets the
                // warmer page cache.
                let order = round % 2 == 0 ? [true, false] : [false, true]
                for isSightline in order {
                    let path = file("\(workload.name)-\(isSightline ? "sightline" : "raw")-\(round)")
                    if isSightline {
                        let timed = try runSightline(workload, path: path, expected: rows)
                        sightline.seconds.append(timed.seconds)
                        sightline.searchableSeconds.append(timed.searchable)
                    } else {
                        raw.seconds.append(try runRaw(rows, path: path))
                    }
                    remove(path)
                }
                progress("\(workload.name): round \(round + 1) of \(rounds)")
            }
            results.append(Result(workload: workload, events: rows.journal.count, sightline: sightline, raw: raw))
        }
        return results
    }

    private func file(_ name: String) -> String {
        directory.appendingPathComponent(name + ".sqlite").path
    }

    private func remove(_ path: String) {
        StoreFiles.remove(path)
    }

    private func storeOptions() -> StoreOptions {
        StoreOptions(clock: ManualClock(start), random: SeededRandom(seed: seed), durability: .full)
    }

    /// The workload's calls in groups of `commitEvery`, one transaction each;
    /// grouped before timing, as the baseline's rows are prepared before timing.
    private func transactions(_ workload: Workload) -> [[AppOperation]] {
        stride(from: 0, to: workload.operations.count, by: commitEvery).map { start in
            Array(workload.operations[start..<min(start + commitEvery, workload.operations.count)])
        }
    }

    private func perform(_ transactions: [[AppOperation]], on store: DeviceStore) throws {
        for calls in transactions {
            _ = try store.performAll(calls)
        }
    }

    // MARK: - The rows both sides write

    /// What the store wrote in the warm-up run, row for row, for the baseline to
    /// insert again. `projection` maps a journal seq to the row (or upsert) that
    /// event caused.
    struct Rows {
        var journal: [[RawValue]] = []
        var projection: [Int64: Projection] = [:]
        /// The privacy projection's writes per journal seq: a public activity's
        /// row (with its counted references and hash), outbox messages, votes.
        var privacy: [Int64: Privacy] = [:]
        var counts = Counts()
        /// The DDL of the store's tables and indexes, for the baseline.
        var schema: [String] = []
    }

    enum Projection {
        case item([RawValue], text: [RawValue])
        case activity([RawValue], text: [RawValue])
        case shown(String)
        case engaged(String)
    }

    struct Privacy {
        var publicActivity: [RawValue]?
        var outbox: [[RawValue]] = []
        var votes: [[UInt8]] = []
    }

    struct Counts: Equatable {
        var journal = 0
        var items = 0
        var activities = 0
        var engagement = 0
        var publicActivities = 0
        var outbox = 0
    }

    static let itemColumns = """
        item_id, index_name, domain, expires, title, display_name, content_description, keywords, content_url, \
        ranking_hint, attributes, changed_seq
        """
    static let activityColumns = """
        activity_key, activity_type, title, keywords, content_description, webpage_url, related, weak_related, \
        domain, persistent_id, expires, eligible_search, eligible_handoff, eligible_public, related_deleted, \
        view_count, first_seen, last_seen, payload, changed_seq
        """

    /// Runs the store once, untimed, into a file and reads back what it wrote.
    private func warmUp(_ workload: Workload) throws -> Rows {
        let path = file("\(workload.name)-warm-up")
        remove(path)
        defer { remove(path) }
        do {
            let store = try DeviceStore(at: .file(path), options: storeOptions())
            try perform(transactions(workload), on: store)
        }
        let database = try RawSQLite(path: path)
        var rows = Rows()
        for row in try database.query("SELECT seq, epoch, call, kind, time, payload, prev_hash, hash FROM event_journal ORDER BY seq") {
            rows.journal.append(row)
            guard case .integer(let seq) = row[0], case .blob(let payload) = row[5] else {
                throw RawSQLiteError(message: "the warm-up journal has a malformed row")
            }
            switch try EventCodec.decode(payload) {
            case .resultShown(let ref): rows.projection[seq] = .shown(ref)
            case .resultEngaged(let ref): rows.projection[seq] = .engaged(ref)
            default: break
            }
        }
        for row in try database.query("SELECT \(AppendBenchmark.itemColumns) FROM items") {
            guard case .integer(let seq) = row[11] else { continue }
            rows.projection[seq] = .item(row, text: Array(row[4...7]))
        }
        for row in try database.query("SELECT \(AppendBenchmark.activityColumns) FROM activities") {
            guard case .integer(let seq) = row[19] else { continue }
            rows.projection[seq] = .activity(row, text: Array(row[2...4]))
        }
        for row in try database.query("""
            SELECT p.activity_key, p.hash, p.refs, p.related, p.live, a.changed_seq
            FROM public_activities p JOIN activities a ON a.activity_key = p.activity_key
            """) {
            guard case .integer(let seq) = row[5] else { continue }
            rows.privacy[seq, default: Privacy()].publicActivity = Array(row[0...4])
        }
        for row in try database.query("SELECT epoch, seq, journal_seq, message FROM outbox ORDER BY epoch, seq") {
            guard case .integer(let seq) = row[2], case .blob(let message) = row[3] else { continue }
            rows.privacy[seq, default: Privacy()].outbox.append(row)
            if message.first == 1 {  // a vote: tag 1, then the hash
                rows.privacy[seq, default: Privacy()].votes.append(Array(message[1...32]))
            }
        }
        // The store's own tables and indexes; the baseline adds plain FTS5
        // tables for the text.
        rows.schema = try database.query("""
            SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND type IN ('table', 'index')
            AND name <> 'store_meta' ORDER BY rowid
            """).compactMap { row in
                guard case .text(let sql) = row[0] else { return nil }
                return sql
            }
        rows.counts = try AppendBenchmark.counts(database)
        guard rows.journal.count >= workload.operations.count else {
            throw RawSQLiteError(message: "\(workload.name): the warm-up journaled \(rows.journal.count) events for \(workload.operations.count) calls")
        }
        return rows
    }

    static func counts(_ database: RawSQLite) throws -> Counts {
        func count(_ table: String) throws -> Int {
            guard case .integer(let value)? = try database.query("SELECT count(*) FROM \(table)").first?.first else { return -1 }
            return Int(value)
        }
        return Counts(journal: try count("event_journal"), items: try count("items"),
                      activities: try count("activities"), engagement: try count("engagement"),
                      publicActivities: try count("public_activities"), outbox: try count("outbox"))
    }

    // MARK: - The two sides

    /// Times the store from its first call to its last commit and the fold of
    /// the calls into its search index, and the fold alone. Creating the file
    /// is not timed, nor is the baseline's schema.
    private func runSightline(_ workload: Workload, path: String, expected: Rows) throws -> (seconds: Double, searchable: Double) {
        let clock = ContinuousClock()
        let appending: Duration
        let searchable: Duration
        do {
            let store = try DeviceStore(at: .file(path), options: storeOptions())
            let grouped = transactions(workload)
            appending = try clock.measure { try perform(grouped, on: store) }
            searchable = try clock.measure { _ = try store.refreshSearchIndex() }
        }
        let counts = try AppendBenchmark.counts(RawSQLite(path: path))
        guard counts == expected.counts else {
            throw RawSQLiteError(message: "\(workload.name): the timed run wrote \(counts), the warm-up \(expected.counts)")
        }
        return ((appending + searchable).seconds, searchable.seconds)
    }

    private func runRaw(_ rows: Rows, path: String) throws -> Double {
        let database = try RawSQLite(path: path)
        try database.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;")
        try database.execute((rows.schema + [AppendBenchmark.plainFullTextTables]).joined(separator: ";\n"))
        let insertEvent = try database.prepare("""
            INSERT INTO event_journal (seq, epoch, call, kind, time, payload, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """)
        let insertItem = try database.prepare("INSERT INTO items (\(AppendBenchmark.itemColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
        let insertItemText = try database.prepare("INSERT INTO items_fts VALUES (?, ?, ?, ?)")
        let insertActivity = try database.prepare("""
            INSERT INTO activities (\(AppendBenchmark.activityColumns))
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        let insertActivityText = try database.prepare("INSERT INTO activities_fts VALUES (?, ?, ?)")
        let shown = try database.prepare("""
            INSERT INTO engagement (ref, shown, engaged) VALUES (?, 1, 0)
            ON CONFLICT (ref) DO UPDATE SET shown = shown + 1
            """)
        let engaged = try database.prepare("""
            INSERT INTO engagement (ref, shown, engaged) VALUES (?, 0, 1)
            ON CONFLICT (ref) DO UPDATE SET engaged = engaged + 1
            """)
        // The privacy projection's writes: a public activity's row, its counted
        // references and hash, outbox messages and votes.
        let insertPublic = try database.prepare("""
            INSERT INTO public_activities (activity_key, hash, refs, related, live) VALUES (?, ?, ?, ?, ?)
            """)
        let countRef = try database.prepare("""
            INSERT INTO public_refs (ref, hash, activities) VALUES (?, ?, 1)
            ON CONFLICT (ref, hash) DO UPDATE SET activities = activities + 1
            """)
        let countHash = try database.prepare("""
            INSERT INTO public_hashes (hash, live) VALUES (?, 1) ON CONFLICT (hash) DO UPDATE SET live = live + 1
            """)
        let insertMessage = try database.prepare("INSERT INTO outbox (epoch, seq, journal_seq, message) VALUES (?, ?, ?, ?)")
        let insertVote = try database.prepare("INSERT INTO public_votes (hash) VALUES (?)")
        let elapsed = try ContinuousClock().measure {
            try database.execute("BEGIN")
            for (position, row) in rows.journal.enumerated() {
                if position > 0 && position % commitEvery == 0 {
                    try database.execute("COMMIT; BEGIN")
                }
                try insertEvent.run(row)
                guard case .integer(let seq) = row[0] else { continue }
                if let privacy = rows.privacy[seq] {
                    if let values = privacy.publicActivity {
                        try insertPublic.run(values)
                        if case .text(let refs) = values[2], case .blob(let hash) = values[1] {
                            for ref in refs.split(separator: "\n") { try countRef.run([.text(String(ref)), .blob(hash)]) }
                            try countHash.run([.blob(hash)])
                        }
                    }
                    for vote in privacy.votes { try insertVote.run([.blob(vote)]) }
                    for message in privacy.outbox { try insertMessage.run(message) }
                }
                guard let projection = rows.projection[seq] else { continue }
                switch projection {
                case .item(let values, let text):
                    try insertItem.run(values)
                    try insertItemText.run(text)
                case .activity(let values, let text):
                    try insertActivity.run(values)
                    try insertActivityText.run(text)
                case .shown(let ref):
                    try shown.run([.text(ref)])
                case .engaged(let ref):
                    try engaged.run([.text(ref)])
                }
            }
            try database.execute("COMMIT")
        }
        let counts = try AppendBenchmark.counts(database)
        guard counts == rows.counts else {
            throw RawSQLiteError(message: "the baseline wrote \(counts), the store \(rows.counts)")
        }
        return elapsed.seconds
    }

    /// Plain FTS5 tables (each keeping its own copy of the text) with the
    /// store's columns and tokenizer.
    static let plainFullTextTables = """
        CREATE VIRTUAL TABLE items_fts USING fts5 (
            title, display_name, content_description, keywords, tokenize = 'unicode61 remove_diacritics 2');
        CREATE VIRTUAL TABLE activities_fts USING fts5 (
            title, keywords, content_description, tokenize = 'unicode61 remove_diacritics 2')
        """

    static var sqliteVersion: String { String(cString: sqlite3_libversion()) }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
