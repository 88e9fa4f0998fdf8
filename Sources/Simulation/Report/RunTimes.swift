/// Where a run's wall time went: the event loop's thread by the part of the
/// run it was doing, and how long the call lane's thread ran calls. The loop
/// runs the whole run, its waits for the lane included (charged to calls),
/// so its parts add up to the run's wall time from the first event to the
/// end of the checks; the lane works beside it.
public struct RunTimes: Sendable, Equatable {
    public enum Part: Int, CaseIterable, Sendable {
        /// Users' actions, handed to the lane, and the device work the lane
        /// was handed (calls, replies taken, backups written) whenever the
        /// loop runs what the lane had not begun or waits for what it was
        /// running.
        case calls
        /// Devices' sync sessions: timers, taking replies, timeouts.
        case sync
        /// The embedded cloud: taking frames, crashes and restores, its
        /// snapshots, the hostile device's frames.
        case cloud
        /// Devices' backups.
        case backups
        /// Faults on devices and the network: crashes, restores, partitions.
        case faults
        /// Putting stores to sleep, and waking them or making them at
        /// their device's first touch (`StoreKeeper`).
        case sleeps, wakes
        /// The invariants at the end: reading the cloud, each store's checks.
        case checks
        /// The run's own bookkeeping: samples for the timeline, convergence.
        case other

        public var name: String {
            switch self {
            case .calls: "calls"
            case .sync: "sync"
            case .cloud: "cloud"
            case .backups: "backups"
            case .faults: "faults"
            case .sleeps: "sleeps"
            case .wakes: "wakes"
            case .checks: "checks"
            case .other: "other"
            }
        }
    }

    /// Seconds of the loop's thread, by `Part.rawValue`.
    public var loop = [Double](repeating: 0, count: Part.allCases.count)
    /// Seconds the lane's thread ran calls, backups and checks (0 without a lane).
    public var lane = 0.0

    public subscript(part: Part) -> Double {
        get { loop[part.rawValue] }
        set { loop[part.rawValue] = newValue }
    }

    /// The loop's seconds in all.
    public var loopTotal: Double { loop.reduce(0, +) }

    /// One line for a run's summary: the loop's parts that took any time,
    /// then the lane's.
    public var summary: String {
        let parts = Part.allCases.filter { self[$0] >= 0.005 }.map { "\($0.name) " + RunTimes.seconds(self[$0]) }
        let loopText = "loop " + (parts.isEmpty ? "0.00 s" : parts.joined(separator: ", "))
        return lane > 0 ? loopText + "; lane " + RunTimes.seconds(lane) : loopText
    }

    static func seconds(_ value: Double) -> String {
        String(format: "%.2f s", value)
    }
}

/// Charges the loop's time to the part it is doing: each `enter` ends the
/// part before at this instant. Only the loop's thread uses it; it reads the
/// clock once a switch, so a run pays a few tens of nanoseconds an event.
final class PartClock {
    private(set) var times = RunTimes()
    private(set) var part = RunTimes.Part.other
    private var since = ContinuousClock.now

    /// Starts charging `part`; returns the part it was charging.
    @discardableResult
    func enter(_ next: RunTimes.Part) -> RunTimes.Part {
        let now = ContinuousClock.now
        times[part] += (now - since).seconds
        since = now
        let previous = part
        part = next
        return previous
    }

    /// Moves `seconds` already charged to the part now running to `other`:
    /// for work timed on its own inside a part (a wake).
    func move(_ seconds: Double, to other: RunTimes.Part) {
        times[part] -= seconds
        times[other] += seconds
    }

    /// Starts again from nothing, charging `part` from now.
    func reset(to part: RunTimes.Part) {
        times = RunTimes()
        self.part = part
        since = ContinuousClock.now
    }

    /// What was charged up to now, with the lane's seconds.
    func finish(lane: Double) -> RunTimes {
        enter(part)
        var result = times
        result.lane = lane
        return result
    }
}

extension RunTimes.Part {
    /// The part of the run an event's handling is.
    init(of event: Simulator.Event) {
        switch event {
        case .userAction: self = .calls
        case .syncTimer, .sessionWake, .toDevice, .replyTaken, .timeout: self = .sync
        case .toCloud, .cloudUp, .cloudSnapshot, .cloudSnapshotWritten, .hostile,
             .drillBackup, .drillDestroy, .drillRestore: self = .cloud
        case .deviceBackup: self = .backups
        case .chaos, .heal: self = .faults
        case .sample, .convergenceCheck: self = .other
        }
    }
}
