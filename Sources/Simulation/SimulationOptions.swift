import CloudCore
import CloudSQLite
import IndexModel

/// What one simulation run does. Everything that varies between runs is here
/// or drawn from `seed`, so the same options replay the same run.
public struct SimulationOptions: Sendable {
    public var devices: Int
    public var eventsPerDevice: Int
    public var seed: UInt64
    public var faults: FaultProfile
    /// K: distinct devices with a live vote before a public activity is shown.
    public var threshold: Int
    /// Where the stores and snapshots go. Nil: a scratch directory, removed
    /// at the end. Given: device stores are files there and are kept, with the
    /// cloud store and the snapshots.
    public var directory: String?
    /// Keep the device stores in files even without a `directory` (in the
    /// scratch one). A run's digest depends on where its stores live: a
    /// restore journals the SHA-256 of its backup's bytes, and a backup of
    /// a store in memory is laid out differently (its page size, its
    /// journal mode) from one of a file.
    public var storesInFiles = false
    /// Whether the device stores are files: given a `directory`, always.
    public var deviceStoresAreFiles: Bool { directory != nil || storesInFiles }
    /// Public activities in the shared catalogue.
    public var catalogueSize: Int
    /// The app every simulated device belongs to.
    public var app: AppID
    /// Run a restore drill instead of random faults (`sightline drill restore`).
    public var drill: DrillSide?
    /// In a cloud drill, restore the cloud as it was this many virtual
    /// milliseconds before its backup (`cloud restore --to-time`).
    public var drillCutBack: Int64?
    /// The app's private popularity (`simulate --popularity ldp`): the cloud
    /// counts it so, and devices learn it in their acks. Nil: exact.
    public var popularity: PrivatePopularity?
    /// A rule the embedded cloud breaks on purpose (`Sabotage`); nil: none.
    public var sabotage: Sabotage?
    /// Sync with this served cloud instead of an embedded one (not deterministic).
    public var remote: (any RemoteCloud)?
    /// The file the served cloud's enrolment secret was read from, for the
    /// command that reruns the run; nil when it came from the environment.
    public var remoteSecretFile: String?
    /// Keep the embedded cloud's store in this PostgreSQL database (which
    /// must hold no cloud store yet) instead of a SQLite file. The run is the
    /// same, digest included.
    public var cloudDatabase: (any CloudDatabase)?
    /// Run the devices' app calls on a second thread while the event loop
    /// goes on (`CallLane`). The run is the same, digest included; only the
    /// wall time changes. Drills always run on one thread.
    public var callLane: Bool
    /// Past this many devices, each backs up proportionally less often (one
    /// backup in `devices / backupFleet`), so a run takes about as many
    /// backups as one of this size. Restores are capped at one a second
    /// whatever the fleet, so more backups would be written and never
    /// restored, and a backup writes a whole snapshot file, the costliest
    /// thing a device does.
    public var backupFleet = 500
    /// One device in this many searches before it engages. A search folds the
    /// calls since the last into the device's ranked index, which costs about
    /// as much as the calls.
    public var searchStride = 4
    /// Past this many searching devices, devices search proportionally less
    /// often (one in `devices / searchingDevices`): a search checks one
    /// device's index against its own calls, so a thousand devices already
    /// take every path a search has.
    public var searchingDevices = 1_000
    /// The bytes the device stores may hold, awake and asleep together
    /// (`StoreKeeper`); past it, the least recently used go to sleep. Nil:
    /// half of this machine's memory. The run is the same, digest included,
    /// whatever the budget; only its time and memory change.
    public var memoryBudget: Int?
    /// What the users do: act all run (`busy`), or live one day (`day`,
    /// `DayPlan`): a few visits in a daily rhythm, idle between. On a day,
    /// `eventsPerDevice` caps a user's calls.
    public var workload = WorkloadShape.busy

    public init(devices: Int = 8, eventsPerDevice: Int = 60, seed: UInt64 = 1, faults: FaultProfile = .light,
                threshold: Int = CloudOptions.defaultThreshold, directory: String? = nil, catalogueSize: Int = 24,
                app: AppID = AppID("com.sightline.sim")) {
        self.devices = devices
        self.eventsPerDevice = eventsPerDevice
        self.seed = seed
        self.faults = faults
        self.threshold = threshold
        self.directory = directory
        self.catalogueSize = catalogueSize
        self.app = app
        drill = nil
        drillCutBack = nil
        popularity = nil
        remote = nil
        remoteSecretFile = nil
        sabotage = nil
        cloudDatabase = nil
        callLane = false
    }

