import Foundation
import IndexModel
import Synchronization

/// The simulation's one clock: virtual milliseconds that move only when the
/// event loop takes the next event. Devices read it through a `DeviceClock`
/// (with their own skew); the cloud reads it directly.
final class WorldClock: StoreClock {
    private let current: Mutex<Int64>

    init(start: Int64) {
        current = Mutex(start)
    }

    var milliseconds: Int64 { current.withLock { $0 } }

    func now() -> Timestamp { Timestamp(millisecondsSince1970: milliseconds) }

    func move(to milliseconds: Int64) {
        current.withLock { $0 = max($0, milliseconds) }
    }
}

/// A device's clock: the world's time plus the device's skew, which clock
/// faults change (a jump moves it at once, either way). While the device's
/// call runs on the call lane, the clock is pinned to the virtual time of the
/// call's event, which the event loop has moved past by then.
final class DeviceClock: StoreClock {
    private struct Reading {
        var skew: Int64 = 0
        var pinned: Int64?
    }

    let world: WorldClock
    private let reading = Mutex(Reading())

    init(world: WorldClock) {
        self.world = world
    }

    var skewMilliseconds: Int64 {
        get { reading.withLock { $0.skew } }
        set { reading.withLock { $0.skew = newValue } }
    }

    func now() -> Timestamp {
        let (skew, pinned) = reading.withLock { ($0.skew, $0.pinned) }
        return Timestamp(millisecondsSince1970: (pinned ?? world.milliseconds) + skew)
    }

    /// Reads world time `milliseconds` (plus the skew) until `unpin()`.
    func pin(at milliseconds: Int64) {
        reading.withLock { $0.pinned = milliseconds }
    }

    func unpin() {
        reading.withLock { $0.pinned = nil }
    }

    /// The world time at which this clock will read `deviceTime`.
    func worldTime(of deviceTime: Timestamp) -> Int64 {
        deviceTime.millisecondsSince1970 - skewMilliseconds
    }
}

/// The pending events, earliest first; events at the same time keep the order
/// they were scheduled in, so a run never depends on the heap's layout.
struct EventQueue<Event> {
    private var heap: [(time: Int64, order: UInt64, event: Event)] = []
    private var scheduled: UInt64 = 0

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }

    mutating func schedule(_ event: Event, at time: Int64) {
        scheduled += 1
        heap.append((time, scheduled, event))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard precedes(child, parent) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> (time: Int64, event: Event)? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let top = heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var first = parent
            if left < heap.count && precedes(left, first) { first = left }
            if right < heap.count && precedes(right, first) { first = right }
            guard first != parent else { break }
            heap.swapAt(parent, first)
            parent = first
        }
        return (top.time, top.event)
    }

    private func precedes(_ a: Int, _ b: Int) -> Bool {
        (heap[a].time, heap[a].order) < (heap[b].time, heap[b].order)
    }
}

/// A seeded generator with the draws the simulator needs.
struct SimRandom {
    private var generator: SplitMix64

    init(seed: UInt64) {
        generator = SplitMix64(seed: seed)
    }

    mutating func next() -> UInt64 { generator.next() }

    /// Uniform in 0..<bound.
    mutating func below(_ bound: Int) -> Int {
        precondition(bound > 0)
        return Int(next() % UInt64(bound))
    }

    mutating func between(_ low: Int64, _ high: Int64) -> Int64 {
        low + Int64(next() % UInt64(high - low + 1))
    }

    /// True with probability `p`.
    mutating func chance(_ p: Double) -> Bool {
        p > 0 && unit() < p
    }

    /// Uniform in [0, 1).
    mutating func unit() -> Double {
        Double(next() >> 11) / Double(1 << 53)
    }

    /// A new independent stream, for a part of the simulation that must not
    /// shift the draws of the others when it draws more or less.
    mutating func split() -> SimRandom {
        SimRandom(seed: next())
    }
}
