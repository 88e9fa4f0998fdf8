import ArgumentParser
import Crypto
import DeviceStore
import Foundation
import IndexModel
import LocalPrivacy
import SyncWire
import Workloads

/// `bench ldp`: the count-mean sketch (`LocalPrivacy`) on a fleet whose items
/// have Zipf popularity, against the true counts.
struct PopularityBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ldp",
        abstract: "Popularity under local differential privacy: a count-mean sketch's error and a device's report cost.",
        discussion: """
            Each of --devices devices holds one of --items items, drawn with Zipf popularity \
            (exponent 1) from --seed; each sends one report randomised with ε (Apple's count-mean \
            sketch, CMS or its Hadamard variant HCMS, k hash functions of m buckets). The run times \
            the reports (the device's cost), adds them to the server's sketch, estimates every \
            item and prints the mean absolute error over all items and the largest error among the \
            100 most popular, against the true counts. --save-assignments writes each device's \
            item (one number a line) so that another implementation (tools/bench/ldp-compare) \
            runs on the same data. Targets at ε = 4, 100,000 devices and 10,000 items: a report \
            under 50 µs.
            """
    )

    @Option(name: .long, help: "Devices, one report each.")
    var devices = 100_000
    @Option(name: .long, help: "Items (Zipf popularity, exponent 1).")
    var items = 10_000
    @Option(name: .long, help: "ε of each report.")
    var epsilon = 4.0
    @Option(name: .long, help: "Hash functions (rows of the sketch).")
    var k = 1_024
    @Option(name: .long, help: "Buckets of each (a power of two).")
    var m = 1_024
    @Option(name: .long, help: "full (CMS) or hadamard (HCMS).")
    var mode: CountMeanSketch.Mode = .full
    @Option(name: .long, help: "The workload and randomness seed.")
    var seed: UInt64 = 1
    @Option(name: .long, help: ArgumentHelp("Write each device's item here, one number a line.", valueName: "path"))
    var saveAssignments: String?

    @OptionGroup var output: JSONOption

    static let targetReportMicroseconds = 50.0

    func validate() throws {
        guard (1...10_000_000).contains(devices) else { throw ValidationError("--devices must be 1 to 10,000,000") }
        guard (100...1_000_000).contains(items) else { throw ValidationError("--items must be 100 to 1,000,000") }
    }

    func run() throws {
        let parameters: CountMeanSketch.Parameters
        do {
            parameters = try CountMeanSketch.Parameters(epsilon: epsilon, k: k, m: m, mode: mode)
        } catch {
            throw ValidationError(error.message)
        }
        var generator = SplitMix64(seed: seed)
        let zipf = ZipfDistribution(count: items, exponent: 1)
        let assignments = (0..<devices).map { _ in zipf.draw(&generator) }
        if let saveAssignments {
            let text = assignments.map(String.init).joined(separator: "\n") + "\n"
            guard FileManager.default.createFile(atPath: saveAssignments, contents: Data(text.utf8)) else {
                Output.error("error: cannot write \(saveAssignments)")
                throw ExitStatus.storeUnavailable
            }
        }
        // An item is what a device reports in Sightline: a 32-byte hash.
        let keys = (0..<items).map { Array(SHA256.hash(data: Array("item-\($0)".utf8))) }
        var truth = [Int](repeating: 0, count: items)
        for item in assignments { truth[item] += 1 }

        let random = SeededRandom(seed: seed &+ 1)
        var reports: [CountMeanSketch.Report] = []
        reports.reserveCapacity(devices)
        let start = ContinuousClock.now
        if mode == .hadamard {
            // As a device makes a report (`PrivacyBudget.coins`): its coins
            // from an HMAC of its secret and the report's outbox position.
            let secret = (0..<4).flatMap { _ in withUnsafeBytes(of: random.next()) { Array($0) } }
            for (device, item) in assignments.enumerated() {
                let position = OutboxPosition(epoch: .first, seq: OutboxSeq(UInt64(device) + 1))
                reports.append(CountMeanSketch.report(keys[item], parameters: parameters,
                                                      random: SeededRandom(seed: PrivacyBudget.coins(secret: secret, at: position))))
            }
        } else {
            for item in assignments { reports.append(CountMeanSketch.report(keys[item], parameters: parameters, random: random)) }
        }
        let reportSeconds = start.duration(to: .now).seconds
        var sketch = CountMeanSketch(parameters)
        let aggregateStart = ContinuousClock.now
        for report in reports { try sketch.add(report) }
        let estimates = keys.map { sketch.estimate($0) }
        let serverSeconds = aggregateStart.duration(to: .now).seconds

        let errors = zip(estimates, truth).map { abs($0 - Double($1)) }
        let meanAbsoluteError = errors.reduce(0, +) / Double(items)
        let top = truth.indices.sorted { truth[$0] != truth[$1] ? truth[$0] > truth[$1] : $0 < $1 }.prefix(100)
        let topMaxError = top.map { errors[$0] }.max() ?? 0
        let reportMicroseconds = reportSeconds / Double(devices) * 1e6
        if output.json {
            Output.json(.object([
                "devices": .integer(Int64(devices)), "items": .integer(Int64(items)), "epsilon": .double(epsilon),
                "k": .integer(Int64(k)), "m": .integer(Int64(m)), "mode": .string(mode.rawValue),
                "meanAbsoluteError": .double(meanAbsoluteError), "topMaxError": .double(topMaxError),
                "reportMicroseconds": .double(reportMicroseconds), "serverSeconds": .double(serverSeconds),
            ]))
            return
        }
        Output.line("bench ldp  seed=\(seed)  devices=\(devices)  items=\(items)  ε=\(epsilon)  \(mode == .full ? "CMS" : "HCMS") k=\(k) m=\(m)")
        Output.table([
            ["", "value", "target", ""],
            ["mean absolute error (all items)", String(format: "%.1f", meanAbsoluteError), "", ""],
            ["largest error (100 most popular)", String(format: "%.1f", topMaxError), "", ""],
            ["device report", String(format: "%.2f µs", reportMicroseconds), String(format: "< %.0f µs", Self.targetReportMicroseconds),
             reportMicroseconds < Self.targetReportMicroseconds ? "met" : "MISSED"],
            ["server: add and estimate", String(format: "%.2f s", serverSeconds), "", ""],
        ])
    }
}

extension CountMeanSketch.Mode: ExpressibleByArgument {}