    /// The command that runs a simulation with these options: `sightline
    /// drill restore` for a drill, `sightline simulate` otherwise. The same
    /// command gives the same run and digest, except against a served cloud.
    public var replayCommand: String {
        if let drill {
            var command = "sightline drill restore --side \(drill.rawValue) --seed \(seed) --devices \(devices) "
                + "--events-per-device \(eventsPerDevice) --threshold \(threshold)"
            if let drillCutBack { command += " --cut-back \(PrivatePopularity.decimal(Int(drillCutBack)))" }
            if let cloudDatabase { command += " --cloud-db \(cloudDatabase)" }
            if deviceStoresAreFiles { command += " --stores files" }
            return command
        }
        var command = "sightline simulate --seed \(seed) --devices \(devices) --events-per-device \(eventsPerDevice) --faults \(faults.rawValue)"
        if threshold != CloudOptions.defaultThreshold { command += " --threshold \(threshold)" }
        if let popularity {
            command += " --popularity ldp --epsilon \(PrivatePopularity.decimal(popularity.epsilonThousandths))"
                + " --daily-budget \(PrivatePopularity.decimal(popularity.dailyBudgetThousandths))"
        }
        let defaults = SimulationOptions()
        if backupFleet != defaults.backupFleet { command += " --backup-fleet \(backupFleet)" }
        if searchStride != defaults.searchStride { command += " --search-stride \(searchStride)" }
        if searchingDevices != defaults.searchingDevices { command += " --searching-devices \(searchingDevices)" }
        if workload != defaults.workload { command += " --workload \(workload.rawValue)" }
        if let cloudDatabase { command += " --cloud-db \(cloudDatabase)" }
        if deviceStoresAreFiles { command += " --stores files" }
        if let sabotage { command += " --sabotage \(sabotage.rawValue)" }
        if let remote {
            command += " --cloud \(remote.location) --cloud-store \(remote.storePath)"
            if app != SimulationOptions().app { command += " --app \(app.rawValue)" }
            if let remoteSecretFile { command += " --enrolment-secret-file \(remoteSecretFile)" }
        }
        return command
    }

    /// Why `replayCommand` does not replay the run, when it does not: a
    /// served cloud keeps its own clock and answers in its own time, so the
    /// command reruns the run against a fresh one rather than replaying it.
    public var replayNote: String? {
        guard let remote else { return nil }
        return """
            not replayable: the served cloud's clock and timing are its own; the command reruns the run against a fresh \
            served cloud (`sightline cloud serve` with an empty store at \(remote.storePath), K = \(threshold), at \(remote.location)\
            \(remoteSecretFile == nil ? ", the enrolment secret in SIGHTLINE_ENROLMENT_SECRET" : ""))
            """
    }

    /// Refuses options no run can use, saying which and why.
    public func validate() throws(SimulationError) {
        guard (1...1_000_000).contains(devices) else {
            throw SimulationError("--devices must be between 1 and 1,000,000, not \(devices)")
        }
        guard (0...1_000_000).contains(eventsPerDevice) else {
            throw SimulationError("--events-per-device must be between 0 and 1,000,000, not \(eventsPerDevice)")
        }
        guard (1...1_000_000).contains(threshold) else {
            throw SimulationError("--threshold must be between 1 and 1,000,000, not \(threshold)")
        }
        for (name, value) in [("--backup-fleet", backupFleet), ("--search-stride", searchStride), ("--searching-devices", searchingDevices)] {
            guard (1...100_000).contains(value) else {
                throw SimulationError("\(name) must be between 1 and 100,000, not \(value)")
            }
        }
        if let sabotage {
            guard remote == nil else { throw SimulationError("--sabotage breaks a rule of the embedded cloud: it does not take --cloud") }
            guard drill == nil else { throw SimulationError("--sabotage is for simulate, not for a drill") }
            guard sabotage != .threshold || threshold >= 2 else {
                throw SimulationError("--sabotage threshold shows hashes at K − 1 live votes: it needs K of 2 or more")
            }
        }
        if let drillCutBack {
            guard drill == .cloud else { throw SimulationError("a cut-back restores the cloud: it needs a cloud drill") }
            guard (0...86_400_000).contains(drillCutBack) else {
                throw SimulationError("the cut-back must be between 0 and 86,400 virtual seconds, not \(drillCutBack) ms")
            }
        }
        if workload != .busy && drill != nil {
            throw SimulationError("a restore drill times its backup and its restore by the busy workload's calls: it does not take --workload")
        }
        if remote != nil && drill != nil {
            throw SimulationError("a restore drill destroys the cloud store, so it runs on an embedded cloud only")
        }
        if remote != nil && popularity != nil {
            throw SimulationError("a served cloud (--cloud) counts popularity as its own `cloud serve --popularity` says")
        }
        if remote != nil && cloudDatabase != nil {
            throw SimulationError("--cloud-db keeps the embedded cloud's store; a served cloud (--cloud) keeps its own")
        }
        // Every entry and the Sybil group's may be wanted at once, and a
        // converging device that heard one ack after the last request must
        // have heard them all (`Simulator.cloudNews`): one ack must carry them.
        guard (1..<CloudIndex.requestsPerAck).contains(catalogueSize) else {
            throw SimulationError("""
                the catalogue must hold between 1 and \(CloudIndex.requestsPerAck - 1) entries, so that one ack \
                can ask for all of them, not \(catalogueSize)
                """)
        }
    }
}

/// What a restore drill destroys and restores.
public enum DrillSide: String, CaseIterable, Hashable, Sendable {
    /// Device 0's store is deleted and restored from its backup.
    case device
    /// The cloud store is deleted and restored from its snapshot.
    case cloud
}

/// A run that could not be carried out (as opposed to one whose invariants failed).
public struct SimulationError: Error, Hashable, Sendable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}

/// Where a run is, as `Simulator`'s progress hears it: the device stores
/// made and enrolled, the app calls made so far of all the run will make,
/// then how long (in virtual time) the devices have synced since the calls
/// ended, then the end checks.
public enum SimulationProgress: Hashable, Sendable {
    case preparing(done: Int, of: Int)
    /// On a day (`WorkloadShape.day`): how far into the day the users are.
    case day(virtualSeconds: Int)
    case calls(done: Int, of: Int)
    case converging(virtualSeconds: Int)
    case checking
}
