import DeviceStore
import Foundation
import IndexModel
import SyncWire

/// One simulated device: a real `DeviceStore`, the app and user driving it,
/// the oracle's model of what its store must hold, and its sync state.
final class SimDevice {
    /// A backup the device took, with the oracle's model at that moment.
    /// Its file may be written on the call lane: what the store said about
    /// it is there once the device is settled.
    final class Backup: @unchecked Sendable {
        let path: String
        let model: StoreModel
        let epoch: Epoch
        /// Calls the device had made.
        let calls: Int
        let takenAt: Int64
        /// The app's position in each index (`AppTruth.positions`): the
        /// client states the backup holds.
        let positions: [String: Int]
        /// The store's journal head and outbox head in the backup.
        private(set) var journalHead = Seq.none
        private(set) var outboxHead = OutboxPosition.start

        init(path: String, model: StoreModel, epoch: Epoch, calls: Int, takenAt: Int64, positions: [String: Int]) {
            self.path = path
            self.positions = positions
            self.model = model
            self.epoch = epoch
            self.calls = calls
            self.takenAt = takenAt
        }

        /// Writes the backup of `store`, which must be the device's store as
        /// the oracle's model describes it, then purges the deleted items'
        /// and activities' content the backup made durable
        /// (`DeviceStore.purge`), as a privacy-minded app would after every
        /// backup.
        func write(_ store: DeviceStore) throws(DeviceStoreError) -> PurgeReport {
            let status = try store.syncStatus()
            journalHead = try store.snapshot(to: path).headSeq
            outboxHead = status.head
            return try store.purge()
        }
    }

    let number: Int
    let clock: DeviceClock
    let random: SeededRandom
    /// The store's name, the same through sleeps and restores.
    let name: DeviceID
    /// What the store is opened with: this device's clock and randomness.
    let storeOptions: StoreOptions
    /// The keeper of which stores are awake (`StoreKeeper`).
    unowned let keeper: StoreKeeper
    /// The store while it is awake; nil while it sleeps.
    private var awakeStore: DeviceStore?
    /// The store while it sleeps, and its sync status when it went to sleep
    /// (which a sleeping store cannot change).
    private var sleepingStore: (store: Sleeping, status: SyncStatus)?

    /// How a store sleeps. An in-memory store hibernates: its database is
    /// kept compressed, in the keeper's file of images (`SleepingImages`), and
    /// its connection goes (`DeviceStore.hibernate`). A
    /// store file keeps its connection, and with it its open files, and
    /// lets go of its statements and page cache: closed and opened again,
    /// its file would be laid out otherwise afterwards (its backups' bytes,
    /// and so the digest, would change), though it holds the same.
    /// An in-memory store not made yet is `unborn`: its identity drawn and
    /// its device key given, it is made when the device is first touched,
    /// as it would have been made at the start (`DeviceStore.NewIdentity`).
    fileprivate enum Sleeping {
        case hibernated(SleepingStore, SleepingImages.Place)
        case released(DeviceStore)
        case unborn(DeviceStore.NewIdentity, key: [UInt8])
    }
    /// A sleep handed to the keeper's lane (`sleep()`), until the loop
    /// finishes it (`finishSleep`): its job there (nil: it ran here) and
    /// what it makes.
    private var pendingSleep: (job: CallLane.Job?, hibernation: Hibernation)?
    /// Where the image the awake store woke from lies: put to sleep with
    /// the pages it woke with, the store sleeps on that image again.
    private var wokenPlace: SleepingImages.Place?
    /// The store was used since the keeper's clock hand last passed it.
    /// Set and read on the event loop only.
    var referenced = true
    /// What the keeper counts this store at while it is awake.
    var countedBytes = 0
    var location: StoreLocation
    var workload: Workload
    var truth = AppTruth()
    var model = StoreModel()
    /// Whether the store's last purge left a deleted public activity for
    /// the cloud's backup to hold what was sent before its deletion: the
    /// next ack that moves the durable watermark purges again.
    var purgeWaitsForCloud = false
    /// The payloads any incarnation of the store purged, by SHA-256: a
    /// restore from a backup that holds them deletes their items again.
    var purged = Set<ChainHash>()
    /// The epoch the store writes in now.
    var epoch = Epoch.first
    /// Per epoch, the messages each call implied (one group per call).
    var expected: [Epoch: MessageGroups] = [.first: []]
    var backups: [Backup] = []
    var backupsTaken = 0
    /// Per ended epoch, the outbox position the device held when it was
    /// restored from a backup of that epoch: the cloud must end up with at
    /// least this much of the epoch (the restored device resends it).
    var mustHold: [Epoch: OutboxPosition] = [:]
    /// The highest durable watermark the device was ever told, per epoch.
    var durableSeen: [Epoch: OutboxSeq] = [:]

