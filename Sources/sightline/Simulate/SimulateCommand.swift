import ArgumentParser
import Foundation
import IndexModel
import Simulation

extension FaultProfile: ExpressibleByArgument {}

/// `sightline simulate`: many devices, a faulty network and one cloud in one
/// deterministic process, checked against the oracle at the end.
struct SimulateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Run a deterministic multi-device simulation with faults and check it against a ground-truth oracle.",
        discussion: """
            Every device is a real device store, the cloud a real cloud store, the network an \
            in-memory transport that loses, duplicates, delays, replays and corrupts frames as the \
            fault profile says. After the faults, the run syncs until quiet and checks its \
            invariants (docs/SIMULATION.md). The same seed and options give the same digest. \
            Exit 1 when any invariant fails.
            """
    )

    @Option(name: .long, help: "Simulated devices.")
    var devices = 8

    @Option(name: .long, help: "App calls each device makes.")
    var eventsPerDevice = 60

    @Option(name: .long, help: "The seed (a run is replayed by giving the same seed and options).")
    var seed: UInt64?

    @Option(name: .long, help: "none, light, heavy or swarm (each seed draws its own mix).")
    var faults: FaultProfile = .light

    @Option(name: .long, help: "K: distinct devices with a live vote before a public activity is shown.")
    var threshold = 5

    @Option(name: .long, help: "Keep every store, the snapshots, report.json and report.html here (a new or empty directory).")
    var out: String?

    @OptionGroup var output: JSONOption

    func validate() throws {
        if let out, FileManager.default.fileExists(atPath: out),
           !((try? FileManager.default.contentsOfDirectory(atPath: out))?.isEmpty ?? false) {
            throw ValidationError("--out \(out) is not empty: give a new or empty directory")
        }
    }

    func run() throws {
        let seed = self.seed ?? UInt64.random(in: 1...999_999)
        let options = SimulationOptions(devices: devices, eventsPerDevice: eventsPerDevice, seed: seed, faults: faults,
                                        threshold: threshold, directory: out)
        let showProgress = isatty(STDERR_FILENO) == 1 && !output.json
        Output.error("seed=\(seed) devices=\(devices) events-per-device=\(eventsPerDevice) faults=\(faults.rawValue) threshold=\(threshold)")
        let report: SimulationReport
        do {
            var shown = -1
            let simulator = try Simulator(options: options, progress: showProgress ? { fraction in
                let percent = Int(fraction * 100)
                guard percent != shown else { return }
                shown = percent
                let bar = String(repeating: "#", count: percent / 4) + String(repeating: ".", count: 25 - percent / 4)
                FileHandle.standardError.write(Data("\r[\(bar)] \(percent)% of devices done".utf8))
            } : nil)
            report = try simulator.run()
            if showProgress { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
        } catch {
            Output.error("error: \(error)")
            throw ExitStatus.checkFailed
        }
        if let out {
            for (name, text) in [("report.json", JSONWriter.pretty(report.jsonValue) + "\n"), ("report.html", report.html)] {
                let path = out + "/" + name
                do {
                    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
                } catch {
                    Output.error("error: cannot write \(path): \(error.localizedDescription)")
                    throw ExitStatus.storeUnavailable
                }
            }
        }
        if output.json {
            Output.json(report.jsonValue)
        } else {
            Output.table(report.summaryRows)
        }
        if !report.passed {
            for failure in report.failures {
                Output.error("invariant \(failure.name) failed (seed=\(seed)): \(failure.detail)")
            }
            throw ExitStatus.checkFailed
        }
    }
}
