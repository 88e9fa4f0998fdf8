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

extension Parallel {
    /// Items made in order on one thread, each transformed on one of
    /// `workers` threads, and taken back in the order made on this one: a
    /// snapshot's chunks, deflated as it is written and inflated as it is
    /// extracted, on every core, with no thread waiting for a round.
    ///
    /// `produce` runs on a thread of its own and gives each item to `hand`,
    /// which passes item k to worker k mod `workers` and returns false once
    /// this side has stopped (`produce` should then return). Each worker
    /// applies `transform` to its items in turn. `consume` gets the results
    /// here, in the order produced, until it returns false, throws, or the
    /// items run out. Every thread has ended when this returns or throws.
    public static func pipeline<Item: Sendable, Result: Sendable, Failure: Error>(
        workers: Int,
        produce: @escaping @Sendable (_ hand: (Item) -> Bool) -> Void,
        transform: @escaping @Sendable (Item) -> Result,
        consume: (Result) throws(Failure) -> Bool
    ) throws(Failure) {
        let count = max(1, workers)
        let made = (0..<count).map { _ in Handoff<Item>(capacity: 2) }
        let done = (0..<count).map { _ in Handoff<Result>(capacity: 2) }
        let running = DispatchGroup()
        onThread(running) {
            defer { for handoff in made { handoff.finish() } }
            var turn = 0
            produce { item in
                defer { turn = (turn + 1) % count }
                return made[turn].put(item)
            }
        }
        for worker in 0..<count {
            onThread(running) {
                defer { done[worker].finish() }
                while let item = made[worker].next() {
                    guard done[worker].put(transform(item)) else {
                        made[worker].abandon()
                        return
                    }
                }
            }
        }
        defer {
            for handoff in done { handoff.abandon() }
            running.wait()
        }
        var turn = 0
        while let result = done[turn].next() {
            guard try consume(result) else { return }
            turn = (turn + 1) % count
        }
    }

    /// Runs `body` on a thread of its own, in `group`.
    private static func onThread(_ group: DispatchGroup, _ body: @escaping @Sendable () -> Void) {
        group.enter()
        Thread.detachNewThread {
            body()
            group.leave()
        }
    }
}