    /// Every call made on the store (the workload's and the app's reindexing).
    var calls = 0
    /// The workload's calls: the device is done when these reach the run's events per device.
    var workloadCalls = 0
    var scripted: [AppOperation] = []
    /// Under `WorkloadShape.day`: the user's day, the next visit of it,
    /// the actions left of the visit under way, and when the device's next
    /// sync timer is due (an earlier one set for another time is dropped).
    var day: DayPlan?
    var nextVisit = 0
    var actionsLeftInVisit = 0
    var nextSyncTimer: Int64 = 0
    /// The sync run under way, if any. Most devices have none most of the
    /// time, and a run is about 600 bytes: it is held out of line.
    var session: SyncRun? {
        get { sessionBox?.value }
        set { OutOfLine.assign(newValue, to: &sessionBox) }
    }
    private var sessionBox: OutOfLine<SyncRun>?
    var sessionNumber: UInt64 = 0
    var inFlight: UInt64?
    var offlineUntil: Int64 = 0
    var nextProbe: Int64 = 0
    var lastPending = 0 {
        didSet { maxPending = max(maxPending, lastPending) }
    }
    var maxPending = 0
    /// The cloud's news (`Simulator.cloudNews`) when the device's last
    /// successful sync began, and when the running one began.
    var heardCloudAt: CloudNews?
    var sessionStartedAt: CloudNews?
    var restores = 0
    /// Against a remote cloud: the furthest position an ack to this device named.
    var remoteHead: OutboxPosition?
    /// This device's call handed to the call lane, and what that call left
    /// for the event loop, until the loop settles the device.
    var laneJob: CallLane.Job?
    var turn: Turn?
    /// A reply the device took where its calls run, until the loop acts on
    /// it or drops it with the session (`Simulator.takeReply`); written
    /// there, read once the device is settled.
    var takenReply: TakenReply? {
        get { takenReplyBox?.value }
        set { OutOfLine.assign(newValue, to: &takenReplyBox) }
    }
    private var takenReplyBox: OutOfLine<TakenReply>?
    /// The loop's own: the token of the last reply handed over, so that the
    /// loop acts on a taken reply only at its own `replyTaken` event.
    var replyTokens: UInt64 = 0

    private init(number: Int, clock: DeviceClock, random: SeededRandom, name: DeviceID, location: StoreLocation, workload: Workload,
                 options: StoreOptions, keeper: StoreKeeper) {
        self.number = number
        self.clock = clock
        self.random = random
        self.name = name
        self.storeOptions = options
        self.keeper = keeper
        self.location = location
        self.workload = workload
    }

    /// A device whose store is open, `pages` bytes of database.
    convenience init(number: Int, clock: DeviceClock, random: SeededRandom, store: DeviceStore, location: StoreLocation,
                     workload: Workload, options: StoreOptions, keeper: StoreKeeper, pages: Int) {
        self.init(number: number, clock: clock, random: random, name: store.deviceID, location: location, workload: workload,
                  options: options, keeper: keeper)
        awakeStore = store
        keeper.noteAwake(self, pages: pages)
    }

