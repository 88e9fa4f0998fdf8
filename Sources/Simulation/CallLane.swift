import Foundation
import Snapshot

/// A second thread for the devices' app calls. The event loop stays the one
/// place where the run's order is decided: it hands a device's call to the
/// lane and goes on with other events, and before it next touches that device
/// (or all of them) it waits until the lane has finished with it (`Simulator
/// .settle`). A call reads and writes only its own device, at a clock pinned
/// to the virtual time of its event, so it does exactly what it would have
/// done on the event loop: a run gives the same digest with or without the lane.
final class CallLane: @unchecked Sendable {
    /// Jobs in the order they were handed over.
    private let jobs: Handoff<@Sendable () -> Void>
    /// Guards `finished`; the event loop waits on it for a job to finish.
    private let condition = NSCondition()
    /// Jobs finished, in order: job n is done once this is n or more.
    private var finished: UInt64 = 0
    private var waiting = false
    /// Jobs handed over; only the event loop's thread reads and writes it.
    private var handed: UInt64 = 0

    /// Calls waiting beyond this many hold the event loop back: the loop
    /// otherwise runs ahead, holding every waiting call's memory. The lane's
    /// thread holds the lane until `close()`.
    init(capacity: Int = 4_096) {
        jobs = Handoff(capacity: capacity)
        let thread = Thread { [self] in
            while let job = jobs.next() {
                job()
                condition.lock()
                finished += 1
                if waiting { condition.broadcast() }
                condition.unlock()
            }
        }
        thread.name = "sightline-calls"
        // SQLite's parser and a search's query compiler recurse: the
        // 512 KiB default of a secondary thread is not enough for every query.
        thread.stackSize = 8 << 20
        thread.start()
    }

    /// Runs `work` on the lane after every job handed over before it; returns
    /// its number, for `wait(for:)`.
    func hand(_ work: @escaping @Sendable () -> Void) -> UInt64 {
        handed += 1
        jobs.put(work)
        return handed
    }

    /// Returns once job `number` (and so every job before it) has finished.
    func wait(for number: UInt64) {
        condition.lock()
        defer { condition.unlock() }
        while finished < number {
            waiting = true
            condition.wait()
        }
        waiting = false
    }

    /// Returns once every job handed over has finished.
    func waitForAll() {
        wait(for: handed)
    }

    /// Ends the thread once its jobs are done; it then lets go of the lane.
    func close() {
        waitForAll()
        jobs.finish()
    }
}

/// Carries a value the type system cannot prove safe across threads to the
/// lane, for values only one thread uses at a time (a device between its
/// hand-over and its settling).
struct LaneCargo<Value>: @unchecked Sendable {
    let value: Value
}
