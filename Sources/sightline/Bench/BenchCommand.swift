import ArgumentParser
import DeviceStore
import Foundation
import IndexModel

struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure Sightline against a raw SQLite baseline in the same run.",
        discussion: "Figures and the commands that produced them are kept in docs/benchmarks.md.",
        subcommands: [AppendBenchCommand.self, QueryBenchCommand.self, SyncBenchCommand.self, RebuildBenchCommand.self,
                      RestoreBenchCommand.self, PopularityBenchCommand.self, LinearBenchCommand.self]
    )
}

struct AppendBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "append",
        abstract: "Journal appends per second: the device store against raw SQLite inserts of the same rows.",
        discussion: """
            Two workloads: activity and engagement calls (target: at least 0.6 times raw \
            inserts of the same journal rows), and item indexing with full-text search \
            (target: at least 1.0 times raw inserts of the same journal rows plus raw FTS5 \
            inserts of the same text). Both sides use WAL, synchronous=FULL and commit every \
            1000 events. Each side runs --rounds times, alternating which goes first; the \
            median of the rounds' ratios is reported, with each side's median rate.
            """
    )

    @Option(name: .long, help: "Events per workload.")
    var events = 20_000

    @Option(name: .long, help: "Timed runs per side; the median counts.")
    var rounds = 3

    @Option(name: .long, help: "The workload seed.")
    var seed: UInt64 = 1

    @Option(name: .long, help: ArgumentHelp("Where the benchmark writes its stores (default: a new temporary directory, removed afterwards).",
                                            valueName: "path"))
    var dir: String?

    @Option(name: .long, help: ArgumentHelp("Run only this workload (activity-engagement or item-index-fts).", valueName: "name"))
    var workload: String?

    @Flag(name: .long, help: "Exit with status 1 when a workload misses its target.")
    var check = false

    @OptionGroup var output: JSONOption

    @OptionGroup var progressOption: ProgressOption

    func validate() throws {
        guard events >= 1000, events <= 10_000_000 else {
            throw ValidationError("--events must be between 1000 and 10000000 (got \(events))")
        }
        if let workload, !AppendBenchmark.workloadNames.contains(workload) {
            throw ValidationError("--workload must be one of \(AppendBenchmark.workloadNames.joined(separator: ", ")) (got '\(workload)')")
        }
        guard rounds >= 1, rounds <= 100 else {
            throw ValidationError("--rounds must be between 1 and 100 (got \(rounds))")
        }
    }

    func run() throws {
        let directory: URL
        let ownsDirectory = dir == nil
        if let dir {
            directory = URL(fileURLWithPath: dir)
        } else {
            directory = FileManager.default.temporaryDirectory
                .appendingPathComponent("sightline-bench-\(ProcessInfo.processInfo.processIdentifier)")
        }
        defer { if ownsDirectory { try? FileManager.default.removeItem(at: directory) } }

        let benchmark = AppendBenchmark(events: events, rounds: rounds, commitEvery: 1000, seed: seed,
                                        only: workload, directory: directory)
        let line = ProgressLine(mode: progressOption.mode, phase: "bench append", total: nil, unit: "")
        defer { line.finish() }
        let results: [AppendBenchmark.Result]
        do {
            results = try benchmark.run { message in line.begin(phase: message, total: nil, unit: "") }
            line.finish()
        } catch {
            line.finish()
            throw BenchRun.exit(error)
        }

        if output.json {
            Output.json(.object([
                "benchmark": .string("append"),
                "seed": .integer(Int64(bitPattern: seed)),
                "rounds": .integer(Int64(rounds)),
                "commitEvery": .integer(1000),
                "journalMode": .string("wal"),
                "synchronous": .string("full"),
                "sqliteVersion": .string(AppendBenchmark.sqliteVersion),
                "workloads": .array(results.map(Self.json)),
            ]))
        } else {
            Output.line("bench append  seed=\(seed)  rounds=\(rounds)  commit every 1000  WAL  synchronous=FULL  SQLite \(AppendBenchmark.sqliteVersion)")
            var rows = [["workload", "events", "sightline ev/s", "raw ev/s", "ratio", "target", ""]]
            for result in results {
                rows.append([
                    result.workload.name, String(result.events), Self.rate(result.sightlinePerSecond),
                    Self.rate(result.rawPerSecond), String(format: "%.2f", result.ratio),
                    String(format: "≥ %.1f", result.workload.target), result.meetsTarget ? "met" : "MISSED",
                ])
            }
            Output.table(rows)
            for result in results { Output.line("  \(result.workload.name): \(result.workload.summary)") }
            for result in results {
                let searchable = String(format: "%.3f", AppendBenchmark.median(result.sightline.searchableSeconds))
                let whole = String(format: "%.3f", result.sightline.median)
                let bound = String(format: "%.2f", result.ratioWithoutSearchIndex)
                Output.line("  \(result.workload.name): making the text searchable took \(searchable) s of Sightline's \(whole) s "
                            + "(medians); appending alone runs at \(bound)× the baseline")
            }
        }
        if check && results.contains(where: { !$0.meetsTarget }) {
            Output.error("a workload missed its target")
            throw ExitStatus.checkFailed
        }
    }

    static func json(_ result: AppendBenchmark.Result) -> JSONValue {
        func side(_ side: AppendBenchmark.Side, perSecond: Double) -> JSONValue {
            var fields: JSONObject = [
                "eventsPerSecond": .integer(Int64(perSecond.rounded())),
                "medianSeconds": .double(side.median),
                "seconds": .array(side.seconds.map(JSONValue.double)),
            ]
            if !side.searchableSeconds.isEmpty {
                fields["searchableSeconds"] = .array(side.searchableSeconds.map(JSONValue.double))
            }
            return .object(fields)
        }
        return .object([
            "name": .string(result.workload.name),
            "description": .string(result.workload.summary),
            "events": .integer(Int64(result.events)),
            "sightline": side(result.sightline, perSecond: result.sightlinePerSecond),
            "raw": side(result.raw, perSecond: result.rawPerSecond),
            "ratio": .double((result.ratio * 1000).rounded() / 1000),
            "roundRatios": .array(result.roundRatios.map { .double(($0 * 1000).rounded() / 1000) }),
            "ratioWithoutSearchIndex": .double((result.ratioWithoutSearchIndex * 1000).rounded() / 1000),
            "target": .double(result.workload.target),
            "meetsTarget": .bool(result.meetsTarget),
        ])
    }

    static func rate(_ value: Double) -> String {
        String(Int(value.rounded()))
    }
}