    /// A device whose in-memory store is made when it is first touched:
    /// `identity` drawn from `random` and `key` given at enrolment, and
    /// `status` what a new store's sync status is.
    convenience init(number: Int, clock: DeviceClock, random: SeededRandom, identity: DeviceStore.NewIdentity, key: [UInt8],
                     status: SyncStatus, workload: Workload, options: StoreOptions, keeper: StoreKeeper) {
        self.init(number: number, clock: clock, random: random, name: identity.deviceID, location: .memory, workload: workload,
                  options: options, keeper: keeper)
        sleepingStore = (.unborn(identity, key: key), status)
    }

    /// The device's store, woken first if it sleeps. The event loop wakes a
    /// device before it hands the device's work to the call lane, and puts
    /// one to sleep only once it is settled, so on the lane it is awake.
    var store: DeviceStore {
        get throws(SimulationError) {
            if let awakeStore { return awakeStore }
            return try wake()
        }
    }

    /// Puts the store `open` gives in place of the one the device had (a
    /// crash opens it again, a restore makes a new one), opened only once
    /// the old one is let go of. Were the old connection still open, the
    /// new one's database file would stay open after the old closed: SQLite's
    /// unix VFS does not close a descriptor of a file another connection of
    /// the process holds locks on (POSIX locks belong to the process, and
    /// closing any descriptor of the file drops them all), so each crash
    /// would keep one more file open, past what `OpenFiles` allows for.
    func replace(opening open: () throws -> DeviceStore) throws {
        if awakeStore == nil { _ = try wake() }
        awakeStore = nil
        if let wokenPlace {
            keeper.images.release(wokenPlace)
            self.wokenPlace = nil
        }
        awakeStore = try open()
    }

    /// Keeps the app's operations back to the oldest client state a
    /// restore from one of the backups brings back (`AppTruth.keep(from:)`).
    /// Called whenever `backups` changes.
    func keepTruthForBackups() {
        var oldest: [String: Int] = [:]
        for backup in backups {
            for (index, position) in backup.positions { oldest[index] = min(oldest[index] ?? position, position) }
        }
        truth.keep(from: oldest)
    }

    /// The store's sync status; a sleeping store's is the one it went to sleep with.
    func syncStatus() throws -> SyncStatus {
        if let sleepingStore { return sleepingStore.status }
        if let (_, hibernation) = pendingSleep { return hibernation.status }
        return try store.syncStatus()
    }

    /// The store to read from on any thread once the run is over: the
    /// awake store, or a sleeping one woken for the reader alone (the
    /// device keeps sleeping).
    func storeForReading() throws -> DeviceStore {
        if let awakeStore { return awakeStore }
        guard pendingSleep == nil else { throw SimulationError("device \(number)'s store is still going to sleep") }
        switch sleepingStore?.store {
        case .hibernated(let sleeping, let place):
            return try DeviceStore(waking: sleeping.unparked(image: keeper.images.read(place)), options: storeOptions)
        case .released(let store): return store
        case .unborn(let identity, let key): return try SimDevice.make(identity, key: key, options: storeOptions)
        case nil: throw SimulationError("device \(number) has no store")
        }
    }

    /// Makes an unborn store, as it would have been made at the start.
    fileprivate static func make(_ identity: DeviceStore.NewIdentity, key: [UInt8], options: StoreOptions) throws(DeviceStoreError)
        -> DeviceStore {
        let store = try DeviceStore(new: identity, options: options)
        try store.setDeviceKey(key)
        return store
    }

    private func wake() throws(SimulationError) -> DeviceStore {
        // A pending sleep is finished first, so that its time is charged
        // to sleeping, not to this wake (`beginWake` then finds none).
        try finishSleep()
        let started = ContinuousClock.now
        guard let waking = try beginWake() else { throw SimulationError("device \(number) has no store") }
        let woken = try waking.open()
        awakeStore = woken
        keeper.noteWoken(seconds: (ContinuousClock.now - started).seconds)
        return woken
    }

    /// A sleeping store on its way back: taken out of its sleep on the
    /// loop (`beginWake`), opened where the device's work runs
    /// (`finishWake`), which for a hibernated store is most of a wake.
    struct Waking: @unchecked Sendable {
        fileprivate let store: Sleeping
        fileprivate let options: StoreOptions
        fileprivate let number: Int

