import Foundation
import IndexModel
import Simulation
import Testing

/// A run says where its wall time went (`RunTimes`, the summary's `time`
/// line) and what an awake store's connection held at its end (the `stores`
/// line): what a reader of a slow or large run needs to know what to cut.
@Suite struct RunTimesTests {
    /// The loop's parts cover the run from its first event to the end of the
    /// checks, so they add up to its wall time (less what comes before the
    /// first event and after the checks); each part the run did took time.
    @Test func aRunsLoopTimeBySplitAddsUpToItsWallTimeWithEachPartItDid() throws {
        var options = SimulationOptions(devices: 24, eventsPerDevice: 30, seed: 1, faults: .swarm, threshold: 3)
        options.callLane = true
        let report = try run(options)
        #expect(failures(report) == "")
        let times = report.times
        #expect(times.loopTotal <= report.wallSeconds + 0.001, "\(times.summary) in \(report.wallSeconds) s")
        #expect(times.loopTotal >= report.wallSeconds * 0.9, "\(times.summary) in \(report.wallSeconds) s")
        for part in [RunTimes.Part.calls, .sync, .cloud, .faults, .backups, .checks] {
            #expect(times[part] > 0, "\(part.name): \(times.summary)")
        }
        // Nothing slept, and the lane's thread ran calls beside the loop.
        // Each store was made at its device's first touch, charged to waking.
        #expect(times[.sleeps] == 0 && report.hibernation.wakes == 0 && report.hibernation.births == 24)
        #expect(times.lane > 0)
        #expect(report.summaryRows.contains { $0 == ["time", times.summary] })
        guard case .object(let document) = report.jsonValue, case .object(let json)? = document["times"] else {
            Issue.record("report.json has no times")
            return
        }
        #expect(json.keys.sorted() == (RunTimes.Part.allCases.map { $0.name + "Seconds" } + ["laneSeconds"]).sorted())
    }

    /// A wake's time is charged to waking whatever part of the run woke the
    /// store, and putting stores to sleep to sleeping: the two parts are
    /// what the keeper timed.
    @Test func sleepsAndWakesAreChargedToTheirOwnParts() throws {
        var options = SimulationOptions(devices: 32, eventsPerDevice: 30, seed: 3, faults: .heavy, threshold: 3)
        options.memoryBudget = 1 << 20
        let report = try run(options)
        #expect(failures(report) == "")
        let times = report.times, figures = report.hibernation
        #expect(figures.wakes > 100)
        #expect(abs(times[.wakes] - figures.wakeSeconds) < 1e-6, "\(times.summary); \(figures.summary)")
        #expect(times[.sleeps] >= figures.sleepSeconds, "\(times.summary); \(figures.summary)")
        #expect(times.lane == 0, "a run without the call lane has no lane time")
    }

    /// Every store awake at the end is measured, and the pool's
    /// connections: an awake in-memory store holds its pages, and the
    /// statements and parsed schema are the connections', once for all.
    @Test func theStoresAwakeAtTheEndHoldTheirPagesAndThePoolTheStatements() throws {
        let report = try run(SimulationOptions(devices: 6, eventsPerDevice: 20, seed: 2, faults: .light, threshold: 3))
        let figures = report.hibernation
        #expect(figures.awakeAtEnd == 6)
        // A page per table and index at least.
        #expect(figures.awakeMemory.pages > 6 * 40 * 1_024)
        #expect(figures.awakeMemory.statements == 0 && figures.awakeMemory.schema == 0)
        #expect((1...2).contains(figures.pooledConnections), "one connection for each thread that runs transactions")
        #expect(figures.pooledMemory.statements > figures.pooledConnections * 10_000)
        #expect(figures.pooledMemory.schema > figures.pooledConnections * 4_000)
        #expect(figures.summary.contains("at the end an awake store held"))
    }
}
