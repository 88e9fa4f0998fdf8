import DeviceStore
import Foundation
import Synchronization

/// Which device stores are awake, and which sleep (`DeviceStore.hibernate`).
/// A run keeps its stores within a memory budget: awake stores count what
/// their database held when last measured plus what a store costs besides
/// (`awakeStoreBytes`), sleeping ones what they keep in memory besides
/// their compressed image, which lies in the keeper's file (`images`). Past
/// the budget, the least recently used awake stores go to sleep (by the
/// clock algorithm: a store used since the hand last passed it is passed
/// over once), and a sleeping store wakes when its device is next touched.
///
/// Sleeping never changes what a run does: a woken store holds what it
/// held, and its memory between sync runs comes with it. Only the event
/// loop's thread uses the keeper; a device is put to sleep only once settled
/// (`Simulator.settle`), so the call lane never finds its store asleep.
/// Only the loop reads or writes a device's `referenced`.
final class StoreKeeper {
    /// The bytes of memory the stores may hold, awake and asleep together.
    let budget: Int
    /// The sleeping stores' images.
    let images: SleepingImages
    /// The connections in-memory stores take for each transaction and give
    /// back after it (`StoreConnectionPool`).
    let connections = StoreConnectionPool()
    /// What hibernation did so far, the time of wakes on the lane included.
    var figures: HibernationFigures {
        var figures = tally
        figures.wakeSeconds += laneWakeSeconds.withLock { $0 }
        return figures
    }
    private var tally = HibernationFigures()
    /// The seconds of wakes finished on the lane (`SimDevice.finishWake`).
    private let laneWakeSeconds = Mutex<Double>(0)
    /// The run's part clock (`PartClock`): a wake's time is charged to
    /// waking, whatever part of the run woke the store.
    let clock: PartClock
    /// The awake devices, in the order the clock's hand passes them.
    private var ring: [SimDevice] = []
    private var hand = 0
    fileprivate var awakeBytes = 0
    private var sleepingBytes = 0

    /// What an awake in-memory store holds besides its pages: the store
    /// itself, what it remembers between sync runs, and the kernel's
    /// bookkeeping of its pages' memory. Its transactions run on the pool's
    /// connections (`StoreConnectionPool`), which hold the statements and
    /// the parsed schema, once for every store. Measured on the
    /// 10,000-device day, each store more awake cost the process about
    /// 66 KB, its pages (about 57 KB) included.
    static let awakeStoreBytes = 16 * 1024
    /// Never fewer awake than this, however small the budget: a store put
    /// to sleep on every event would only be woken again at the next.
    static let fewestAwake = 16

    /// Where stores hibernate while the loop goes on (`SimDevice.sleep()`);
    /// nil: on the loop.
    let lane: CallLane?
    /// The devices whose stores went to sleep on the lane, in that order,
    /// until their sleeps are finished (some may be already: a device
    /// touched finishes its own).
    private var pending: [SimDevice] = []
    private var pendingHead = 0

    init(budget: Int, lane: CallLane? = nil, clock: PartClock = PartClock(), images: SleepingImages = SleepingImages()) {
        self.budget = budget
        self.lane = lane
        self.clock = clock
        self.images = images
        tally.budget = budget
    }

    /// The budget when none is given: half of this machine's memory.
    static var defaultBudget: Int {
        let pages = sysconf(Int32(_SC_PHYS_PAGES)), size = sysconf(Int32(_SC_PAGESIZE))
        guard pages > 0, size > 0 else { return 4 << 30 }
        return pages.multipliedReportingOverflow(by: size).overflow ? Int.max / 2 : pages * size / 2
    }

    /// `device`'s store is awake now (new, woken or replaced), counted at
    /// `bytes` of pages.
    func noteAwake(_ device: SimDevice, pages bytes: Int) {
        let counted = bytes + StoreKeeper.awakeStoreBytes
        device.countedBytes = counted
        awakeBytes += counted
        ring.append(device)
        tally.mostAwake = max(tally.mostAwake, ring.count)
    }

    /// `device` is waking (`SimDevice.beginWake`), and what it held asleep
    /// (`held` bytes) goes; it is counted awake at `pages` from now.
    func noteWaking(_ device: SimDevice, pages: Int, held: Int) {
        sleepingBytes -= held
        tally.wakes += 1
        noteAwake(device, pages: pages)
    }

