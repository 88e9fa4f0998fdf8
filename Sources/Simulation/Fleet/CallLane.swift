import Foundation
import Threads

/// A second thread for the devices' app calls. The event loop stays the one
/// place where the run's order is decided: it hands a device's calls of one
/// user action to the lane and goes on with other events, and before it next
/// touches that device (or all of them) it settles them (`Simulator.settle`). A call reads and
/// writes only its own device, at a clock pinned to the virtual time of its
/// event, so it does exactly what it would have done on the event loop: a run
/// gives the same digest with or without the lane.
///
/// Calls of different devices touch nothing in common, so they may run in
/// any order; a device has at most one action handed over at a time (the
/// loop settles it before the next). That lets the loop take back a call the lane
/// has not started yet and run it itself, instead of waiting for the lane to
/// work through every call handed over before it: the loop then waits only
/// for a call the lane is running.
final class CallLane: @unchecked Sendable {
    /// One handed-over call. Its state moves under the lane's lock, once:
    /// waiting, then running on one of the two threads, then done.
    final class Job: @unchecked Sendable {
        fileprivate enum State { case waiting, running, done }
        fileprivate let work: @Sendable () -> Void
        fileprivate var state = State.waiting

        fileprivate init(_ work: @escaping @Sendable () -> Void) { self.work = work }
    }

    /// Jobs in the order they were handed over; the loop may have taken some back.
    private let jobs: Handoff<Job>
    /// Guards every job's state and `finished`; the event loop waits on it.
    private let condition = NSCondition()
    /// Jobs done, by either thread.
    private var finished: UInt64 = 0
    private var waiting = false
    /// Jobs handed over; only the event loop's thread reads and writes it.
    private var handed: UInt64 = 0
    /// Seconds the lane's thread spent running jobs.
    private var laneSeconds = 0.0

    /// How long the lane's thread has run jobs, in seconds (not the jobs
    /// the loop took back and ran itself).
    var busySeconds: Double {
        condition.lock()
        defer { condition.unlock() }
        return laneSeconds
    }

    /// At most this many calls wait: the loop otherwise runs ahead, holding
    /// every waiting call's memory. Beyond it `hand` waits for room and
    /// `handIfRoom` declines. The lane's thread holds the lane until `close()`.
    init(capacity: Int = 4_096, name: String = "sightline-calls") {
        jobs = Handoff(capacity: capacity)
        let thread = Thread { [self] in
            while let job = jobs.next() {
                guard claim(job) else { continue }
                let started = ContinuousClock.now
                job.work()
                complete(job, lane: (ContinuousClock.now - started).seconds)
            }
        }
        thread.name = name
        // SQLite's parser and a search's query compiler recurse: the
        // 512 KiB default of a secondary thread is not enough for every query.
        thread.stackSize = 8 << 20
        thread.start()
    }

    /// Runs `work` on the lane, or on the loop when the loop settles it first.
    func hand(_ work: @escaping @Sendable () -> Void) -> Job {
        let job = Job(work)
        handed += 1
        jobs.put(job)
        return job
    }

    /// Runs `work` on the lane as `hand` does, unless `capacity` jobs wait
    /// already: then nil, and the caller runs it itself instead of waiting
    /// for room.
    func handIfRoom(_ work: @escaping @Sendable () -> Void) -> Job? {
        let job = Job(work)
        guard jobs.offer(job) else { return nil }
        handed += 1
        return job
    }

    /// Returns once `job` has run: at once if it is done, after it if the
    /// lane is running it, and having run it here if the lane has not begun it.
    func settle(_ job: Job) {
        // One lock for the usual case, a job long done.
        condition.lock()
        if job.state == .waiting {
            job.state = .running
            condition.unlock()
            job.work()
            complete(job)
            return
        }
        while job.state != .done {
            waiting = true
            condition.wait()
        }
        waiting = false
        condition.unlock()
    }

    /// Whether `job` has run, without waiting for it or running it here.
    func isDone(_ job: Job) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return job.state == .done
    }

    /// Returns once every job handed over has run.
    func waitForAll() {
        condition.lock()
        defer { condition.unlock() }
        while finished < handed {
            waiting = true
            condition.wait()
        }
        waiting = false
    }

    /// Ends the thread once its jobs are done; it then lets go of the lane.
    /// Closing a closed lane does nothing.
    func close() {
        waitForAll()
        jobs.finish()
    }

    /// Takes a waiting job for the lane's thread: false when the loop took it back.
    private func claim(_ job: Job) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard job.state == .waiting else { return false }
        job.state = .running
        return true
    }

    private func complete(_ job: Job, lane seconds: Double = 0) {
        condition.lock()
        job.state = .done
        finished += 1
        laneSeconds += seconds
        if waiting { condition.broadcast() }
        condition.unlock()
    }
}

/// Carries a value the type system cannot prove safe across threads to the
/// lane, for values only one thread uses at a time (a device between its
/// hand-over and its settling).
struct LaneCargo<Value>: @unchecked Sendable {
    let value: Value
}

/// Where a job on the lane leaves what it made, for the loop to take once it
/// has settled the job.
final class ResultShelf<Value>: @unchecked Sendable {
    var results: [Result<Value, any Error>] = []
}
