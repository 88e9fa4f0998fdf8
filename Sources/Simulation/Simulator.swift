import CloudCore
import CloudSQLite
import DeviceStore
import Foundation
import IndexModel
import Snapshot
import SyncWire

/// The discrete-event simulator: every device, the network and the cloud in
/// one thread on one virtual clock, driven by events taken earliest first.
/// Each device is a real `DeviceStore` driven by a `SyncRun`; the cloud is a
/// real `CloudStore` (SQLite, or PostgreSQL with `cloudDatabase`); the network is the simulator's own in-memory transport,
/// which loses, duplicates, delays, replays and corrupts frames as the fault
/// plan says. A run has a fault phase (the workload plus faults) and a
/// convergence phase (faults healed, input stopped, sync until quiet), then the
/// oracle's checks (`Invariant`).
public final class Simulator {
    enum Event {
        case userAction(Int)
        case syncTimer(Int)
        case sessionWake(Int, session: UInt64)
        case toCloud(from: Int?, request: UInt64, bytes: [UInt8])
        case toDevice(Int, request: UInt64, bytes: [UInt8])
        case replyTaken(Int, token: UInt64)
        case timeout(Int, request: UInt64)
        case chaos
        case heal(partition: UInt64)
        case cloudUp(restore: Bool, incarnation: Int)
        case cloudSnapshot
        case cloudSnapshotWritten
        case deviceBackup(Int)
        case hostile
        case sample
        case convergenceCheck
        case drillBackup
        case drillDestroy
        case drillRestore
    }

    enum Phase {
        case faults
        case converging(since: Int64)
        case done(converged: Bool)
    }

    static let start = Timestamp(millisecondsSince1970: 1_798_761_600_000)  // 2027-01-01T00:00:00Z
    static let enrolmentSecret = "simulation-enrolment-secret"

    public let options: SimulationOptions
    public let plan: FaultPlan
    let directory: String
    private let removeDirectory: Bool
    let world: WorldClock
    let catalogue: Catalogue
    var faultRandom: SimRandom
    var timingRandom: SimRandom
    let network: SimNetwork
    /// The cloud, its incarnations, backups and restores.
    let cloudHost: CloudHost
    /// The running cloud; nil while it is down.
    var cloud: (any CloudStore)? { cloudHost.cloud }
    /// The pages the operator crawls into the embedded cloud (`crawledPages(_:)`).
    var crawledPages: [CrawledPage] { options.remote == nil ? Simulator.crawledPages(catalogue) : [] }
    /// The devices and where their calls run.
    let fleet: Fleet
    var devices: [SimDevice] { fleet.devices }
    var queue = EventQueue<Event>()
    var nextRequest: UInt64 = 0
    var hostileKey: [UInt8]?
    private(set) var phase = Phase.faults
    private var finishedDevices = 0
    var counters = RunCounters()
    var findings: [String] = []
    var restores: [RestoreRecord] = []
    var timeline: [TimelineSample] = []
    private let progress: ((SimulationProgress) -> Void)?
    /// Where the event loop's time goes (`RunTimes`).
    var clock: PartClock { fleet.keeper.clock }
    /// The second thread for app calls (`SimulationOptions.callLane`); nil:
    /// every call runs on the event loop's thread.
    var lane: CallLane? { fleet.lane }
    /// Called before the loop handles each event, for tests that make a
    /// fault happen at one exact moment (a crash while a reply is being taken).
    /// The simulator holds it: a closure that uses the simulator must not
    /// hold it too (`[unowned simulator]`), or the run's scratch directory
    /// outlives the test.
    var beforeEvent: ((Event) throws -> Void)?

