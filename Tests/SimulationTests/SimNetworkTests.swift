import Testing
@testable import Simulation

private let frame: [UInt8] = Array("a frame".utf8)

private func network(_ configure: (inout FaultPlan) -> Void = { _ in }) -> SimNetwork {
    var plan = FaultPlan()
    configure(&plan)
    return SimNetwork(plan: plan, random: SimRandom(seed: 9))
}

/// The simulated network on its own, without a run around it.
@Suite struct SimNetworkTests {
    @Test func aPerfectNetworkDeliversEachFrameOnceWithinItsLatency() {
        let perfect = network()
        var counters = RunCounters()
        let arrivals = perfect.carryRequest(frame, from: 0, now: 1_000, counters: &counters)
        #expect(arrivals.count == 1 && arrivals[0].bytes == frame && !arrivals[0].replayed)
        #expect((1_005...1_060).contains(arrivals[0].at))
        #expect(counters.faults.isEmpty)
    }

    @Test func aPartitionBlocksOnlyItsMembersInItsDirectionsUntilItHeals() {
        let net = network()
        var counters = RunCounters()
        let cut = net.partition(members: [1], blocksRequests: true, blocksReplies: false)
        #expect(net.carryRequest(frame, from: 1, now: 0, counters: &counters).isEmpty)
        #expect(net.carryRequest(frame, from: 2, now: 0, counters: &counters).count == 1)
        #expect(net.carryReply(frame, to: 1, now: 0, replaying: true, counters: &counters) != nil, "replies still reach device 1")
        net.heal(cut)
        #expect(net.carryRequest(frame, from: 1, now: 0, counters: &counters).count == 1)
    }

    @Test func everyFaultIsCountedAndNoneIsDrawnOnceTheFaultsEnd() {
        let hostile = network {
            $0.requestLoss = 0; $0.duplication = 1; $0.replay = 1; $0.delay = 1; $0.bitFlip = 1
        }
        var counters = RunCounters()
        let arrivals = hostile.carryRequest(frame, from: 0, now: 0, counters: &counters)
        #expect(arrivals.count == 3, "the duplicate, a captured frame replayed, and the frame")
        #expect(arrivals.filter(\.replayed).count == 1 && arrivals.last?.bytes != frame, "its bit was flipped")
        #expect(counters.faults[.duplicated] == 1 && counters.faults[.replayed] == 1)
        #expect(counters.faults[.delayed] == 1 && counters.faults[.bitFlip] == 1)
        hostile.endFaults()
        var after = RunCounters()
        let clean = hostile.carryRequest(frame, from: 0, now: 0, counters: &after)
        #expect(clean.count == 1 && clean[0].bytes == frame && after.faults.isEmpty)
    }

    @Test func aReplayedReplyIsTheDevicesPreviousOneAndOnlyWhenAsked() {
        let net = network { $0.replay = 1 }
        var counters = RunCounters()
        let first: [UInt8] = [1], second: [UInt8] = [2]
        #expect(net.carryReply(first, to: 0, now: 0, replaying: true, counters: &counters)?.bytes == first, "nothing to replay yet")
        #expect(net.carryReply(second, to: 0, now: 0, replaying: true, counters: &counters)?.bytes == first)
        #expect(net.carryReply(second, to: 1, now: 0, replaying: true, counters: &counters)?.bytes == second, "another device's replies are its own")
        #expect(net.carryReply(second, to: 0, now: 0, replaying: false, counters: &counters)?.bytes == second)
        #expect(counters.faults[.replyReplayed] == 1)
    }

    @Test func aLostFrameOrReplyArrivesNowhere() {
        let lossy = network { $0.requestLoss = 1; $0.replyLoss = 1 }
        var counters = RunCounters()
        #expect(lossy.carryRequest(frame, from: 0, now: 0, counters: &counters).isEmpty)
        #expect(lossy.carryReply(frame, to: 0, now: 0, replaying: true, counters: &counters) == nil)
        #expect(counters.faults[.requestLost] == 1 && counters.faults[.replyLost] == 1)
        #expect(lossy.captured == [frame], "a lost frame was still seen on the wire")
    }
}
