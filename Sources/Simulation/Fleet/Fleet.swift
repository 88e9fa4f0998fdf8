import DeviceStore

/// The simulated devices and where their calls run. With a call lane, a
/// device's own work (its app's calls, taking a reply, writing its backup)
/// runs on the lane's thread while the event loop goes on, and the loop
/// settles the device before it reads or changes anything of it; without
/// one, the work runs on the loop at once. Either way each device's work
/// keeps the loop's order.
final class Fleet {
    /// The second thread; nil: every call runs on the event loop's thread.
    let lane: CallLane?
    /// Which devices' stores are awake (`StoreKeeper`).
    let keeper: StoreKeeper
    private(set) var devices: [SimDevice] = []
    /// The numbers of the devices that have taken a backup, in order: a
    /// device restore picks among them.
    private(set) var backedUp: [Int] = []

    init(lane: CallLane?, keeper: StoreKeeper) {
        self.lane = lane
        self.keeper = keeper
    }

    deinit { close() }

    /// Waits for the lane's jobs and ends its thread (again: nothing).
    func close() {
        lane?.close()
    }

    func add(_ device: SimDevice) {
        devices.append(device)
    }

    /// Notes that `device` has a backup to restore from.
    func noteBackup(of device: SimDevice) {
        guard device.backups.isEmpty else { return }
        // Kept in order without sorting: it grows by one device at a time.
        let place = backedUp.firstIndex { $0 > device.number } ?? backedUp.endIndex
        backedUp.insert(device.number, at: place)
    }

    /// Runs `work`, which touches only `device`, where a device's own work
    /// runs: on the lane, at the device's clock pinned to `now`, until the
    /// loop settles the device; without the lane, or when the lane's queue
    /// is full, here at once. Returns what it left when it ran here.
    ///
    /// A full queue means the lane is thousands of calls behind: the loop
    /// does the call itself, as it does a call it settles before the lane
    /// began it, rather than wait for room and leave its own thread idle.
    func handOff(_ device: SimDevice, now: Int64, _ work: @escaping (SimDevice) -> SimDevice.Turn) -> SimDevice.Turn? {
        if let lane {
            device.clock.pin(at: now)
            let cargo = LaneCargo(value: device), job = LaneCargo(value: work)
            if let handed = lane.handIfRoom({ cargo.value.turn = job.value(cargo.value) }) {
                device.laneJob = handed
                return nil
            }
            device.clock.unpin()
        }
        device.turn = work(device)
        return settle(device)
    }

    /// Makes sure `device`'s work on the lane (if any) has run (waiting for
    /// the lane if it is running it, running it here if the lane has not
    /// begun it), and returns what it left, once.
    func settle(_ device: SimDevice) -> SimDevice.Turn? {
        if let lane, let job = device.laneJob {
            lane.settle(job)
            device.laneJob = nil
            device.clock.unpin()
        }
        defer { device.turn = nil }
        return device.turn
    }

    /// Waits for the lane's other jobs (after every device is settled).
    func waitForLane() {
        lane?.waitForAll()
    }

    /// `work` for each of `0..<count`, and what each made, in order: with the
    /// call lane, the lane takes every other number while this thread takes
    /// the rest. For setting up, where each number touches only its own device.
    func onBothThreads<Value>(_ count: Int, _ work: @escaping @Sendable (Int) -> Result<Value, any Error>) throws -> [Value] {
        guard let lane, count > 1 else { return try (0..<count).map { try work($0).get() } }
        let odd = LaneCargo(value: ResultShelf<Value>())
        let job = lane.hand { odd.value.results = stride(from: 1, to: count, by: 2).map(work) }
        let even = stride(from: 0, to: count, by: 2).map(work)
        lane.settle(job)
        return try (0..<count).map { number in try (number % 2 == 0 ? even[number / 2] : odd.value.results[number / 2]).get() }
    }
}
