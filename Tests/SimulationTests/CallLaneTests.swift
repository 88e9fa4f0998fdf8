import Foundation
import Testing
@testable import Simulation

@Suite struct CallLaneTests {
    /// The loop must not wait behind every call handed over before the one
    /// it needs: a call the lane has not begun runs on the settling thread.
    @Test func settlingACallTheLaneHasNotBegunRunsItOnTheSettlingThread() {
        let busy = BusyLane()
        let lane = busy.lane
        defer { lane.close() }
        let ranOn = LaneCargo(value: RanOn())
        let second = lane.hand { ranOn.value.thread = Thread.current }
        lane.settle(second)
        #expect(ranOn.value.thread == Thread.current, "the lane was busy: the settling thread ran the call")
        busy.finish()
        lane.waitForAll()
    }

    /// A call the lane is running is waited for, not run twice.
    @Test func settlingACallTheLaneIsRunningWaitsForItAndRunsItOnce() {
        let lane = CallLane()
        defer { lane.close() }
        let started = DispatchSemaphore(value: 0)
        let count = LaneCargo(value: RanOn())
        let job = lane.hand {
            started.signal()
            Thread.sleep(forTimeInterval: 0.05)
            count.value.runs += 1
        }
        started.wait()
        lane.settle(job)
        #expect(count.value.runs == 1)
        lane.waitForAll()
        #expect(count.value.runs == 1)
    }

    /// The loop never waits for room: with the lane busy and its queue
    /// full, `handIfRoom` declines at once (the loop then runs the call
    /// itself), and takes calls again once the lane has worked some off.
    @Test func aFullLaneDeclinesACallAtOnceInsteadOfWaitingForRoom() {
        let busy = BusyLane(capacity: 2)
        let lane = busy.lane
        defer { lane.close() }
        let count = LaneCargo(value: Counter())
        let queued = [lane.handIfRoom { count.value.add() }, lane.handIfRoom { count.value.add() }]
        #expect(queued.allSatisfy { $0 != nil }, "two calls fit behind the running one")
        #expect(lane.handIfRoom { count.value.add() } == nil, "the third finds the queue full")
        busy.finish()
        lane.waitForAll()
        #expect(count.value.total == 2)
        let later = lane.handIfRoom { count.value.add() }
        #expect(later != nil, "the lane takes calls again once it has room")
        later.map(lane.settle)
        #expect(count.value.total == 3)
    }

    @Test func waitingForAllWaitsForCallsTakenBackAndCallsLeftToTheLane() {
        let lane = CallLane()
        defer { lane.close() }
        let count = LaneCargo(value: Counter())
        var jobs: [CallLane.Job] = []
        for _ in 0..<1_000 { jobs.append(lane.hand { count.value.add() }) }
        for job in jobs.enumerated() where job.offset % 3 == 0 { lane.settle(job.element) }
        lane.waitForAll()
        #expect(count.value.total == 1_000)
    }
}

/// A lane running a call that holds it until `finish()`.
private struct BusyLane {
    let lane: CallLane
    let release = DispatchSemaphore(value: 0)
    let blocking: CallLane.Job

    init(capacity: Int? = nil) {
        lane = capacity.map { CallLane(capacity: $0) } ?? CallLane()
        let started = DispatchSemaphore(value: 0)
        let release = self.release
        blocking = lane.hand {
            started.signal()
            release.wait()
        }
        started.wait()
    }

    /// Lets the blocking call end and waits for it.
    func finish() {
        release.signal()
        lane.settle(blocking)
    }
}

private final class RanOn: @unchecked Sendable {
    var thread: Thread?
    var runs = 0
}

private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func add() { lock.withLock { count += 1 } }
    var total: Int { lock.withLock { count } }
}
