import Foundation

/// Where a store or the cloud reads the time. The core never reads ambient time:
/// a real run injects `SystemClock`, tests and the simulator a `ManualClock`.
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
