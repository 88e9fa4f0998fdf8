import ArgumentParser
import DeviceStore
import Foundation
import IndexModel

struct QueryBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Free-text search latency (p50/p99) against naive FTS5 bm25 ranking on the same index.",
        discussion: """
            Builds an index of --items synthetic items (a 50,000-word Zipf vocabulary), or of \
            --corpus FILE: a `device apply` operations file (its first line begins with `{`) or a \
            TSV of ID, TITLE and an optional DESCRIPTION per line. Then types --queries queries of \
            each kind, drawn from the corpus: a prefix of a word, one whole word, two whole words; \
            or, with --queries FILE, the file's queries (one a line). Each runs untimed once, then \
            timed through `device search` and through naive FTS5 (ORDER BY bm25 LIMIT 20, scoring \
            every match), alternating which goes first. Targets: p99 at most 2 ms up to 100,000 \
            items, 15 ms beyond.
            """
    )

    @Option(name: .long, help: "Synthetic items in the index (1000…5000000; default 100000). Not with --corpus.")
    var items: Int?

    @Option(name: .long, help: ArgumentHelp("The items to index instead of synthetic ones: an operations file or a TSV.",
                                            valueName: "file"))
    var corpus: String?

    @Option(name: .long, help: ArgumentHelp(
        "Queries of each kind to draw (10…100000; default 200), or a file of queries, one a line (a file named by digits: ./NAME).",
        valueName: "count|file"))
    var queries: String = "200"

    @Option(name: .long, help: ArgumentHelp("Also write the queries run to this file, one a line (what --queries FILE reads).",
                                            valueName: "file"))
    var saveQueries: String?

    @Option(name: .long, help: "The corpus seed.")
    var seed: UInt64 = 1

    @Option(name: .long, help: ArgumentHelp("Where the index is built (default: a new temporary directory, removed afterwards).",
                                            valueName: "path"))
    var dir: String?

    @Flag(name: .long, help: ArgumentHelp("Keep the store in --dir and reuse it on later runs with the same --items and --seed.",
                                          discussion: "Reusing skips the build, so its times are not reported."))
    var keep = false

    @Flag(name: .long, help: "Exit with status 1 when the worst p99 misses the target.")
    var check = false

    @OptionGroup var output: JSONOption

    @OptionGroup var progressOption: ProgressOption

    /// `--queries` as a count of each kind, nil when it names a file.
    private var queriesPerKind: Int? {
        queries.allSatisfy(\.isASCII) && queries.allSatisfy(\.isNumber) ? Int(queries) ?? Int.max : nil
    }

    func validate() throws {
        if let items {
            guard corpus == nil else { throw ValidationError("--items and --corpus exclude each other: the corpus's items are indexed") }
            guard (1000...5_000_000).contains(items) else {
                throw ValidationError("--items must be between 1000 and 5000000 (got \(items))")
            }
        }
        guard !keep || dir != nil else {
            throw ValidationError("--keep needs --dir: the store is kept there")
        }
        if let perKind = queriesPerKind, !(10...100_000).contains(perKind) {
            throw ValidationError("--queries must be between 10 and 100000 (got \(queries)), or a file of queries")
        }
        guard !queries.isEmpty else { throw ValidationError("--queries needs a count or a file") }
    }

    func run() async throws {
        let source: QueryBenchmark.Source = corpus.map { .corpus(QueryCorpus(path: $0)) } ?? .synthetic(items: items ?? 100_000)
        let run: QueryBenchmark.Queries
        if let perKind = queriesPerKind {
            run = .drawn(perKind: perKind)
        } else {
            do {
                run = .given(file: queries, queries: try QueryFile.read(queries))
            } catch {
                Output.error("error: \(error)")
                throw ExitStatus.invalidInput
            }
        }
        let result: QueryBenchmark.Result = try await BenchRun.run(dir: dir, name: "query", progress: progressOption.mode) { directory, progress in
            try QueryBenchmark(source: source, queries: run, seed: seed, directory: directory, keep: keep, saveQueries: saveQueries)
                .run(progress: progress)
        }
        func round(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }
        if output.json {
            Output.json(.object([
                "benchmark": .string("query"),
                "seed": .integer(Int64(bitPattern: seed)),
                "items": .integer(Int64(result.items)),
                "corpus": result.corpus.map { corpus in
                    .object(["path": .string(corpus.path), "format": .string(corpus.format.rawValue), "lines": .integer(Int64(corpus.lines))])
                } ?? .null,
                "queriesPerKind": queriesPerKind.map { .integer(Int64($0)) } ?? .null,
                "queriesFile": queriesPerKind == nil ? .string(queries) : .null,
                "buildSeconds": .double(round(result.buildSeconds)),
                "searchIndexSeconds": .double(round(result.searchIndexSeconds)),
                "databaseBytes": .integer(result.databaseBytes),
                "sqliteVersion": .string(AppendBenchmark.sqliteVersion),
                "kinds": .array(result.kinds.map { kind in
                    func side(_ latencies: QueryBenchmark.Latencies) -> JSONValue {
                        .object(["p50Ms": .double(round(latencies.percentile(0.5))),
                                 "p99Ms": .double(round(latencies.percentile(0.99))),
                                 "maxMs": .double(round(latencies.percentile(1)))])
                    }
                    return .object([
                        "kind": .string(kind.kind),
                        "examples": .array(kind.examples.map(JSONValue.string)),
                        "sightline": side(kind.sightline),
                        "naive": side(kind.naive),
                        "fullPages": .integer(Int64(kind.fullPages)),
                        "slowest": .array(kind.slowest.map { .object(["query": .string($0.query), "ms": .double(round($0.milliseconds))]) }),
                    ])
                }),
                "targetP99Ms": .double(result.targetMilliseconds),
                "worstP99Ms": .double(round(result.worstP99)),
                "meetsTarget": .bool(result.meetsTarget),
            ]))
        } else {
            let what = queriesPerKind.map { "queries=\($0) per kind" } ?? "queries from \(queries)"
            let corpusLine = result.corpus.map { "  corpus=\($0.path) (\($0.format.rawValue), \($0.lines) lines)" } ?? ""
            Output.line("bench query  seed=\(seed)  items=\(result.items)\(corpusLine)  \(what)  SQLite \(AppendBenchmark.sqliteVersion)")
            if result.reused {
                Output.line(String(format: "reused the kept store, %.1f MiB", Double(result.databaseBytes) / 1_048_576))
            } else {
                Output.line(String(format: "items indexed in %.1f s (%.0f items/s), search index built in %.1f s, %.1f MiB",
                                   result.buildSeconds, Double(result.items) / result.buildSeconds, result.searchIndexSeconds,
                                   Double(result.databaseBytes) / 1_048_576))
            }
            var rows = [["kind", "sightline p50", "p99", "naive p50", "p99", "naive p99 / sightline p99", "examples"]]
            for kind in result.kinds {
                let p99 = kind.sightline.percentile(0.99)
                rows.append([
                    kind.kind, String(format: "%.2f ms", kind.sightline.percentile(0.5)), String(format: "%.2f ms", p99),
                    String(format: "%.2f ms", kind.naive.percentile(0.5)), String(format: "%.2f ms", kind.naive.percentile(0.99)),
                    String(format: "%.1f", kind.naive.percentile(0.99) / max(p99, 0.001)),
                    kind.examples.joined(separator: ", "),
                ])
            }
            Output.table(rows)
            for kind in result.kinds {
                let slowest = kind.slowest.map { String(format: "\"%@\" %.2f ms", $0.query as NSString, $0.milliseconds) }
                Output.line("slowest \(kind.kind): " + slowest.joined(separator: ", "))
            }
            Output.line(String(format: "target: p99 ≤ %.0f ms; worst p99 %.2f ms: ", result.targetMilliseconds, result.worstP99)
                + (result.meetsTarget ? "met" : "MISSED"))
        }
        if check && !result.meetsTarget {
            Output.error("free-text search missed its p99 target")
            throw ExitStatus.checkFailed
        }
    }
}
