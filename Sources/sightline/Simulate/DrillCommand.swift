import ArgumentParser
import CloudCore
import Foundation
import IndexModel
import Simulation

extension DrillSide: ExpressibleByArgument {}

/// `sightline drill restore`: a restore-from-backup drill on the simulator.
struct DrillCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "drill",
        abstract: "Run restore-from-backup drills on the simulator.",
        subcommands: [RestoreDrillCommand.self]
    )
}

struct RestoreDrillCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Back up, keep going, destroy, restore, reindex and resync; report RPO, RTO and double counts.",
        discussion: """
            The devices run their calls on a perfect network. Halfway through, device 0's store \
            (--side device) or the cloud store (--side cloud) is backed up; at three quarters (or, in \
            a short run, once the backup is written) it is deleted, and 10 virtual seconds later \
            restored from that backup (the device then \
            reindexes). With --cut-back S the cloud comes back as it was S virtual seconds before \
            its backup (cloud restore --to-time), so devices resend what the cut removed, from \
            their journals where they had dropped it. The run syncs until quiet and checks every \
            invariant of `simulate`. \
            Exit 1 when a check fails or anything was counted twice.

            Examples:
              sightline drill restore --side cloud --out drill
              sightline drill restore --side cloud --cut-back 20
              sightline drill restore --side device --devices 10 --json
            """
    )

    @Option(name: .long, help: "device or cloud.")
    var side: DrillSide = .device

    @Option(name: .long, help: "Simulated devices.")
    var devices = 5

    @Option(name: .long, help: "App calls each device makes.")
    var eventsPerDevice = 60

    @Option(name: .long, help: "The seed.")
    var seed: UInt64 = 1

    @Option(name: .long, help: "K: distinct devices with a live vote before a public activity is shown.")
    var threshold = 3

    @Option(name: .long, help: "Keep the stores, the snapshots, report.json, report.html and run.json here (a new or empty directory).")
    var out: String?

    @Option(name: .long, help: ArgumentHelp(
        "With --side cloud: restore the cloud as it was this many virtual seconds before its backup (cloud restore --to-time).",
        valueName: "seconds"))
    var cutBack: Double?

    func validate() throws {
        try storesOption.validate(out: out)
        if let cutBack {
            guard side == .cloud else { throw ValidationError("--cut-back restores the cloud: give it with --side cloud") }
            guard cutBack.isFinite, (0...86_400).contains(cutBack) else {
                throw ValidationError("--cut-back must be between 0 and 86400 seconds")
            }
        }
    }

    @OptionGroup var storesOption: StoresOption

    @OptionGroup(title: "PostgreSQL") var cloudDatabase: CloudDatabaseOption

    @OptionGroup var output: JSONOption

    @OptionGroup var progressOption: ProgressOption

    func run() throws {
        Output.error("seed=\(seed) side=\(side.rawValue) devices=\(devices) events-per-device=\(eventsPerDevice) threshold=\(threshold)"
                     + (cloudDatabase.cloudDB.map { " cloud-db=\($0)" } ?? ""))
        let database = try cloudDatabase.database()
        let report: DrillReport
        let line = ProgressLine(mode: progressOption.mode, phase: "setting devices up", total: devices, unit: "devices")
        defer { line.finish() }
        do {
            report = try DrillReport.run(side: side, devices: devices, eventsPerDevice: eventsPerDevice, seed: seed,
                                         threshold: threshold, directory: out, cloudDatabase: database,
                                         cutBackMilliseconds: cutBack.map { Int64(($0 * 1_000).rounded()) },
                                         storesInFiles: storesOption.inFiles, progress: line.hear)
            line.finish()
        } catch {
            Output.error("error: \(error)")
            throw ExitStatus.checkFailed
        }
        if let out, let manifest = report.manifest {
            try RunFolder.write(into: out, report: report.jsonValue, html: report.simulation.html, manifest: manifest)
        }
        if output.json {
            Output.json(report.jsonValue)
        } else {
            Output.table(report.summaryRows)
        }
        if !report.passed {
            for failure in report.simulation.failures {
                Output.error("invariant \(failure.name) failed (seed=\(seed)): \(failure.detail)")
            }
            for device in report.behind { Output.error("not caught up (seed=\(seed)): \(device)") }
            if report.doubleCounts > 0 { Output.error("\(report.doubleCounts) message(s) counted twice (seed=\(seed))") }
            throw ExitStatus.checkFailed
        }
    }
}
