import ArgumentParser
import CloudCore
import CloudPostgres
import DeviceStore
import Foundation
import IndexModel
import Inspect

struct TraceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trace",
        abstract: "Follow one entry or device across every device store and the cloud, in one timeline.",
        discussion: """
            The target is an item identifier, an activity key or persistent identifier, a web page URL, a public \
            hash (64 hexadecimal digits), or device:N (a run's device number, or a device id). Prefixes say which \
            when it is not plain: id:, url:, hash:, device:.

            For an entry: what each device journaled about it (indexed, recorded with its public hash, shown, \
            engaged, deleted, purged, asked for), what waits in an outbox, and each message the cloud's log holds \
            for its public hash with what the cloud did with it (vote counted or not and why, K reached, content \
            asked for, offered, agreed, published, withdrawn, purged). Then, per public hash, why it is public or \
            not, in counts only. For a device: the frames the cloud accepted from it, its restores and epochs, \
            what the cloud asked of it, and its sync cursor.

            A trace reads its stores through once or twice and changes nothing. Exit 1 when a store could not be \
            read to the end or the cloud's projections differ from its log (the output says where).

            Examples:
              sightline trace pub-6 --run run
              sightline trace https://sim.example/place/3 --run run --why-not-public
              sightline trace pub-6 --run run --device 17
              sightline trace device:3 --run run --json
              sightline trace 9f2c…(64 digits) --db device-1.sqlite --db cloud.sqlite
            """
    )

    @Argument(help: ArgumentHelp("What to follow: an identifier, a URL, a public hash, or device:N.", valueName: "target"))
    var target: String

    @Option(name: .customLong("run"), help: ArgumentHelp(
        "A run's folder (simulate or drill --out): every device store and its cloud store.", valueName: "dir"))
    var folder: String?

    @Option(name: .customLong("db"), help: ArgumentHelp(
        "Instead of --run: a device store, or the cloud store (a SQLite file or a postgres:// URL). Repeat it for each store.",
        valueName: "path-or-url"))
    var stores: [String] = []

    @Option(name: .long, help: ArgumentHelp(
        "With --run: keep only the steps of this device (its number or id): its journal, and what the cloud's log holds from it.",
        valueName: "n"))
    var device: String?

    @Flag(name: .long, help: "Print only, for each public hash the target names, why it is public or not.")
    var whyNotPublic = false

    @OptionGroup var output: JSONOption

    @OptionGroup(title: "PostgreSQL") var postgres: PostgresOptions

    func validate() throws {
        switch (folder, stores.isEmpty) {
        case (nil, true): throw ValidationError("give the stores to trace: --run DIR, or --db PATH for each store")
        case (.some, false): throw ValidationError("--run and --db both name stores: give one of them")
        default: break
        }
        if let folder { _ = try RunFolder.manifest(folder) }
        do {
            _ = try TraceTarget(parsing: target)
        } catch {
            throw ValidationError(error.description)
        }
        if let device {
            guard let folder else { throw ValidationError("--device goes with --run: it names a device of the run") }
            guard try RunFolder.manifest(folder).device(device) != nil else {
                throw ValidationError("--device \(TextRule.printable(device)): the run in \(folder) has no such device")
            }
        }
        if stores.filter(isCloud).count > 1 { throw ValidationError("--db names more than one cloud store: a trace reads one") }
        for store in stores where PostgresLocation.isPostgresURL(store) {
            try CloudStoreOption.validatePostgresURL(store, option: "--db")
        }
    }

    private func isCloud(_ path: String) -> Bool { CloudJournal.isCloudStore(path) }

    func run() throws {
        let target = try TraceTarget(parsing: target)
        var devices: [TraceDevice] = []
        var cloudPath: String?
        if let folder {
            let manifest = try RunFolder.manifest(folder)
            for device in manifest.devices {
                let path = (folder as NSString).appendingPathComponent(device.store)
                devices.append(TraceDevice(label: "device \(device.number)",
                                           store: try StoreOption.open(path, options: StoreOptions(readOnly: true))))
            }
            cloudPath = RunFolder.cloudStore(manifest, folder: folder)
        } else {
            for path in stores {
                if isCloud(path) {
                    cloudPath = path
                } else {
                    devices.append(TraceDevice(label: (path as NSString).lastPathComponent,
                                               store: try StoreOption.open(path, options: StoreOptions(readOnly: true))))
                }
            }
        }
        let cloud = try cloudPath.map {
            try CloudStoreOption.open($0, postgres: postgres.settings, options: CloudOptions(readOnly: true))
        }
        var trace = Tracer(devices: devices, cloud: cloud).trace(target)
        if let device, let folder, let id = try RunFolder.manifest(folder).device(device)?.id {
            trace = trace.only(device: DeviceID(id))
        }
        if whyNotPublic {
            printVerdicts(trace)
        } else if output.json {
            Output.json(trace.jsonValue)
        } else {
            printTimeline(trace)
        }
        for problem in trace.problems { Output.error("trace: \(problem)") }
        if !trace.problems.isEmpty { throw ExitStatus.checkFailed }
    }

    private func printTimeline(_ trace: Trace) {
        let read = "\(trace.devicesRead) device store(s)" + (trace.cloudRead ? " and the cloud store" : ", no cloud store")
        guard !trace.steps.isEmpty else {
            if let device {
                Output.line("device \(TextRule.printable(device))'s journal and what the cloud holds from it never mention \(trace.target.description)")
            } else {
                Output.line("nothing in the \(read) read mentions \(trace.target.description)")
            }
            return
        }
        Output.line("\(trace.target.description): \(trace.steps.count) step(s) across \(read)")
        Output.table([["time", "where", "at", "what"]] + trace.rows)
        for verdict in trace.verdicts {
            Output.line("")
            Output.line("\(verdict.hash) (\(verdict.app.rawValue)): " + verdict.reasons.joined(separator: "; "))
        }
    }

    /// Why each hash is public or not: counts, never which devices.
    private func printVerdicts(_ trace: Trace) {
        if output.json {
            Output.json(.object(["target": .string(trace.target.description), "verdicts": .array(trace.verdicts.map(\.jsonValue))]))
            return
        }
        guard !trace.verdicts.isEmpty else {
            let recorded = trace.steps.filter { $0.event == "activityRecorded" }
            if recorded.isEmpty {
                Output.line("\(trace.target.description): no public activity in the stores read names it")
            } else {
                Output.line("\(trace.target.description): never public: every activity it names is private (\(recorded[0].text))")
            }
            return
        }
        for verdict in trace.verdicts {
            Output.line("\(verdict.hash.hex) (\(verdict.app.rawValue)): \(verdict.isPublic ? "public" : "not public")")
            for reason in verdict.reasons { Output.line("  " + reason) }
        }
    }
}
