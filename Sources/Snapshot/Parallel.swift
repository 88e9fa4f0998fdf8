import Foundation

/// Runs a few long iterations at once, each beyond the first on a thread of
/// its own. `DispatchQueue.concurrentPerform` ran them one after another when
/// it was called from a thread of a busy pool (a restore runs on Swift's
/// cooperative pool, which on Linux is dispatch's, already as wide as the
/// machine): chunks of a snapshot were inflated on one core.
public enum Parallel {
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
