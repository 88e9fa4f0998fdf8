import Foundation
import Simulation
import Testing

/// Stores that sleep (`simulate --memory-budget`) must not change a run: a
/// woken store holds what it held, byte for byte, and what it kept in memory
/// between sync runs comes back with it.
@Suite struct HibernationRunTests {
    /// A budget of a mebibyte keeps only the fewest stores awake, so nearly
    /// every event wakes one and puts another to sleep. Seeds with crashes,
    /// restores (whose stores are files after), clock jumps and cloud
    /// restores among them, on both threads, and one with every store in a file.
    @Test func aRunWithItsStoresAsleepGivesTheSameRunAsOneWithEveryStoreAwake() throws {
        for (seed, faults, files, day) in [(3, FaultProfile.heavy, false, false), (1, .swarm, false, false), (8, .swarm, false, true),
                                           (16, .heavy, true, false)] as [(UInt64, FaultProfile, Bool, Bool)] {
            var options = SimulationOptions(devices: 32, eventsPerDevice: 30, seed: seed, faults: faults, threshold: 3)
            options.callLane = true
            options.storesInFiles = files
            options.workload = day ? .day : .busy
            let awake = try run(options)
            options.memoryBudget = 1 << 20
            let asleep = try run(options)
            #expect(failures(asleep) == "")
            #expect(asleep.hibernation.sleeps > 100 && asleep.hibernation.wakes > 100,
                    "seed \(seed): \(asleep.hibernation.summary)")
            if !files {
                // The images lie in the keeper's file, not in memory.
                #expect(asleep.hibernation.mostImageBytes > 0 && asleep.hibernation.imageFileBytes >= asleep.hibernation.mostImageBytes)
                #expect(asleep.hibernation.mostSleepingBytes < asleep.hibernation.mostImageBytes, "\(asleep.hibernation.summary)")
            }
            #expect(awake.hibernation.sleeps == 0)
            // An in-memory store is made when its device is first touched,
            // and every device syncs before the run ends.
            #expect(asleep.hibernation.births == (files ? 0 : 32) && awake.hibernation.births == asleep.hibernation.births,
                    "seed \(seed): \(asleep.hibernation.summary)")
            #expect(asleep.digest == awake.digest, "seed \(seed) ran to another digest with its stores asleep")
            #expect(asleep.faults == awake.faults && asleep.coverage == awake.coverage)
            #expect(asleep.framesSent == awake.framesSent && asleep.bytesUp == awake.bytesUp)
            #expect(asleep.invariants.map(\.detail) == awake.invariants.map(\.detail))
        }
    }

    /// With the call lane, stores hibernate and wake there while the loop
    /// goes on, or on the loop when it needs a store the lane has not put
    /// to sleep yet: where depends on timing. The keeper still decides on
    /// the loop, at once, with what each store will hold, so two runs of a
    /// seed sleep and wake the same stores, and the run is the one without
    /// the lane.
    @Test func storesPutToSleepOnTheLaneSleepAndWakeTheSameInEveryRunOfASeed() throws {
        for (seed, day) in [(5, false), (8, true)] as [(UInt64, Bool)] {
            var options = SimulationOptions(devices: 32, eventsPerDevice: 30, seed: seed, faults: .swarm, threshold: 3)
            options.workload = day ? .day : .busy
            options.memoryBudget = 1 << 20
            let loop = try run(options)
            options.callLane = true
            let first = try run(options), second = try run(options)
            #expect(failures(first) == "")
            #expect(first.digest == loop.digest && second.digest == loop.digest, "seed \(seed)")
            let (a, b) = (first.hibernation, second.hibernation)
            #expect(a.sleeps > 100 && a.wakes > 100, "seed \(seed): \(a.summary)")
            #expect(a.sleeps == b.sleeps && a.keptImages == b.keptImages && a.wakes == b.wakes && a.births == b.births
                        && a.mostAwake == b.mostAwake
                        && a.mostSleepingBytes == b.mostSleepingBytes,
                    "seed \(seed): \(a.summary) against \(b.summary)")
            #expect(a.sleepSeconds > 0 && a.wakeSeconds > 0)
        }
    }
}