    /// `device`'s store is made (`SimDevice.beginWake` of an unborn store),
    /// counted awake at `pages` from now.
    func noteBorn(_ device: SimDevice, pages: Int) {
        tally.births += 1
        noteAwake(device, pages: pages)
    }

    /// A wake on the loop took `seconds`, charged to waking.
    func noteWoken(seconds: Double) {
        tally.wakeSeconds += seconds
        clock.move(seconds, to: .wakes)
    }

    /// A wake finished on the lane took `seconds`; any thread may say so.
    func noteWokenOnLane(seconds: Double) {
        laneWakeSeconds.withLock { $0 += seconds }
    }

    /// Never more awake than this, whatever the budget: each awake
    /// in-memory store reserves 512 MiB of address space for its pages
    /// (`PageBuffer`), and a process has 128 TiB of it, room for 262,144.
    /// Linux's limit of 65,530 memory mappings a process does not bound
    /// them: adjacent ranges merge into one mapping (70,000 ranges made 25).
    static let mostAwake = 200_000

    /// Whether the stores hold more than the budget, or more are awake
    /// than `mostAwake`, and one may still go to sleep.
    var isOver: Bool {
        ring.count > StoreKeeper.fewestAwake && (awakeBytes + sleepingBytes > budget || ring.count > StoreKeeper.mostAwake)
    }

    /// Puts stores to sleep, least recently used first, until the stores
    /// are within the budget. `settle` runs on each before it sleeps.
    /// First finishes the sleeps the lane has run.
    func enforce(settle: (SimDevice) throws(SimulationError) -> Void) throws(SimulationError) {
        try finishSleeps(waiting: false)
        var passed = 0
        while isOver && passed < 2 * ring.count + 1 {
            if hand >= ring.count { hand = 0 }
            let device = ring[hand]
            // A device used since the hand last passed it is passed over
            // once. One whose last call the lane may still be running is
            // settled when the hand next comes round, a lap later.
            if device.referenced {
                device.referenced = false
                // Used since last passed: it may have grown.
                if device.laneJob == nil { remeasure(device) }
                hand += 1
                passed += 1
                continue
            }
            try settle(device)
            let held = try device.sleep()
            tally.sleeps += 1
            awakeBytes -= device.countedBytes
            sleepingBytes += held
            tally.mostSleepingBytes = max(tally.mostSleepingBytes, sleepingBytes)
            ring.swapAt(hand, ring.count - 1)
            ring.removeLast()
        }
    }

    /// Most stores left going to sleep on the lane when the keeper next
    /// puts stores to sleep: each holds its pages until it has slept,
    /// outside the budget.
    static let mostPending = 256

    /// Whether a sleep handed to the lane may not be finished yet.
    var sleepsArePending: Bool { pendingHead < pending.count }

    /// `device`'s store went to sleep on the lane.
    func notePending(_ device: SimDevice) {
        pending.append(device)
    }

    /// A sleep finished (`SimDevice.finishSleep`): the store hibernated
    /// in `hibernating` seconds wherever it did, its image was kept in
    /// `finishing`, and the loop spent `loop` on it here, waiting for the
    /// lane or hibernating the store itself included, charged to sleeping.
    func noteSlept(keptImage: Bool, hibernating: Double, finishing: Double, loop: Double) {
        if keptImage { tally.keptImages += 1 }
        tally.sleepSeconds += hibernating + finishing
        clock.move(loop, to: .sleeps)
        tally.mostImageBytes = images.mostHeldBytes
        tally.imageFileBytes = images.fileBytes
    }

    /// Finishes the sleeps handed to the lane, in the order they were: the
    /// ones it has run, and the oldest past `mostPending`; with `waiting`, all.
    func finishSleeps(waiting: Bool) throws(SimulationError) {
        while pendingHead < pending.count {
            let device = pending[pendingHead]
            let outstanding = pending.count - pendingHead
            guard waiting || outstanding > StoreKeeper.mostPending || device.sleepIsReady else { break }
            pendingHead += 1
            try device.finishSleep()
        }
        if pendingHead >= 1_024 && pendingHead * 2 >= pending.count {
            pending.removeFirst(pendingHead)
            pendingHead = 0
        }
    }
}

