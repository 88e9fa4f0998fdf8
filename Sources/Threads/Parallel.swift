import Foundation
import Synchronization

/// Work on threads of its own. Not `DispatchQueue.concurrentPerform`, nor
/// dispatch's pool: it runs work one item after another when it is called
/// from a thread of a busy pool (a restore runs on Swift's cooperative pool,
/// which on Linux is dispatch's, already as wide as the machine).
public enum Parallel {}

extension Parallel {
    /// Runs `first` and `second` each on a thread of its own while `main`
    /// runs on this one, and returns what each returned, with how long the
    /// other two took: a restore's checks beside its replay. Real threads,
    /// not dispatch's pool, for the reason `Parallel` gives.
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
