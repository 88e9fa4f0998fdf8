import IndexModel
import Synchronization

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