extension StoreKeeper {
    /// Measures what the awake stores and the pooled connections hold now,
    /// for the summary (`HibernationFigures.awakeMemory`, `pooledMemory`).
    func measureAwake() {
        tally.awakeAtEnd = 0
        tally.awakeMemory = StoreMemory()
        tally.pooledMemory = connections.idleMemory()
        tally.pooledConnections = connections.idleConnections
        for device in ring {
            guard let store = try? device.store else { continue }
            tally.awakeAtEnd += 1
            tally.awakeMemory.add(store.connectionMemory())
        }
    }

    /// Counts an awake store at what its database holds now.
    fileprivate func remeasure(_ device: SimDevice) {
        guard let store = try? device.store, let pages = try? store.databaseBytes() else { return }
        let counted = pages + store.wokenImageBytes + StoreKeeper.awakeStoreBytes
        awakeBytes += counted - device.countedBytes
        device.countedBytes = counted
    }
}

/// What hibernation did in a run: the report's `hibernation`.
public struct HibernationFigures: Sendable, Equatable {
    public var budget = 0
    public var sleeps = 0
    /// The sleeps that found the pages the store woke with, and kept the
    /// image it woke from instead of compressing them again.
    public var keptImages = 0
    public var wakes = 0
    /// The stores made when their device was first touched; their time is
    /// counted with the wakes'.
    public var births = 0
    public var sleepSeconds = 0.0
    public var wakeSeconds = 0.0
    /// The most stores awake at once.
    public var mostAwake = 0
    /// The most bytes of memory the sleeping stores held at once.
    public var mostSleepingBytes = 0
    /// The most bytes their images held at once in the keeper's file
    /// (`SleepingImages`), and how large the file grew.
    public var mostImageBytes = 0
    public var imageFileBytes = 0
    /// The stores awake at the end of the run, and what they held then,
    /// together (`DeviceStore.connectionMemory()`): a pooled store's pages
    /// only, a store file's connection's statements and schema too.
    public var awakeAtEnd = 0
    public var awakeMemory = StoreMemory()
    /// The stores' pool's idle connections at the end (all of them, when
    /// no transaction runs), and what they held then, together.
    public var pooledConnections = 0
    public var pooledMemory = StoreMemory()

    /// One line for a run's summary.
    public var summary: String {
        let budgetText = "budget " + HibernationFigures.size(budget)
        guard sleeps > 0 else { return "at most \(mostAwake) awake, none put to sleep (\(budgetText))" + atEnd }
        return "at most \(mostAwake) awake; \(sleeps) sleeps (\(keptImages) unchanged) in " + String(format: "%.2f s", sleepSeconds)
            + ", \(wakes) wakes and \(births) stores made at first use in " + String(format: "%.2f s", wakeSeconds)
            + "; asleep at most " + HibernationFigures.size(mostSleepingBytes) + " of memory (\(budgetText)) and "
            + HibernationFigures.size(mostImageBytes) + " of images in a file of " + HibernationFigures.size(imageFileBytes) + atEnd
    }

    /// What an awake store held at the end, on average, and the pool's
    /// connections.
    private var atEnd: String {
        guard awakeAtEnd > 0 else { return "" }
        func kib(_ bytes: Int, _ count: Int) -> String { String(format: "%.1f KiB", Double(bytes) / Double(max(count, 1)) / 1_024) }
        let pooled = pooledConnections == 0 ? "" : "; \(pooledConnections) pooled connections, each "
            + "\(kib(pooledMemory.statements, pooledConnections)) of statements and \(kib(pooledMemory.schema, pooledConnections)) of schema"
        return "; at the end an awake store held \(kib(awakeMemory.pages, awakeAtEnd)) of pages, "
            + "\(kib(awakeMemory.statements, awakeAtEnd)) of statements and \(kib(awakeMemory.schema, awakeAtEnd)) of schema" + pooled
    }

    static func size(_ bytes: Int) -> String {
        if bytes >= 1 << 30 { return String(format: "%.1f GiB", Double(bytes) / Double(1 << 30)) }
        return String(format: "%.1f MiB", Double(bytes) / Double(1 << 20))
    }
}

extension Duration {
    var seconds: Double {
        let (whole, fraction) = components
        return Double(whole) + Double(fraction) / 1e18
    }
}