    /// Prepares a run: the directory, the cloud, and every device enrolled.
    /// `progress` hears the calls made as they are made, then the
    /// convergence, then the checks (`SimulationProgress`); it is called
    /// on the simulator's thread and should only store what it is told.
    public init(options: SimulationOptions, progress: ((SimulationProgress) -> Void)? = nil) throws(SimulationError) {
        try options.validate()
        // Before anything is made: stores on disk stay open all run.
        if options.deviceStoresAreFiles { try OpenFiles.ensure(devices: options.devices) }
        self.options = options
        self.progress = progress
        // A drill reads every device's store at each reply; it runs serially.
        let lane = options.callLane && options.drill == nil ? CallLane() : nil
        fleet = Fleet(lane: lane, keeper: StoreKeeper(budget: options.memoryBudget ?? StoreKeeper.defaultBudget, lane: lane))
        var root = SimRandom(seed: options.seed)
        var planRandom = root.split()
        var plan = options.drill == nil ? FaultPlan.draw(options.faults, random: &planRandom) : FaultPlan()
        if options.remote != nil {
            // The served cloud's crashes and restores are not the simulator's to cause.
            plan.cloudCrashes = 0
            plan.cloudRestores = 0
        }
        self.plan = plan
        faultRandom = root.split()
        network = SimNetwork(plan: plan, random: root.split())
        timingRandom = root.split()
        let cloudRandom = SeededRandom(seed: root.next())
        world = WorldClock(start: Simulator.start.millisecondsSince1970)
        catalogue = Catalogue(app: options.app, size: options.catalogueSize)
        if let given = options.directory {
            directory = given
            removeDirectory = false
        } else {
            // Unique per run: runs in one process (tests) may share a seed.
            // On tmpfs when there is one: a run creates and deletes many
            // small files (snapshots), and that is half again faster there.
            let base = FileManager.default.isWritableFile(atPath: "/dev/shm") ? "/dev/shm"
                                                                              : FileManager.default.temporaryDirectory.path
            directory = base + "/sightline-sim-\(options.seed)-\(UUID().uuidString)"
            removeDirectory = true
        }
        cloudHost = CloudHost(path: options.remote?.storePath ?? directory + "/cloud.sqlite", database: options.cloudDatabase,
                              directory: directory, world: world,
                              random: cloudRandom, threshold: options.threshold, sabotage: options.sabotage, app: options.app, isRemote: options.remote != nil,
                              lane: lane)
        do {
            if FileManager.default.fileExists(atPath: directory) {
                let existing = try FileManager.default.contentsOfDirectory(atPath: directory)
                guard existing.isEmpty || removeDirectory else {
                    throw SimulationError("\(directory) is not empty: give --out a new or empty directory")
                }
                if removeDirectory { try FileManager.default.removeItem(atPath: directory) }
            }
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch let error as SimulationError {
            throw error
        } catch {
            throw SimulationError("cannot prepare \(directory): \(error.localizedDescription)")
        }
        let cloud: any CloudStore
        if let remote = options.remote {
            cloud = cloudHost.adopt(try Simulator.openRemoteStore(remote, options: options))
        } else {
            do {
                cloud = try cloudHost.start()
                try cloud.registerApp(options.app, enrolmentSecret: Simulator.enrolmentSecret)
                if let popularity = options.popularity { try cloud.setPopularity(.ldp(popularity), app: options.app) }
                try cloud.recordPages(crawledPages, app: options.app)
            } catch {
                throw SimulationError("cannot set the simulation's cloud up: \(error)")
            }
        }
        func enrol(_ device: DeviceID) throws -> [UInt8] {
            if let remote = options.remote { return try remote.enrol(app: options.app, device: device) }
            return try cloud.enrol(app: options.app, device: device, enrolmentSecret: Simulator.enrolmentSecret)
        }
        do {
            // Each device's seeds are drawn in device order, and each
            // device is enrolled with the cloud in that order.
            let seeds = (0..<options.devices).map { _ in (store: root.next(), workload: root.split()) }
            if options.deviceStoresAreFiles {
                try addDevicesWithFiles(seeds, enrol: enrol)
            } else {
                try addUnbornDevices(seeds, enrol: enrol)
            }
            if options.workload == .day {
                // Drawn after everything else, so that a busy run's draws stay as they were.
                var days = root.split()
                for device in fleet.devices { device.day = DayPlan(random: &days) }
            }
            if plan.hostile {
                hostileKey = try enrol(Simulator.hostileName)
            }
        } catch {
            throw SimulationError("cannot set the simulation up: \(error)")
        }
        if plan.sybil && options.threshold >= 2 {
            // K−1 devices push an entry nobody else knows: it must never become public.
            for device in devices.prefix(options.threshold - 1) {
                device.scripted = [.activity(catalogue.activity(catalogue.sybil.number, related: nil, expires: nil)),
                                   .engage(ref: catalogue.sybil.url)]
            }
        }
    }

    deinit {
        fleet.close()
        cloudHost.close()
        removeScratchDirectory()
    }

    /// Removes the directory of the run's files (the cloud, snapshots and
    /// backups) now, unless the caller gave it with `--out`. A command about
    /// to exit calls this and leaves the rest to the process's end, which
    /// takes back the in-memory stores at once instead of freeing them one
    /// by one.
    public func removeScratchDirectory() {
        if removeDirectory { try? FileManager.default.removeItem(atPath: directory) }
    }

    static let hostileName = DeviceID("hostile-device")
    /// The one token the hostile device votes with (a second would be refused).
    static let hostileToken = VoteToken([UInt8](repeating: 0x5A, count: VoteToken.byteCount))!

    /// A new device's store and what it was made with.
    private struct NewStore {
        let store: DeviceStore
        let clock: DeviceClock
        let random: SeededRandom
        let location: StoreLocation
        /// What its database holds (`DeviceStore.databaseBytes`).
        let pages: Int
    }

    /// Devices set up between two progress reports.
    static let storesPerSlice = 256

    /// Adds a device for each seed, in order, whose in-memory store is made
    /// when it is first touched (`SimDevice.Sleeping.unborn`): most of a
    /// large day's devices are idle for hours, and a store made now would
    /// only be given its key and put to sleep at once. Each device's
    /// identity is drawn and enrolled now, in device order, as making its
    /// store now would.
    private func addUnbornDevices(_ seeds: [(store: UInt64, workload: SimRandom)],
                                  enrol: (DeviceID) throws -> [UInt8]) throws {
        // What every new store's sync status is, read off one made for it.
        let newStatus = try DeviceStore(at: .memory, options: Simulator.storeOptions(
            clock: DeviceClock(world: world), random: SeededRandom(seed: 0), app: options.app,
            connections: fleet.keeper.connections)).syncStatus()
        for (number, seed) in seeds.enumerated() {
            let clock = DeviceClock(world: world)
            let random = SeededRandom(seed: seed.store)
            let deviceOptions = storeOptions(clock: clock, random: random)
            let identity = DeviceStore.drawIdentity(deviceOptions)
            fleet.add(SimDevice(number: number, clock: clock, random: random, identity: identity, key: try enrol(identity.deviceID),
                                status: newStatus, workload: Workload(device: number, random: seed.workload),
                                options: deviceOptions, keeper: fleet.keeper))
            if (number + 1) % Simulator.storesPerSlice == 0 || number + 1 == seeds.count {
                progress?(.preparing(done: number + 1, of: seeds.count))
            }
        }
    }

    /// Adds a device for each seed, in order, with its store file: a slice
    /// at a time (so that a large fleet's setup reports progress), their
    /// stores, which touch nothing in common, made on both threads,
    /// enrolled in device order, and given their keys on both threads.
    private func addDevicesWithFiles(_ seeds: [(store: UInt64, workload: SimRandom)],
                                     enrol: (DeviceID) throws -> [UInt8]) throws {
        for first in stride(from: 0, to: seeds.count, by: Simulator.storesPerSlice) {
            let slice = seeds[first..<min(first + Simulator.storesPerSlice, seeds.count)]
            let stores = try makeStores(slice.map(\.store), first: first)
            var keys: [[UInt8]] = []
            for new in stores { keys.append(try enrol(new.store.deviceID)) }
            let cargo = LaneCargo(value: stores), given = keys
            _ = try fleet.onBothThreads(stores.count) { number in
                Result { try cargo.value[number].store.setDeviceKey(given[number]) }
            }
            for (offset, new) in stores.enumerated() {
                let number = first + offset
                fleet.add(SimDevice(number: number, clock: new.clock, random: new.random, store: new.store, location: new.location,
                                    workload: Workload(device: number, random: seeds[number].workload),
                                    options: storeOptions(clock: new.clock, random: new.random),
                                    keeper: fleet.keeper, pages: new.pages))
            }
            try fleet.keeper.enforce { _ in }
            progress?(.preparing(done: first + stores.count, of: seeds.count))
        }
    }

    /// The store files of devices `first`, `first + 1`, … from their
    /// seeds, made on both threads (`Fleet.onBothThreads`).
    private func makeStores(_ seeds: [UInt64], first: Int) throws -> [NewStore] {
        try fleet.onBothThreads(seeds.count) { [options, world, directory, connections = fleet.keeper.connections] index in
            let clock = DeviceClock(world: world)
            let random = SeededRandom(seed: seeds[index])
            let location = StoreLocation.file(Simulator.devicePath(directory, first + index))
            return Result {
                let store = try DeviceStore(at: location, options: Simulator.storeOptions(clock: clock, random: random, app: options.app,
                                                                                          connections: connections))
                return NewStore(store: store, clock: clock, random: random, location: location, pages: try store.databaseBytes())
            }
        }
    }

    func devicePath(_ number: Int) -> String { Simulator.devicePath(directory, number) }

    static func devicePath(_ directory: String, _ number: Int) -> String { directory + "/" + storeFile(number, generation: 0) }

    /// The name of device `number`'s store file after `generation` restores:
    /// `device-N.sqlite`, then `device-N.r1.sqlite`, `device-N.r2.sqlite`, ….
    static func storeFile(_ number: Int, generation: Int) -> String {
        generation == 0 ? "device-\(number).sqlite" : "device-\(number).r\(generation).sqlite"
    }

    func storeOptions(clock: DeviceClock, random: SeededRandom) -> StoreOptions {
        Simulator.storeOptions(clock: clock, random: random, app: options.app, connections: fleet.keeper.connections)
    }

    /// In-memory stores take their connections from the keeper's pool
    /// (`StoreConnectionPool`): a store woken takes an idle connection
    /// with its schema parsed and its statements compiled.
    static func storeOptions(clock: DeviceClock, random: SeededRandom, app: AppID, connections: StoreConnectionPool) -> StoreOptions {
        StoreOptions(clock: clock, random: random, durability: .normal, app: app, connections: connections)
    }

    // MARK: - Running

    /// Runs the fault phase and the convergence phase, then checks the
    /// invariants. Throws only when the run could not be carried out.
    public func run() throws(SimulationError) -> SimulationReport {
        let wallStart = ContinuousClock.now
        clock.reset(to: .other)
        let now = world.milliseconds
        for device in devices {
            if let day = device.day {
                if let first = day.starts.first { queue.schedule(.userAction(device.number), at: now + first) }
                device.nextProbe = now + day.firstRefresh
            } else {
                queue.schedule(.userAction(device.number), at: now + timingRandom.between(1, Simulator.actionGap.upperBound))
            }
            scheduleSyncTimer(device, at: now + timingRandom.between(500, 8_000))
            if plan.deviceRestores > 0 {
                queue.schedule(.deviceBackup(device.number), at: now + firstBackupDelay())
            }
        }
        // A device whose day holds no visit is done at once.
        finishedDevices += devices.count { $0.day?.starts.isEmpty == true }
        queue.schedule(.chaos, at: now + 1_000)
        queue.schedule(.sample, at: now)
        if let side = options.drill {
            // Snapshot halfway through the calls, destroy at three quarters,
            // or once the backup is written when that is later (a short run):
            // a cloud destroyed before its backup was written would come
            // back empty.
            let span = Int64(Simulator.meanCallGap) * Int64(options.eventsPerDevice)
            queue.schedule(.drillBackup, at: now + span / 2)
            queue.schedule(.drillDestroy, at: now + max(span * 3 / 4, span / 2 + Simulator.cloudSnapshotWriteTime + 1_000))
            drill = DrillState(side: side)
        } else if options.remote == nil {
            queue.schedule(.cloudSnapshot, at: now + cloudSnapshotInterval)
        }
        if plan.hostile { queue.schedule(.hostile, at: now + timingRandom.between(1_000, 20_000)) }
        if options.eventsPerDevice == 0 || finishedDevices == devices.count { finishedDevices = devices.count; startConvergence() }
        do {
            while !isFinished, let next = queue.pop() {
                if case .faults = phase, next.time - Simulator.start.millisecondsSince1970 > Simulator.faultPhaseLimit {
                    throw SimulationError("the fault phase ran past \(Simulator.faultPhaseLimit / 3_600_000) virtual hours without the devices finishing their calls")
                }
                world.move(to: next.time)
                counters.now = next.time - Simulator.start.millisecondsSince1970
                try beforeEvent?(next.event)
                clock.enter(RunTimes.Part(of: next.event))
                try handle(next.event)
                if fleet.keeper.isOver {
                    clock.enter(.sleeps)
                    try fleet.keeper.enforce(settle: settle)
                }
            }
            clock.enter(.calls)
            try settleAll()
            if fleet.keeper.sleepsArePending {
                clock.enter(.sleeps)
                try fleet.keeper.finishSleeps(waiting: true)
            }
            clock.enter(.cloud)
            try cloudHost.settleRestoreChecks()
            cloudHost.discardPendingSnapshot()
            clock.enter(.other)
            fleet.keeper.measureAwake()
        } catch let error as SimulationError {
            throw error
        } catch {
            throw SimulationError("the simulation stopped at virtual time \(world.now()): \(error)")
        }
        progress?(.checking)
        clock.enter(.checks)
        let checks = checkInvariants()
        let converged = checks.first { $0.name == "converged" }?.passed ?? false
        let times = clock.finish(lane: lane?.busySeconds ?? 0)
        let wall = ContinuousClock.now - wallStart
        return SimulationReport(simulator: self, invariants: checks, converged: converged, wall: wall, times: times)
    }

    /// The oracle's checks against the stores as they are now (`run` makes
    /// them at the end; tests make them again after tampering with a store).
    public func checkInvariants() -> [InvariantResult] {
        let converged: Bool
        if case .done(let value) = phase { converged = value } else { converged = false }
        switch gatherEvidence(converged: converged) {
        case .success(let run):
            lastRun = run
            return run.results
        case .failure(let error):
            lastRun = nil
            return [InvariantResult(name: Invariant.converged.name, passed: converged,
                                    detail: converged ? "quiet after the faults ended" : Invariant.notConverged),
                    InvariantResult(name: "cloud-readable", passed: false, detail: "the cloud store cannot be opened: \(error)")]
        }
    }

    /// One backup in this many (`SimulationOptions.backupFleet`).
    var backupSpacing: Int64 { Int64(max(1, devices.count / options.backupFleet)) }

    /// When a device's first backup is due: 5 to 60 virtual seconds in,
    /// with only the upper end stretched past `backupFleet` devices. Were
    /// the lower end stretched too, no device of a large fleet would back
    /// up before the run ends (at 100,000 devices on a day, the earliest
    /// would be 100 virtual hours in); this way the first backups spread
    /// from the start, about as many an hour as a fleet of `backupFleet`
    /// takes.
    private func firstBackupDelay() -> Int64 {
        timingRandom.between(5_000, 60_000 * backupSpacing) * dayStretch
    }

    /// A guard against a workload that never ends: far beyond any run's need.
    static let faultPhaseLimit: Int64 = 30 * 24 * 3_600_000
    static let cloudSnapshotInterval: Int64 = 30_000
    /// How much further apart a day's backups, cloud snapshots and hostile
    /// frames are than a busy run's, and how much rarer its faults are per
    /// hour: a busy run of the default 60 calls a device lasts about four
    /// virtual minutes, a day 24 hours, 360 times as long. So a day takes
    /// about as many of each as a busy run of the same fleet.
    var dayStretch: Int64 { options.workload == .day ? 360 : 1 }
    var cloudSnapshotInterval: Int64 { Simulator.cloudSnapshotInterval * dayStretch }
    /// A cloud snapshot is the cloud's backup this long after its copy was
    /// taken: the time its file takes to write. The lane writes it meanwhile,
    /// and must be done before the loop needs it even where virtual time runs
    /// fastest, near the end of a large run: 15 virtual seconds there still
    /// take longer than writing the file.
    static let cloudSnapshotWriteTime: Int64 = 15_000
    static let requestTimeout: Int64 = 4_000

    private var isFinished: Bool {
        if case .done = phase { return true }
        return false
    }

    var convergenceStart: Int64? {
        if case .converging(let since) = phase { return since }
        return nil
    }
    private(set) var convergenceMilliseconds: Int64 = 0
    var drill: DrillState?
    /// What the last check read and made of it: the digest takes each
    /// device's verified journal from it, a drill its message counts.
    var lastRun: FinishedRun?

    private func handle(_ event: Event) throws {
        switch event {
        case .userAction(let number):
            try userAction(devices[number])
        case .syncTimer(let number):
            // On a day, a timer moved since it was set is not the device's.
            if devices[number].day != nil && devices[number].nextSyncTimer != world.milliseconds { return }
            try settle(devices[number])
            try syncTimer(devices[number])
        case .sessionWake(let number, let session):
            let device = devices[number]
            try settle(device)
            if device.session != nil, device.sessionNumber == session, device.inFlight == nil, device.takenReply == nil {
                try drive(device)
            }
        case .toCloud(let from, let request, let bytes):
            try deliverToCloud(from: from, request: request, bytes: bytes)
        case .toDevice(let number, let request, let bytes):
            let device = devices[number]
            try settle(device)
            guard device.inFlight == request, let session = device.session else { return }
            device.inFlight = nil
            try takeReply(device, bytes: bytes, session: session)
        case .replyTaken(let number, let token):
            let device = devices[number]
            try settle(device)
            guard let taken = device.takenReply, taken.token == token else { return }
            device.takenReply = nil
            for mark in taken.marks { counters.mark(mark) }
            findings += taken.findings
            counters.epochReuses += taken.epochReuses
            counters.votesRestated += taken.votesRestated
            if drill != nil { try drillCaughtUp() }
            device.session = taken.session
            try act(device, on: taken.action)
        case .timeout(let number, let request):
            let device = devices[number]
            try settle(device)
            guard device.inFlight == request, var session = device.session else { return }
            device.inFlight = nil
            let now = device.clock.now()
            let action = try device.store.perform(session.failed(reason: "no reply within \(Simulator.requestTimeout) ms", now: now),
                                                  in: &session, now: now)
            device.session = session
            try act(device, on: action)
        case .chaos:
            if case .faults = phase {
                try chaos()
                queue.schedule(.chaos, at: world.milliseconds + 1_000)
            }
        case .heal(let id):
            network.heal(id)
        case .cloudUp(let restore, let incarnation):
            if cloud == nil && incarnation == cloudHost.incarnation {
                if restore { try settleAll() }
                try bringCloudUp(restore: restore)
            }
        case .cloudSnapshot:
            try takeCloudSnapshot()
            queue.schedule(.cloudSnapshot, at: world.milliseconds + cloudSnapshotInterval)
        case .cloudSnapshotWritten:
            try cloudHost.finishSnapshot()
            counters.record(RunEvent.cloudSnapshot)
        case .deviceBackup(let number):
            if case .faults = phase {
                try settle(devices[number])
                try takeBackup(devices[number])
                queue.schedule(.deviceBackup(number), at: world.milliseconds + timingRandom.between(20_000, 90_000) * backupSpacing * dayStretch)
            }
        case .hostile:
            if case .faults = phase {
                hostileFrame()
                queue.schedule(.hostile, at: world.milliseconds + timingRandom.between(5_000, 30_000) * dayStretch)
            }
        case .sample:
            try sample()
            // A day's timeline is sampled every ten virtual minutes.
            queue.schedule(.sample, at: world.milliseconds + (options.workload == .day ? 600_000 : 10_000))
        case .convergenceCheck:
            try convergenceCheck()
        case .drillBackup:
            try drillBackup()
        case .drillDestroy:
            try drillDestroy()
        case .drillRestore:
            try drillRestore()
        }
    }

    // MARK: - Devices

    /// The user acts: one to `largestBurst` calls at one instant, as an app
    /// answers a tap with several calls. The scripted calls come first.
    private func userAction(_ device: SimDevice) throws {
        try settle(device)
        if let day = device.day, device.actionsLeftInVisit == 0 {
            // A visit begins.
            guard device.nextVisit < day.actions.count else { return }
            device.actionsLeftInVisit = day.actions[device.nextVisit]
            device.nextVisit += 1
        }
        let wanted = 1 + timingRandom.below(Simulator.largestBurst)
        let scripted = Array(device.scripted.prefix(wanted))
        device.scripted.removeFirst(scripted.count)
        let left = options.eventsPerDevice - device.workloadCalls - scripted.count
        let drawn = max(0, min(wanted - scripted.count, left))
        let calls = scripted.count + drawn
        guard calls > 0 else { return }
        // The user found an entry by searching for its title first.
        let searching = device.number % searchingStride == 0
        let catalogue = self.catalogue
        try handOff(device) { device in
            device.takeTurn(scripted: scripted, drawn: drawn, searching: searching, catalogue: catalogue)
        }
        counters.appCalls += calls
        device.workloadCalls += calls
        func gap() -> Int64 { timingRandom.between(Simulator.actionGap.lowerBound, Simulator.actionGap.upperBound) }
        if let day = device.day {
            progress?(.day(virtualSeconds: Int((world.milliseconds - Simulator.start.millisecondsSince1970) / 1_000)))
            device.actionsLeftInVisit -= 1
            let capped = device.workloadCalls >= options.eventsPerDevice && device.scripted.isEmpty
            if !capped && device.actionsLeftInVisit > 0 {
                queue.schedule(.userAction(device.number), at: world.milliseconds + gap())
            } else if !capped && device.nextVisit < day.starts.count {
                device.actionsLeftInVisit = 0
                queue.schedule(.userAction(device.number), at: max(Simulator.start.millisecondsSince1970 + day.starts[device.nextVisit],
                                                                   world.milliseconds + gap()))
            } else {
                device.actionsLeftInVisit = 0
                device.nextVisit = day.starts.count
                finishDevice()
            }
            return
        }
        progress?(.calls(done: counters.appCalls, of: options.devices * options.eventsPerDevice))
        if device.workloadCalls >= options.eventsPerDevice && device.scripted.isEmpty {
            finishDevice()
        } else {
            queue.schedule(.userAction(device.number), at: world.milliseconds + gap())
        }
    }

    private func finishDevice() {
        finishedDevices += 1
        if finishedDevices == devices.count { startConvergence() }
    }

    /// A user's actions are 1 to 7 calls each, 2 to 22 virtual seconds apart:
    /// a call every 3 s on average. A device's calls in a row run on memory
    /// still in cache, so a run takes less CPU than with one call per action.
    static let largestBurst = 7
    static let actionGap: ClosedRange<Int64> = 2_000...22_000
    static let meanCallGap = Double(actionGap.lowerBound + actionGap.upperBound) / Double(1 + largestBurst)

    /// One device in this many searches before it engages
    /// (`SimulationOptions.searchStride` and `searchingDevices`).
    var searchingStride: Int { max(options.searchStride, devices.count / options.searchingDevices) }

    // MARK: - The call lane

    /// Runs `work`, which touches only `device`, where the device's own
    /// work runs (`Fleet.handOff`), and records what it left if it ran here.
    ///
    /// With the lane, a sleeping store is taken out of its sleep here and
    /// opened before `work`, where `work` runs: most of the wake's time
    /// (inflating, opening) leaves the loop.
    func handOff(_ device: SimDevice, _ work: @escaping (SimDevice) -> SimDevice.Turn) throws(SimulationError) {
        var waking: SimDevice.Waking?
        if fleet.lane == nil {
            _ = try device.store
        } else if !device.isAwake {
            let part = clock.enter(.wakes)
            waking = try device.beginWake()
            clock.enter(part)
        }
        device.referenced = true
        let turn = fleet.handOff(device, now: world.milliseconds) { [waking] device in
            if let waking {
                do throws(SimulationError) {
                    try device.finishWake(waking)
                } catch {
                    return SimDevice.Turn(failure: error)
                }
            }
            return work(device)
        }
        if let turn { try record(turn) }
    }

    /// Makes sure `device`'s work on the lane (if any) has run and records
    /// what it left (`Fleet.settle`): the event loop calls this before it
    /// reads or changes anything of the device's. Throws what stopped the call.
    func settle(_ device: SimDevice) throws(SimulationError) {
        device.referenced = true
        // The device's work on the lane, run here or waited for: charged to calls.
        let part = device.laneJob == nil ? nil : clock.enter(.calls)
        defer { if let part { clock.enter(part) } }
        if let turn = fleet.settle(device) { try record(turn) }
    }

    private func record(_ turn: SimDevice.Turn) throws(SimulationError) {
        counters.searches += turn.searches
        findings += turn.findings
        if let failure = turn.failure { throw failure }
    }

    /// `settle` for every device, in the order of their numbers, then waits
    /// for the lane's other jobs. Settling first takes back every call the
    /// lane has not begun: when the lane is busy with a long job (writing a
    /// cloud snapshot or a device backup), the loop runs the calls queued
    /// behind it instead of waiting for it to reach them.
    func settleAll() throws(SimulationError) {
        for device in devices { try settle(device) }
        fleet.waitForLane()
    }

    /// A device batches its uploads: it syncs every 10 to 30 virtual seconds
    /// (about seven calls apart), as a phone's uploader would rather than one
    /// frame per call; converging, every 1 to 2 seconds until quiet.
    private func syncTimer(_ device: SimDevice) throws {
        let now = world.milliseconds
        let converging = convergenceStart != nil
        if let day = device.day, !converging {
            return try daySyncTimer(device, day: day)
        }
        scheduleSyncTimer(device, at: now + (converging ? timingRandom.between(1_000, 2_000)
                                                        : timingRandom.between(10_000, 30_000)))
        guard device.session == nil, now >= device.offlineUntil else { return }
        let status = try device.syncStatus()
        device.lastPending = status.pending
        // Converging, a device syncs until it has nothing to send and has
        // heard the cloud since its last news (`cloudNews`: a content request
        // may be waiting for it). Otherwise it probes once a minute.
        let stale = try converging ? device.heardCloudAt != cloudNews() : now >= device.nextProbe
        guard status.pending > 0 || stale else { return }
        device.nextProbe = now + 60_000
        try beginSync(device)
    }

    /// A device's next sync timer; on a day, the one before it no longer counts.
    private func scheduleSyncTimer(_ device: SimDevice, at time: Int64) {
        device.nextSyncTimer = time
        queue.schedule(.syncTimer(device.number), at: time)
    }

    /// On a day, a device syncs as a phone's uploader would: every 10 to
    /// 30 virtual seconds while its user is in the app, a session runs or
    /// anything waits to be sent; otherwise at its user's next visit, with
    /// a background refresh for the cloud's news between
    /// (`DayPlan.firstRefresh`, then every six hours).
    /// An idle device's store is not touched until then (its sync status is
    /// kept while it sleeps): a probe's reply is written to the store.
    private func daySyncTimer(_ device: SimDevice, day: DayPlan) throws {
        let now = world.milliseconds
        var pending = device.lastPending
        if device.session == nil, now >= device.offlineUntil {
            pending = try device.syncStatus().pending
            device.lastPending = pending
            if pending > 0 || now >= device.nextProbe {
                device.nextProbe = now + DayPlan.refreshInterval
                try beginSync(device)
            }
        }
        let soon = now + timingRandom.between(10_000, 30_000)
        if device.session != nil || device.actionsLeftInVisit > 0 || pending > 0 || now < device.offlineUntil {
            return scheduleSyncTimer(device, at: max(soon, device.offlineUntil))
        }
        var next = device.nextProbe
        if device.nextVisit < day.starts.count {
            next = min(next, Simulator.start.millisecondsSince1970 + day.starts[device.nextVisit] + 10_000)
        }
        scheduleSyncTimer(device, at: max(soon, next))
    }

    /// Begins a sync session on `device` and takes its first step.
    private func beginSync(_ device: SimDevice) throws {
        device.sessionNumber += 1
        device.session = try device.store.beginSync(configuration: UploaderConfiguration(
            maximumMessages: 200, initialBackoffMilliseconds: 200, maximumBackoffMilliseconds: 10_000,
            jitterSeed: device.random.next()), maximumAttempts: 6)
        device.sessionStartedAt = try cloudNews()
        try drive(device)
    }

    /// Steps the device's session until it sends, waits or finishes.
    private func drive(_ device: SimDevice) throws {
        guard var session = device.session else { return }
        let now = device.clock.now()
        let action = try device.store.perform(session.next(now: now), in: &session, now: now)
        device.session = session
        try act(device, on: action)
    }

    /// Does the driver's part of `action`: sends the frame, waits, or ends
    /// the session.
    private func act(_ device: SimDevice, on action: SyncAction) throws {
        guard device.session != nil else { return }
        switch action {
        case .send(let frame):
            nextRequest += 1
            device.inFlight = nextRequest
            if !frame.isProbe && frame.epoch < device.epoch { counters.mark(.resendAfterRestore) }
            send(from: device, request: nextRequest, bytes: frame.encoded)
            queue.schedule(.timeout(device.number, request: nextRequest), at: world.milliseconds + Simulator.requestTimeout)
        case .wait(let until):
            queue.schedule(.sessionWake(device.number, session: device.sessionNumber),
                           at: max(device.clock.worldTime(of: until), world.milliseconds + 1))
        case .finished(let report):
            counters.absorb(report)
            if let status = report.status { device.lastPending = status.pending }
            if report.failure == nil { device.heardCloudAt = device.sessionStartedAt }
            device.session = nil
        case .readOutbox, .persist:
            // `DeviceStore.perform` carries these out before it returns.
            throw SimulationError("device \(device.number)'s store handed back its own sync action \(action)")
        }
    }

    /// A device takes the cloud's reply this long after it arrives: its
    /// store records the ack (or rewinds, or makes lost messages again from
    /// its journal) and builds the next frame, which leaves then. That work
    /// touches only the device, so it runs where the device's calls run
    /// (`handOff`), and the loop goes on meanwhile: on the loop it was work
    /// the lane could have done, most of all near the end of a run, when few
    /// calls are left.
    static let replyProcessing: Int64 = 10

    /// Hands the device's half of taking a reply (`SimDevice.take(reply:)`)
    /// to where its calls run, and acts on what it made `replyProcessing`
    /// later (`.replyTaken`), unless the session is dropped meanwhile.
    private func takeReply(_ device: SimDevice, bytes: [UInt8], session: SyncRun) throws(SimulationError) {
        device.replyTokens &+= 1
        let token = device.replyTokens
        let catalogue = self.catalogue
        try handOff(device) { device in
            do {
                try device.take(reply: bytes, session: session, token: token, catalogue: catalogue)
                return SimDevice.Turn()
            } catch {
                return SimDevice.Turn(failure: SimulationError("device \(device.number) could not take the cloud's reply: \(error)"))
            }
        }
        queue.schedule(.replyTaken(device.number, token: token), at: world.milliseconds + Simulator.replyProcessing)
    }

    // MARK: - Convergence

    private func startConvergence() {
        let now = world.milliseconds
        phase = .converging(since: now)
        network.endFaults()
        for device in devices {
            device.offlineUntil = 0
            // An idle device of a day may have its next timer hours away.
            if device.day != nil { scheduleSyncTimer(device, at: now + timingRandom.between(1_000, 2_000)) }
        }
        // A restore begun when the cloud went down is carried through.
        if cloud == nil {
            queue.schedule(.cloudUp(restore: cloudHost.pendingRestore != nil, incarnation: cloudHost.incarnation), at: now)
        }
        queue.schedule(.convergenceCheck, at: now + 5_000)
    }

    /// Quiet: no session running, nothing pending on any device, and every
    /// device has finished a sync that began after the cloud last took
    /// anything new (so every content request was heard and answered).
    ///
    /// What is pending is read from each store, not taken from its last sync:
    /// calls made after that sync may have left messages (`syncTimer`).
    private func convergenceCheck() throws {
        guard let since = convergenceStart else { return }
        let now = world.milliseconds
        progress?(.converging(virtualSeconds: Int((now - since) / 1000)))
        let news = try cloudNews()
        let quiet = try cloud != nil && devices.allSatisfy { device throws in
            guard device.session == nil, device.heardCloudAt == news else { return false }
            try settle(device)
            device.lastPending = try device.syncStatus().pending
            return device.lastPending == 0
        }
        if quiet {
            convergenceMilliseconds = now - since
            phase = .done(converged: true)
        } else if now - since > Simulator.convergenceLimit {
            convergenceMilliseconds = now - since
            phase = .done(converged: false)
        } else {
            queue.schedule(.convergenceCheck, at: now + 1_000)
        }
    }

    static let convergenceLimit: Int64 = 3_600_000

    private func sample() throws {
        let backlog = devices.reduce(0) { $0 + $1.lastPending }
        let publicItems = try cloud?.publicItemCount()
        timeline.append(TimelineSample(at: world.milliseconds - Simulator.start.millisecondsSince1970, backlog: backlog,
                                       publicItems: publicItems ?? timeline.last?.publicItems ?? 0,
                                       cloudUp: cloud != nil))
    }
}
