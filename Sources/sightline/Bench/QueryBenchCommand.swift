import ArgumentParser
import DeviceStore
import Foundation
import IndexModel

struct QueryBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Free-text search latency (p50/p99) against naive FTS5 bm25 ranking on the same index.",
        discussion: """
            Builds an index of --items synthetic items (a 50,000-word Zipf vocabulary), then \
            types --queries queries of each kind: a prefix of a popular word, one whole word, \
            two whole words. Each runs untimed once, then timed through `device search` and \
            through naive FTS5 (ORDER BY bm25 LIMIT 20, scoring every match), alternating \
            which goes first. Targets: p99 at most 2 ms up to 100,000 items, 15 ms at 1,000,000.
            """
    )

    @Option(name: .long, help: "Items in the index (1000…5000000).")
    var items = 100_000

    @Option(name: .long, help: "Queries of each kind (10…100000).")
    var queries = 200

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

    func validate() throws {
        guard (1000...5_000_000).contains(items) else {
            throw ValidationError("--items must be between 1000 and 5000000 (got \(items))")
        }
        guard !keep || dir != nil else {
            throw ValidationError("--keep needs --dir: the store is kept there")
        }
        guard (10...100_000).contains(queries) else {
            throw ValidationError("--queries must be between 10 and 100000 (got \(queries))")
        }
    }

    func run() async throws {
        let result: QueryBenchmark.Result = try await BenchRun.run(dir: dir, name: "query") { directory, progress in
            try QueryBenchmark(items: items, queriesPerKind: queries, seed: seed, directory: directory, keep: keep).run(progress: progress)
        }
        func round(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }
        if output.json {
            Output.json(.object([
                "benchmark": .string("query"),
                "seed": .integer(Int64(bitPattern: seed)),
                "items": .integer(Int64(result.items)),
                "queriesPerKind": .integer(Int64(queries)),
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
            Output.line("bench query  seed=\(seed)  items=\(result.items)  queries=\(queries) per kind  SQLite \(AppendBenchmark.sqliteVersion)")
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