        fileprivate func open() throws(SimulationError) -> DeviceStore {
            switch store {
            case .hibernated(let sleeping, _):
                do {
                    return try DeviceStore(waking: sleeping, options: options, keepingImage: false)
                } catch {
                    throw SimulationError("device \(number)'s store could not be woken: \(error)")
                }
            case .released(let store):
                return store
            case .unborn(let identity, let key):
                do {
                    return try SimDevice.make(identity, key: key, options: options)
                } catch {
                    throw SimulationError("device \(number)'s store could not be made: \(error)")
                }
            }
        }
    }

    /// Takes the store out of its sleep (finishing the sleep first, if it
    /// is going to sleep on the lane): a hibernated store's image is read
    /// from the keeper's file, where it stays while the store is awake, and
    /// the keeper counts the store awake from here. The event loop's to
    /// call; nil when the store is awake or the device has none.
    func beginWake() throws(SimulationError) -> Waking? {
        guard awakeStore == nil else { return nil }
        try finishSleep()
        guard let sleepingStore else { return nil }
        var taken = sleepingStore.store
        switch taken {
        case .hibernated(let sleeping, let place):
            taken = .hibernated(sleeping.unparked(image: try keeper.images.read(place)), place)
            wokenPlace = place
            keeper.noteWaking(self, pages: sleeping.imageBytes, held: sleeping.heldBytes)
        case .unborn:
            keeper.noteBorn(self, pages: DeviceStore.newStoreBytes)
        case .released:
            keeper.noteWaking(self, pages: 0, held: 0)
        }
        self.sleepingStore = nil
        referenced = true
        return Waking(store: taken, options: storeOptions, number: number)
    }

    /// Opens the store `waking` brings back: where the device's work runs,
    /// before that work, on a device the loop has handed over.
    func finishWake(_ waking: Waking) throws(SimulationError) {
        let started = ContinuousClock.now
        awakeStore = try waking.open()
        keeper.noteWokenOnLane(seconds: (ContinuousClock.now - started).seconds)
    }

    /// Puts the store to sleep and returns the bytes it holds asleep. The
    /// keeper's to call, on a settled device. An in-memory store hibernates
    /// (compresses its pages) where a device's work runs: on the keeper's
    /// lane when it has room, while the loop goes on; the loop counts the
    /// store asleep at once, with what it will hold then, and finishes the
    /// sleep later (`finishSleep`).
    func sleep() throws(SimulationError) -> Int {
        guard let awakeStore else { return 0 }
        do {
            let status = try awakeStore.syncStatus()
            self.awakeStore = nil
            if case .file = location {
                awakeStore.releaseStatements()
                sleepingStore = (.released(awakeStore), status)
                return 0
            }
            let held = awakeStore.parkedBytes
            let hibernation = Hibernation(awakeStore, status: status)
            if let lane = keeper.lane, let job = lane.handIfRoom({ hibernation.run() }) {
                pendingSleep = (job, hibernation)
                keeper.notePending(self)
            } else {
                hibernation.run()
                pendingSleep = (nil, hibernation)
                try finishSleep()
            }
            return held
        } catch let error as SimulationError {
            throw error
        } catch {
            throw SimulationError("device \(number)'s store could not be put to sleep: \(error)")
        }
    }

    /// Whether the store is awake (not asleep, nor going to sleep).
    var isAwake: Bool { awakeStore != nil }

    /// Whether the store's hibernation on the lane (if any) has run.
    var sleepIsReady: Bool {
        guard let (job, _) = pendingSleep, let job, let lane = keeper.lane else { return true }
        return lane.isDone(job)
    }

