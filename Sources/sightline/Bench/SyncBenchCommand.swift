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

    @OptionGroup var fleet: FleetBenchOptions

    @OptionGroup var output: JSONOption

    func run() async throws {
        let result: SyncBenchmark.Result = try await BenchRun.run(dir: fleet.dir, name: "sync") { directory, progress in
            try await SyncBenchmark(devices: fleet.devices, callsPerDevice: fleet.calls, seed: fleet.seed, directory: directory).run(progress: progress)
        }
        let meetsRate = result.messagesPerSecond >= SyncBenchmark.targetMessagesPerSecond
        let meetsWire = result.wireRatio <= SyncBenchmark.targetWireRatio
        if output.json {
            Output.json(.object([
                "benchmark": .string("sync"),
                "seed": .integer(Int64(bitPattern: fleet.seed)),
                "devices": .integer(Int64(fleet.devices)),
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
            Output.line("bench sync  seed=\(fleet.seed)  devices=\(fleet.devices)  calls=\(result.calls)  SQLite \(AppendBenchmark.sqliteVersion)")
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
        if fleet.check && !(meetsRate && meetsWire) {
            Output.error("sync missed a target")
            throw ExitStatus.checkFailed
        }
    }
}