/// What every bench run shares: its directory (`--dir`, or a new temporary one
/// removed afterwards), progress on stderr (`ProgressLine`: the step the
/// benchmark says it is on and the time), and failures turned into the
/// CLI's exit statuses.
enum BenchRun {
    static func run<Result>(dir: String?, name: String, progress mode: ProgressLine.Mode,
                            _ body: (URL, (String) -> Void) async throws -> Result) async throws -> Result {
        let ownsDirectory = dir == nil
        let directory = dir.map { URL(fileURLWithPath: $0) } ?? FileManager.default.temporaryDirectory
            .appendingPathComponent("sightline-bench-\(name)-\(ProcessInfo.processInfo.processIdentifier)")
        defer { if ownsDirectory { try? FileManager.default.removeItem(at: directory) } }
        let line = ProgressLine(mode: mode, phase: "bench \(name)", total: nil, unit: "")
        defer { line.finish() }
        do {
            let result = try await body(directory) { message in line.begin(phase: message, total: nil, unit: "") }
            line.finish()
            return result
        } catch {
            line.finish()
            throw BenchRun.exit(error)
        }
    }

    /// A benchmark's failure as the CLI's exit status, said on stderr.
    static func exit(_ error: any Error) -> any Error {
        switch error {
        case let error as DeviceStoreError:
            return error.exit()
        case let error as BenchInputError:
            Output.error("error: \(error.message)")
            return ExitStatus.invalidInput
        case let error as ExitCode:
            return error
        default:
            Output.error("error: \(error)")
            return ExitStatus.storeUnavailable
        }
    }
}

/// The options `bench sync` and `bench rebuild` share: a fleet of devices
/// filled with the same synthetic workload.
struct FleetBenchOptions: ParsableArguments {
    @Option(name: .long, help: "Devices (1…256).")
    var devices = 8

    @Option(name: .long, help: "App calls per device (1000…10000000).")
    var calls = 50_000

    @Option(name: .long, help: "The workload seed.")
    var seed: UInt64 = 1

    @Option(name: .long, help: ArgumentHelp("Where the stores are written (default: a new temporary directory, removed afterwards).",
                                            valueName: "path"))
    var dir: String?

    @Flag(name: .long, help: "Exit with status 1 when a target is missed.")
    var check = false

    func validate() throws {
        guard (1...256).contains(devices) else { throw ValidationError("--devices must be between 1 and 256 (got \(devices))") }
        guard (1000...10_000_000).contains(calls) else { throw ValidationError("--calls must be between 1000 and 10000000 (got \(calls))") }
    }
}