    /// Finishes the store's sleep: waits for its hibernation on the lane
    /// (or runs it here if the lane has not begun it) and keeps its image
    /// in the keeper's file, or takes back the image it woke from. Nothing
    /// when no sleep is pending.
    func finishSleep() throws(SimulationError) {
        guard let (job, hibernation) = pendingSleep else { return }
        let started = ContinuousClock.now
        pendingSleep = nil
        if let job, let lane = keeper.lane { lane.settle(job) }
        let settled = ContinuousClock.now
        guard let result = hibernation.result else {
            throw SimulationError("device \(number)'s store went to sleep on the lane, and the lane did not run it")
        }
        let sleeping: SleepingStore
        do {
            sleeping = try result.get()
        } catch {
            throw SimulationError("device \(number)'s store could not be put to sleep: \(error)")
        }
        let place: SleepingImages.Place
        if sleeping.keptImage, let wokenPlace {
            place = wokenPlace
        } else {
            guard !sleeping.image.isEmpty else {
                throw SimulationError("device \(number)'s store went to sleep on an image the keeper does not hold")
            }
            if let wokenPlace { keeper.images.release(wokenPlace) }
            place = try keeper.images.write(sleeping.image)
        }
        wokenPlace = nil
        sleepingStore = (.hibernated(sleeping.parked(), place), hibernation.status)
        let now = ContinuousClock.now
        keeper.noteSlept(keptImage: sleeping.keptImage, hibernating: hibernation.seconds, finishing: (now - settled).seconds,
                         loop: (now - started).seconds)
    }

    /// What one of the user's turns left for the event loop: the searches
    /// made, what they found wrong, and the error that stopped the run.
    struct Turn {
        var searches = 0
        var findings: [String] = []
        var failure: SimulationError?
    }

    /// The user's next calls: `scripted`, then `drawn` of the workload's. A
    /// user of a searching device first searches for an entry it will
    /// engage. Stops at the first call that fails. Runs on the event loop or
    /// on the call lane; touches only this device.
    func takeTurn(scripted: [AppOperation], drawn: Int, searching: Bool, catalogue: Catalogue) -> Turn {
        var turn = Turn()
        for index in 0..<(scripted.count + drawn) {
            let operation = index < scripted.count
                ? scripted[index]
                : workload.next(now: clock.now(), model: model, truth: &truth, catalogue: catalogue)
            if searching, case .engage(let ref) = operation, let entry = catalogue.entry(url: ref) {
                do {
                    turn.findings += try search(for: entry, catalogue: catalogue)
                    turn.searches += 1
                } catch {
                    turn.failure = SimulationError("device \(number)'s search failed at \(clock.now()) on its clock: \(error)")
                    return turn
                }
            }
            do {
                try perform(operation, catalogue: catalogue)
            } catch {
                turn.failure = SimulationError("device \(number) refused the workload's \(operation.name) call: \(error)")
                return turn
            }
        }
        return turn
    }

    /// Searches the store for the title of catalogue `entry`, as the user
    /// would before engaging it, and checks the results against the oracle:
    /// nothing the app deleted comes back, and when the results are not cut
    /// at the limit, the device's live activity of the entry is among them.
    /// Reading changes nothing the run's digest covers. Returns what it
    /// found wrong.
    func search(for entry: Int, catalogue: Catalogue) throws -> [String] {
        let limit = 20
        let now = clock.now()
        let title = catalogue.entry(entry).title
        let results = try store.search(title, limit: limit)
        var findings: [String] = []
        var keys = Set<String>()
        for member in results.flatMap(\.members) {
            switch member {
            case .item(let index, let identifier):
                if !model.mayReturn(index: index, identifier: identifier) {
                    findings.append("device \(number)'s search returned item \(identifier) of \(index), which the app deleted")
                }
            case .activity(let key):
                keys.insert(key)
                if !model.mayReturn(activityKey: key) {
                    findings.append("device \(number)'s search returned activity \(key), which the app deleted")
                }
            }
        }
        if results.count < limit, let key = model.searchableActivity(of: entry, now: now), !keys.contains(key) {
            findings.append("device \(number)'s search for \"\(title)\" missed its activity \(key)")
        }
        return findings
    }

    /// Makes one call on the store and folds it into the oracle. The model
    /// is updated only when the store committed the call.
    func perform(_ operation: AppOperation, catalogue: Catalogue) throws {
        let now = clock.now()
        try store.perform(operation)
        calls += 1
        let messages = model.apply(operation, now: now, catalogue: catalogue)
        expected[epoch, default: []].append(messages)
    }
}

