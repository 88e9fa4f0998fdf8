import Testing
@testable import Simulation

/// A device takes the cloud's reply where its calls run, and the event loop
/// acts on what it made `Simulator.replyProcessing` later (`.replyTaken`).
/// A crash in between must drop that reply, keep its session's report, and
/// leave nothing for the `.replyTaken` that follows to act on.
@Suite struct ReplyWindowTests {
    @Test(arguments: [false, true])
    func aCrashWhileAReplyIsTakenKeepsItsReportAndTheLoopDoesNotActOnTheReply(callLane: Bool) throws {
        var options = SimulationOptions(devices: 6, eventsPerDevice: 40, seed: 11, faults: .light, threshold: 3)
        options.callLane = callLane
        let simulator = try Simulator(options: options)
        var crashes = 0
        /// The device crashed just before its `.replyTaken`, and the run's
        /// counters after the crash: handling that event must change neither.
        var crashed: (device: SimDevice, counters: RunCounters)?
        simulator.beforeEvent = { [unowned simulator] event in
            if let (device, counters) = crashed {
                crashed = nil
                #expect(device.session == nil && device.inFlight == nil && device.takenReply == nil,
                        "the loop took up the session device \(device.number)'s crash ended")
                #expect(simulator.counters.framesSent == counters.framesSent
                        && simulator.counters.messagesAcknowledged == counters.messagesAcknowledged,
                        "the dropped reply's session was counted again")
            }
            guard case .replyTaken(let number, let token) = event, case .faults = simulator.phase, crashes < 4 else { return }
            let device = simulator.devices[number]
            try simulator.settle(device)
            guard let taken = device.takenReply, taken.token == token else { return }
            let before = simulator.counters
            try simulator.crash(device)
            crashes += 1
            // The taken reply holds the session's newest report: that one
            // counts, not the one the loop held before the reply came.
            let report = taken.session.report
            #expect(simulator.counters.framesSent - before.framesSent == report.framesSent)
            #expect(simulator.counters.messagesAcknowledged - before.messagesAcknowledged == report.messagesAcknowledged)
            #expect(simulator.counters.retries - before.retries == report.retries)
            crashed = (device, simulator.counters)
        }
        let report = try simulator.run()
        #expect(crashes == 4, "the run offered \(crashes) replies to crash in")
        #expect(report.faults[.deviceCrash, default: 0] >= crashes)
        #expect(report.passed, "\(report.failures.map { "\($0.name): \($0.detail)" })")
    }
}
