import ArgumentParser
import DeviceStore
import Foundation
import IndexModel

struct SyncBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "End-to-end sync over loopback HTTP with a real server: messages per second and wire bytes.",
        discussion: """
            Fills --devices device stores with --calls app calls each (untimed), then times every \
            device syncing its whole outbox at once through HTTP to `CloudServer` and \
            `CloudIndex.ingest`, until every message is acknowledged. In the same run: the \
            request bytes beside the same messages as JSON Lines deflated at level 6, and the \
            same messages inserted as rows through the raw SQLite C API. Targets: at least \
            150,000 messages per second end to end; wire bytes at most 0.5 times JSON + deflate.
            """
    )

    @Option(name: .long, help: "Devices syncing at once (1…256).")
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

    @OptionGroup var output: JSONOption

    func validate() throws {
        guard (1...256).contains(devices) else { throw ValidationError("--devices must be between 1 and 256 (got \(devices))") }
        guard (1000...10_000_000).contains(calls) else { throw ValidationError("--calls must be between 1000 and 10000000 (got \(calls))") }
    }

    func run() async throws {
        let result: SyncBenchmark.Result = try await BenchRun.run(dir: dir, name: "sync") { directory, progress in
            try await SyncBenchmark(devices: devices, callsPerDevice: calls, seed: seed, directory: directory).run(progress: progress)
        }
        let meetsRate = result.messagesPerSecond >= SyncBenchmark.targetMessagesPerSecond
        let meetsWire = result.wireRatio <= SyncBenchmark.targetWireRatio
        if output.json {
            Output.json(.object([
                "benchmark": .string("sync"),
                "seed": .integer(Int64(bitPattern: seed)),
                "devices": .integer(Int64(devices)),
                "calls": .integer(Int64(result.calls)),
                "messages": .integer(Int64(result.messages)),
                "frames": .integer(Int64(result.frames)),
                "retries": .integer(Int64(result.retries)),
                "publicItems": .integer(Int64(result.publicItems)),
                "seconds": .double(result.seconds),
                "messagesPerSecond": .double(result.messagesPerSecond.rounded()),
                "rawMessagesPerSecond": .double(result.rawMessagesPerSecond.rounded()),
                "wireBytes": .integer(Int64(result.wireBytes)),
                "jsonDeflateBytes": .integer(Int64(result.jsonDeflateBytes)),
                "wireBytesPerMessage": .double(Double(result.wireBytes) / Double(result.messages)),
                "wireRatio": .double(result.wireRatio),
                "setupSeconds": .double(result.setupSeconds),
                "meetsRateTarget": .bool(meetsRate),
                "meetsWireTarget": .bool(meetsWire),
            ]))
        } else {
            Output.line("bench sync  seed=\(seed)  devices=\(devices)  calls=\(result.calls)  SQLite \(AppendBenchmark.sqliteVersion)")
            Output.line(String(format: "setup (untimed): %.1f s; %d messages in %d frames (%d retries), %d public items",
                               result.setupSeconds, result.messages, result.frames, result.retries, result.publicItems))
            Output.table([
                ["", "messages/s", "ratio", "target", ""],
                ["end to end (HTTP)", String(format: "%.0f", result.messagesPerSecond),
                 String(format: "%.2f× raw", result.messagesPerSecond / result.rawMessagesPerSecond),
                 "≥ 150000", meetsRate ? "met" : "MISSED"],
                ["raw SQLite inserts", String(format: "%.0f", result.rawMessagesPerSecond), "", "", ""],
            ])
            Output.table([
                ["", "bytes", "bytes/message", "ratio", "target", ""],
                ["wire (frames)", String(result.wireBytes), String(format: "%.2f", Double(result.wireBytes) / Double(result.messages)),
                 String(format: "%.2f", result.wireRatio), "≤ 0.5", meetsWire ? "met" : "MISSED"],
                ["JSON + deflate -6", String(result.jsonDeflateBytes),
                 String(format: "%.2f", Double(result.jsonDeflateBytes) / Double(result.messages)), "", "", ""],
            ])
        }
        if check && !(meetsRate && meetsWire) {
            Output.error("sync missed a target")
            throw ExitStatus.checkFailed
        }
    }
}