extension SimDevice {
    /// Splits an epoch's messages, one group per call, where the store moved
    /// its last messages (`moving`, in outbox order) to a new epoch: the
    /// groups that stay and those that move, a call that the move cut in two
    /// split the same way. Nil when `moving` is not the end of `groups`.
    static func split(_ groups: [[ExpectedMessage]], moving: [ExpectedMessage?])
        -> (kept: [[ExpectedMessage]], carried: [[ExpectedMessage]])? {
        let moved = moving.compactMap { $0 }
        guard moved.count == moving.count else { return nil }
        var cut = groups.count
        var whole = 0
        while cut > 0 && whole + groups[cut - 1].count <= moved.count {
            cut -= 1
            whole += groups[cut].count
        }
        var kept = Array(groups[..<cut])
        var carried = Array(groups[cut...])
        // The first moved messages are the last of the call the move cut.
        let partial = moved.count - whole
        if partial > 0 {
            guard var stays = kept.popLast() else { return nil }
            for message in moved[..<partial] {
                guard let index = stays.firstIndex(of: message) else { return nil }
                stays.remove(at: index)
            }
            kept.append(stays)
            carried.insert(Array(moved[..<partial]), at: 0)
        }
        var offset = partial
        for group in carried.dropFirst(partial > 0 ? 1 : 0) {
            guard moved[offset..<(offset + group.count)].sorted() == group.sorted() else { return nil }
            offset += group.count
        }
        return (kept, carried)
    }

    static let notTheLast = "are not the last messages its calls implied"
}

/// The app's side of reindexing in the simulator: it resumes each index from
/// the store's client state, through the same path as every other call.
struct SimReindexer: ReindexDelegate {
    let device: SimDevice
    let catalogue: Catalogue

    func reindexAll(index: String, in store: DeviceStore) throws {
        let state = try store.index(named: index).fetchLastClientState()
        for batch in device.truth.resume(index: index, from: state) {
            try device.perform(batch, catalogue: catalogue)
        }
    }

    func reindexItems(index: String, identifiers: [String], in store: DeviceStore) throws {
        let wanted = Set(identifiers)
        let items = (device.truth.items[index] ?? [:]).values.filter { wanted.contains($0.uniqueIdentifier) }
            .sorted { $0.uniqueIdentifier < $1.uniqueIdentifier }
        guard !items.isEmpty else { return }
        try device.perform(.index(index: index, items: items), catalogue: catalogue)
    }
}

/// A value a device holds now and then, kept on the heap so that a device
/// without one does not pay for its bytes (a pointer instead of hundreds).
/// Each box has one owner, which changes its value in place.
final class OutOfLine<Value> {
    var value: Value

    init(_ value: Value) {
        self.value = value
    }

    static func assign(_ value: Value?, to box: inout OutOfLine?) {
        guard let value else { return box = nil }
        if let box { box.value = value } else { box = OutOfLine(value) }
    }
}

/// Where the cloud stood when a device heard it: its incarnation and the
/// last content request it made (or, for a remote cloud, its log's length).
struct CloudNews: Hashable {
    var incarnation: Int
    var mark: Int64
}

/// A store hibernating where a device's work runs (`SimDevice.sleep()`):
/// the store until it has, then what it made and how long that took. Only
/// one thread runs it; the loop reads it once the lane's job is settled.
final class Hibernation: @unchecked Sendable {
    /// The sync status the store went to sleep with.
    let status: SyncStatus
    private var store: DeviceStore?
    private(set) var result: Result<SleepingStore, DeviceStoreError>?
    private(set) var seconds = 0.0

    init(_ store: DeviceStore, status: SyncStatus) {
        self.store = store
        self.status = status
    }

    /// Hibernates the store, and lets go of it: its pages go back as soon
    /// as it has slept, wherever that was.
    func run() {
        guard let store else { return }
        self.store = nil
        let started = ContinuousClock.now
        result = Result { () throws(DeviceStoreError) in try store.hibernate() }
        seconds = (ContinuousClock.now - started).seconds
    }
}
