import Foundation
@testable import Simulation
import Testing

/// `simulate --workload day`: one simulated day of users who visit the app
/// a few times in a daily rhythm and are idle between.
@Suite struct DayWorkloadTests {
    /// Over many users: every visit falls within the day, one user in
    /// twenty is heavy, the evening is busier than the small hours in the
    /// users' own time, and every time zone is used.
    @Test func aDayHasItsVisitsInADailyRhythmAcrossTimeZones() {
        var random = SimRandom(seed: 11)
        var heavy = 0, byLocalHour = [Int](repeating: 0, count: 24)
        var zones = Set<Int>()
        var malformed = 0
        let users = 20_000
        for _ in 0..<users {
            let day = DayPlan(random: &random)
            zones.insert(day.zone)
            if day.starts != day.starts.sorted() || day.starts.count != day.actions.count
                || !day.starts.allSatisfy({ (0..<DayPlan.dayMilliseconds).contains($0) })
                || !day.actions.allSatisfy({ DayPlan.actionsPerVisit.contains($0) }) {
                malformed += 1
            }
            if day.starts.count >= DayPlan.heavyVisits.lowerBound { heavy += 1 }
            for start in day.starts {
                let local = (start + Int64(day.zone) * DayPlan.hourMilliseconds + DayPlan.dayMilliseconds) % DayPlan.dayMilliseconds
                byLocalHour[Int(local / DayPlan.hourMilliseconds)] += 1
            }
        }
        #expect(malformed == 0, "\(malformed) days with visits out of order, outside the day or of another length")
        #expect(zones.count == 24)
        #expect((users / 25...users / 16).contains(heavy), "\(heavy) heavy users of \(users)")
        #expect(byLocalHour[20] > 10 * byLocalHour[3], "8 pm \(byLocalHour[20]) visits against 3 am \(byLocalHour[3])")
        #expect(byLocalHour[8] > 3 * byLocalHour[3] && byLocalHour[12] > byLocalHour[15])
    }

    /// A fleet far past `--backup-fleet` backs up less often, not never:
    /// one backup in 60 here, where stretching the earliest first backup
    /// as well would put it 30 virtual hours in, past the day.
    @Test func aFleetFarPastItsBackupFleetStillBacksUpDuringTheDay() throws {
        var options = SimulationOptions(devices: 60, eventsPerDevice: 20, seed: 3, faults: .swarm, threshold: 3)
        options.workload = .day
        options.backupFleet = 1
        let report = try run(options)
        #expect(failures(report) == "")
        let backups = report.devices.reduce(0) { $0 + $1.backups }
        #expect(backups > 0 && backups < 30, "\(backups) backups by 60 devices, each one backup in 60")
    }

    /// A day with faults passes every invariant, lasts a day of virtual
    /// time, replays to its digest, and its replay command names it.
    @Test func aDayWithFaultsPassesEveryInvariantAndReplays() throws {
        for seed: UInt64 in [2, 5] {
            var options = SimulationOptions(devices: 40, eventsPerDevice: 40, seed: seed, faults: .swarm, threshold: 3)
            options.workload = .day
            options.callLane = true
            let report = try run(options), again = try run(options)
            #expect(failures(report) == "")
            #expect(report.digest == again.digest)
            #expect(report.virtualMilliseconds > 20 * DayPlan.hourMilliseconds && report.appCalls > 0)
            #expect(report.replayCommand.contains("--workload day"))
            // Devices sync during the day, not only once it is over.
            let dayEnd = report.virtualMilliseconds - report.convergenceMilliseconds
            #expect(report.timeline.contains { $0.at < dayEnd && $0.publicItems > 0 },
                    "nothing was public before the day ended: \(report.timeline.map(\.publicItems))")
        }
        var drill = SimulationOptions()
        drill.drill = .device
        drill.workload = .day
        #expect(throws: SimulationError.self) { try drill.validate() }
    }
}
