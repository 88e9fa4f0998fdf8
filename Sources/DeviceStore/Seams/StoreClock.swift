import Foundation
import IndexModel
import Synchronization

/// Where a store reads the time. The core never reads ambient time: a real run
/// injects `SystemClock`, tests and the simulator a `ManualClock`.
public protocol StoreClock: Sendable {
    func now() -> Timestamp
}

/// The machine's wall clock.
public struct SystemClock: StoreClock {
    public init() {}

    public func now() -> Timestamp {
        Timestamp(millisecondsSince1970: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)))
    }
}

/// A clock that moves only when told to: for tests, the simulator and the
/// `advanceClock` operation of scripted runs.
public final class ManualClock: StoreClock {
    private let current: Mutex<Timestamp>

    public init(_ start: Timestamp) {
        current = Mutex(start)
    }

    public func now() -> Timestamp {
        current.withLock { $0 }
    }

    /// Moves the clock to `instant`; refuses to move it backwards.
    public func advance(to instant: Timestamp) throws(DeviceStoreError) {
        try current.withLock { (value: inout Timestamp) throws(DeviceStoreError) in
            guard instant >= value else {
                throw DeviceStoreError(.clockWentBackwards,
                                       "advanceClock to \(instant) is before the clock's current time \(value)")
            }
            value = instant
        }
    }

    public func advance(byMilliseconds milliseconds: Int64) {
        current.withLock { $0 = $0.adding(milliseconds: milliseconds) }
    }
}
