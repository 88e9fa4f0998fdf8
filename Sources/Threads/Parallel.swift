import Foundation
import Synchronization

/// Runs a few long iterations at once, each beyond the first on a thread of
/// its own. `DispatchQueue.concurrentPerform` runs them one after another when
/// it is called from a thread of a busy pool (a restore runs on Swift's
/// cooperative pool, which on Linux is dispatch's, already as wide as the
/// machine), so a snapshot's chunks would inflate on one core.
public enum Parallel {
    /// Runs `body` for each iteration from 0 to `iterations` − 1 at once: the
    /// first on this thread, each other on a thread of its own. Returns when
    /// all have returned.
    public static func perform(iterations: Int, _ body: @escaping @Sendable (Int) -> Void) {
        guard iterations > 1 else {
            if iterations == 1 { body(0) }
            return
        }
        let done = DispatchSemaphore(value: 0)
        for item in 1..<iterations {
            Thread.detachNewThread {
                body(item)
                done.signal()
            }
        }
        body(0)
        for _ in 1..<iterations { done.wait() }
    }
}

extension Parallel {
    /// Runs `first` and `second` each on a thread of its own while `main`
    /// runs on this one, and returns what each returned, with how long the
    /// other two took: a restore's checks beside its replay. Real threads,
    /// not dispatch's pool, for the reason `perform` gives.
    public static func beside<Main, First: Sendable, Second: Sendable>(
        _ first: @escaping @Sendable () -> First, _ second: @escaping @Sendable () -> Second,
        while main: () -> Main
    ) -> (main: Main, first: (First, Duration), second: (Second, Duration)) {
        let done = DispatchSemaphore(value: 0)
        let outcomes = Mutex<((First, Duration)?, (Second, Duration)?)>((nil, nil))
        Thread.detachNewThread {
            let start = ContinuousClock.now
            let result = first()
            outcomes.withLock { $0.0 = (result, start.duration(to: .now)) }
            done.signal()
        }
        Thread.detachNewThread {
            let start = ContinuousClock.now
            let result = second()
            outcomes.withLock { $0.1 = (result, start.duration(to: .now)) }
            done.signal()
        }
        let mainResult = main()
        done.wait()
        done.wait()
        let (firstOutcome, secondOutcome) = outcomes.withLock { $0 }
        guard let firstOutcome, let secondOutcome else { preconditionFailure("a thread ended without an outcome") }
        return (mainResult, firstOutcome, secondOutcome)
    }
}
