import ArgumentParser
import DeviceStore
import Foundation
import IndexModel
import Simulation

/// `--db`, shared by every command that reads or writes one store, or
/// `--run DIR --device N`: a device's store (or, without `--device`, the
/// cloud's) found through a run folder's `run.json`.
struct StoreOption: ParsableArguments {
    @Option(name: .customLong("db"), help: ArgumentHelp("The store file.", valueName: "path"))
    var path: String?

    @Option(name: .long, help: ArgumentHelp(
        "Instead of --db: a run's folder (simulate or drill --out); the store is the cloud's, or with --device a device's.",
        valueName: "dir"))
    var run: String?

    @Option(name: .long, help: ArgumentHelp("With --run: the device, by number or id.", valueName: "number-or-id"))
    var device: String?

    func validate() throws {
        try RunFolder.validate(path: path, run: run, device: device, devices: true, what: "store")
    }

    /// The store's file (or, for a cloud, URL), as `--db` gave it or the
    /// run's manifest names it.
    var db: String { RunFolder.resolved(path: path, run: run, device: device) }

    /// Opens the store read-only: inspection never creates or modifies a store.
    func openReadOnly(clock: any StoreClock = SystemClock()) throws -> DeviceStore {
        try StoreOption.open(db, options: StoreOptions(clock: clock, readOnly: true))
    }

    /// Opens the store for writing, creating it (for `app`) when it does not exist.
    func openForWriting(clock: any StoreClock, app: AppID = StoreOptions.defaultApp) throws -> DeviceStore {
        try StoreOption.open(db, options: StoreOptions(clock: clock, app: app))
    }

    static func open(_ path: String, options: StoreOptions) throws -> DeviceStore {
        do {
            return try DeviceStore(at: .file(path), options: options)
        } catch {
            Output.error("error: \(error.commandLineMessage)")
            throw ExitStatus.storeUnavailable
        }
    }
}

/// `--json`: print one JSON document on stdout instead of text.
struct JSONOption: ParsableArguments {
    @Flag(name: .long, help: "Print one JSON document on stdout.")
    var json = false
}

/// `--clock`: run on a simulated clock instead of the system clock.
struct ClockOption: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "Use a simulated clock starting at this ISO 8601 instant (or at the journal's latest event, if later). Needed by advanceClock.",
        valueName: "instant"))
    var clock: String?

    func validate() throws {
        if let clock, ISO8601.parse(clock) == nil {
            throw ValidationError("--clock: \"\(clock)\" is not an ISO 8601 date-time such as 2027-01-01T00:00:00Z")
        }
    }

    /// The clock to inject: the system clock, or a manual one.
    func makeClock() -> any StoreClock {
        guard let clock, let start = ISO8601.parse(clock) else { return SystemClock() }
        return ManualClock(start)
    }

    /// Moves a simulated clock up to the store's latest event, so time never runs
    /// backwards across runs of the same store.
    func catchUp(_ clock: any StoreClock, with store: DeviceStore) throws {
        guard let manual = clock as? ManualClock else { return }
        if let latest = try store.latestEventTime(), latest > manual.now() {
            try manual.advance(to: latest)
        }
    }
}

/// `--enrolment-secret-file`: where an app's enrolment secret is read from. The
/// secret never goes on the command line (other users can read that); without
/// the option it comes from `SIGHTLINE_ENROLMENT_SECRET`.
struct EnrolmentSecretOption: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "A file holding the app's enrolment secret (else the SIGHTLINE_ENROLMENT_SECRET environment variable).",
        valueName: "path"))
    var enrolmentSecretFile: String?

    /// The secret, or nil when neither the file nor the variable gives one.
    func secret() throws -> String? {
        if let path = enrolmentSecretFile {
            guard let data = FileManager.default.contents(atPath: path) else {
                Output.error("error: cannot read the enrolment secret file \(path)")
                throw ExitStatus.invalidInput
            }
            return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return ProcessInfo.processInfo.environment["SIGHTLINE_ENROLMENT_SECRET"]
    }
}
