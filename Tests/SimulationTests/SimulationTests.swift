import CloudCore
@testable import CloudSQLite
import Foundation
import GRDB
import IndexModel
@testable import Simulation
import SyncWire
import Testing

/// Seeds that once failed, with the options they failed under: each must pass
/// for good. (seed, devices, events per device, faults, K)
let regressionSeeds: [(seed: UInt64, devices: Int, events: Int, faults: FaultProfile, threshold: Int)] = [
    // A device restored twice from backups of epoch 1 began epoch 2 twice.
    (16, 6, 40, .heavy, 3),
    // A device restored from an older backup was acknowledged through the
    // epoch of its previous restore, beyond its own outbox.
    (43, 6, 40, .heavy, 3),
    // Journaling the cloud's content requests ran an expiry sweep the oracle had not modelled.
    (46, 6, 40, .heavy, 3),
    // A device restored from an older backup offered the tail of an epoch the
    // cloud had ended on every sync, forever: the gap's position was not kept.
    (40, 8, 80, .heavy, 3),
    // A cloud restored from a snapshot older than a device's first frame asked
    // for seq 1 of the device's newest epoch, which then ended the older one unsent.
    (67, 8, 80, .heavy, 3),
    (99, 8, 80, .heavy, 3),
    // A device whose clock ran back past an earlier restore began an epoch
    // below one the cloud had begun for it; nothing it wrote was accepted.
    // (The `epochAdvance` path; see the seeds at the end of the list.)
    (48, 8, 80, .heavy, 3),
    (71, 8, 80, .heavy, 3),
    // A cloud restored between a device's probe of its old epoch's end and a
    // retry of its new epoch's first frame ended the old epoch short.
    (94, 8, 80, .heavy, 3),
    // A device that had moved its epoch got an ack through the cloud's head in
    // a later epoch than its own, and the store threw; an advance to the
    // cloud's epoch + 1 was then begun again by a restore from a backup of
    // that epoch (restores also add 1). Advances now go 2^16 above the
    // cloud's epoch, and an ack or an equivocation showing that the cloud
    // holds another history under the store's own epoch moves it too.
    (153, 8, 80, .heavy, 3),
    (197, 8, 80, .heavy, 3),
    (258, 8, 80, .heavy, 3),
    (251, 8, 80, .heavy, 3),
    (587, 8, 80, .heavy, 3),
    (402, 8, 80, .heavy, 3),
    // A content request was lost when its ack was lost and the device then
    // sent a longer frame: the cloud took any new frame as proof of delivery.
    (331, 8, 80, .heavy, 3),
    (461, 8, 80, .heavy, 3),
    (596, 8, 80, .heavy, 3),
    // The oracle kept owing what a cloud restore and a device wipe had both
    // lost, and the tail of an epoch the cloud had ended.
    (132, 8, 80, .heavy, 3),
    (315, 8, 80, .heavy, 3),
    (393, 8, 80, .heavy, 3),
    (407, 8, 80, .heavy, 3),
    (571, 8, 80, .heavy, 3),
    (221, 8, 80, .heavy, 3),
    // Cloud restores from the backup before the latest, whose messages the
    // devices had dropped (they now make them again from their journals):
    // the first message still in the outbox, the first of a later epoch,
    // seemed to follow and ended the older epoch short (567, 84); the oracle
    // took a restored store's watermark, from its backup, as told by the
    // cloud (384), and kept owing durable messages that the older backup and
    // a wipe had both lost (143, 285). (The `recoveryFromJournal` path.)
    (567, 8, 80, .heavy, 3),
    (84, 8, 80, .heavy, 3),
    (384, 8, 80, .heavy, 3),
    (143, 8, 80, .heavy, 3),
    (285, 8, 80, .heavy, 3),
    // With K offers needed, a request a device never heard was counted as
    // delivered (an ack to a stale duplicate of an older frame or epoch
    // reached the proving position: 101, 208), and an honest device whose
    // vote the cloud lost with an ended epoch was refused for good for its
    // content (547).
    (101, 8, 80, .heavy, 3),
    (208, 8, 80, .heavy, 3),
    (547, 8, 80, .heavy, 3),
    // Once devices synced less often than every few seconds, the convergence
    // check took each device's pending count from its last sync: a device
    // whose calls came after it counted as quiet, and its messages never
    // reached the cloud (`acknowledged-not-lost`).
    (4, 3, 10, .none, 5),
    // A late frame of a wiped incarnation began a higher epoch after the
    // cloud had taken part of the restored device's epoch; the device's
    // advance refused to run, since it could only move the whole epoch.
    (129, 8, 80, .heavy, 3),
    // The cloud counted votes a restored device no longer held (cast by the
    // wiped device after its backup: 1), and a device held votes the cloud
    // never counted (sent in an epoch the cloud had ended before them: 48);
    // two incarnations advanced past the same cloud head to the same epoch
    // (3, 6 devices × 100 calls).
    (1, 4, 25, .swarm, 3),
    (48, 8, 80, .heavy, 3),
    (3, 6, 100, .heavy, 3),
    // Not failures: seeds that reach the two paths above under today's
    // workload and faults (users act in bursts of calls, devices batch their
    // uploads every 10 to 30 virtual seconds, a cloud snapshot becomes the
    // cloud's backup 15 virtual seconds after its copy, the backup a cloud
    // restore uses is chosen when the cloud goes down, the hostile device
    // attacks and replies are replayed).
    // A change of the workload or the faults replays every seed differently, so these are
    // found again with a scan of `--devices 8 --events-per-device 80 --faults
    // heavy --threshold 3` over seeds 1-600 (`docs/SIMULATION.md`).
    (6, 8, 80, .heavy, 3),
    (51, 8, 80, .heavy, 3),
    (10, 8, 80, .heavy, 3),
    (13, 8, 80, .heavy, 3),
]

/// The seeds that must move a device's epoch above the cloud's.
let epochAdvanceSeeds: Set<UInt64> = [6, 51]

/// The seeds in which a device must make dropped messages again from its
/// journal for a cloud restored from an older backup.
let recoveryFromJournalSeeds: Set<UInt64> = [10, 13]

func run(_ options: SimulationOptions) throws -> SimulationReport {
    try Simulator(options: options).run()
}

/// The failed invariants in words, with what replays the run; empty when it passed.
func failures(_ report: SimulationReport) -> String {
    report.passed ? "" : "\(report.replayCommand): "
        + report.failures.map { "\($0.name): \($0.detail)" }.joined(separator: "; ")
}

@Suite struct SimulationTests {
    @Test func theSameSeedGivesTheSameDigestAndAnotherSeedAnother() throws {
        for seed: UInt64 in [3, 8] {
            let options = SimulationOptions(devices: 5, eventsPerDevice: 30, seed: seed, faults: .heavy, threshold: 3)
            let first = try run(options), second = try run(options)
            #expect(first.digest == second.digest, "seed \(seed) replayed to another digest")
            #expect(first.faults == second.faults && first.framesSent == second.framesSent)
        }
        let one = try run(SimulationOptions(devices: 5, eventsPerDevice: 30, seed: 1, faults: .heavy, threshold: 3))
        let other = try run(SimulationOptions(devices: 5, eventsPerDevice: 30, seed: 2, faults: .heavy, threshold: 3))
        #expect(one.digest != other.digest)
    }

    /// The knobs that grow with the fleet are options: a run that sets one
    /// replays only with it, so its replay command names it, and a value no
    /// run can use is refused by name.
    @Test func fleetOptionsChangeTheRunAndAreNamedInItsReplayCommand() throws {
        let plain = SimulationOptions(devices: 6, eventsPerDevice: 20, seed: 5, faults: .light, threshold: 3)
        var everyone = plain
        everyone.searchStride = 1
        #expect(everyone.replayCommand.hasSuffix("--threshold 3 --search-stride 1") && !plain.replayCommand.contains("stride"))
        func searches(_ options: SimulationOptions) throws -> Int {
            let detail = try run(options).invariants.first { $0.name == "search-matches-calls" }?.detail ?? ""
            return Int(detail.prefix { $0.isNumber }) ?? -1
        }
        let few = try searches(plain), all = try searches(everyone)
        #expect(few > 0 && all > few, "\(few) searches with one device in four searching, \(all) with every device")
        var broken = plain
        broken.backupFleet = 0
        #expect(throws: SimulationError.self) { try broken.validate() }
    }

    /// A fleet of a million devices is a run the simulator takes; one more is
    /// refused, and the refusal says the range.
    @Test func aMillionDevicesIsTheLargestFleet() throws {
        var largest = SimulationOptions(devices: 1_000_000, eventsPerDevice: 20, seed: 1, faults: .swarm, threshold: 5)
        largest.workload = .day
        try largest.validate()
        largest.devices += 1
        #expect {
            try largest.validate()
        } throws: { error in
            "\(error)".contains("between 1 and 1,000,000") && "\(error)".contains("1000001")
        }
    }

    /// The call lane runs app calls while the event loop goes on, so a call
    /// that read anything but its own device, or the clock past its event,
    /// would change the run. Seeds with crashes, restores, clock jumps and
    /// epoch advances among them.
    @Test func callsOnASecondThreadGiveTheSameRunAsOnOne() throws {
        for (seed, faults) in [(3, FaultProfile.heavy), (8, .swarm), (16, .heavy), (48, .heavy), (71, .heavy)] as [(UInt64, FaultProfile)] {
            var options = SimulationOptions(devices: 12, eventsPerDevice: 50, seed: seed, faults: faults, threshold: 3)
            let serial = try run(options)
            options.callLane = true
            let laned = try run(options)
            #expect(failures(laned) == "")
            #expect(laned.digest == serial.digest, "seed \(seed) ran to another digest on two threads")
            #expect(laned.faults == serial.faults && laned.coverage == serial.coverage)
            #expect(laned.framesSent == serial.framesSent && laned.appCalls == serial.appCalls)
            #expect(laned.invariants.map(\.detail) == serial.invariants.map(\.detail))
        }
    }

    /// The gate: 200 small seeds with faults, each drawing its own mix, must
    /// pass every invariant, and together reach every fault and recovery path.
    @Test func twoHundredSmallSeedsWithFaultsPassEveryInvariantAndCoverEveryPath() throws {
        var faults: [FaultKind: Int] = [:]
        var coverage: [RecoveryPath: Int] = [:]
        for seed: UInt64 in 1...200 {
            let profile: FaultProfile = seed % 4 == 0 ? .heavy : .swarm
            let report = try run(SimulationOptions(devices: 4, eventsPerDevice: 25, seed: seed, faults: profile, threshold: 3))
            #expect(failures(report) == "")
            faults.merge(report.faults, uniquingKeysWith: +)
            coverage.merge(report.coverage, uniquingKeysWith: +)
        }
        for kind in FaultKind.allCases {
            #expect((faults[kind] ?? 0) > 0, "no seed injected \(kind.rawValue)")
        }
        for path in RecoveryPath.allCases where path.isGated {
            #expect((coverage[path] ?? 0) > 0, "no seed reached the recovery path \(path.rawValue)")
        }
    }

    @Test func everySeedThatOnceFailedPasses() throws {
        for entry in regressionSeeds {
            let report = try run(SimulationOptions(devices: entry.devices, eventsPerDevice: entry.events, seed: entry.seed,
                                                   faults: entry.faults, threshold: entry.threshold))
            #expect(failures(report) == "")
            if epochAdvanceSeeds.contains(entry.seed) {
                #expect((report.coverage[.epochAdvance] ?? 0) > 0, "seed \(entry.seed) no longer advances an epoch")
            }
            if recoveryFromJournalSeeds.contains(entry.seed) {
                #expect((report.coverage[.recoveryFromJournal] ?? 0) > 0, "seed \(entry.seed) no longer recovers from a journal")
            }
        }
    }

    @Test func aRunWithoutFaultsMakesPopularEntriesPublicAndKeepsTheSybilsOut() throws {
        var options = SimulationOptions(devices: 8, eventsPerDevice: 60, seed: 11, faults: .none, threshold: 3)
        options.catalogueSize = 12
        let report = try run(options)
        #expect(failures(report) == "")
        #expect(report.publicItems > 0 && report.contentRequests > 0)
        #expect(report.faults.isEmpty && report.retries == 0)
    }

    /// The leak check reads what a frame carries, compressed or not: a frame
    /// whose deflated payload holds private text is counted as a leak.
    @Test func theOracleNoticesPrivateTextInADeflatedFrame() throws {
        let simulator = try Simulator(options: SimulationOptions(devices: 1, eventsPerDevice: 1, seed: 9, faults: .none))
        let device = simulator.devices[0]
        func frame(title: String) throws -> [UInt8] {
            let content = PublicContent(activityType: "com.example.view", title: title, keywords: [],
                                        contentDescription: String(repeating: "padding ", count: 40), webpageURL: nil)
            let hash = try #require(PublicHash.of(app: AppID("com.example.app"), content: content))
            return UploadFrame(app: AppID("com.example.app"), device: device.name,
                               records: [OutboxRecord(position: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(1)), message: .content(hash, content))],
                               key: [UInt8](repeating: 7, count: 32)).encoded
        }
        let clean = try frame(title: "Baked Potato Chips")
        simulator.scanForCanary(clean, from: device)
        #expect(simulator.counters.leaks == 0)
        let leaking = try frame(title: "diary \(Catalogue.canary)")
        try #require(leaking.firstRange(of: Simulator.canaryBytes) == nil, "the canary must be hidden by deflate here")
        simulator.scanForCanary(leaking, from: device)
        #expect(simulator.counters.leaks == 1)
        #expect(simulator.findings.contains { $0.contains("private text") })
    }

    @Test func theCanaryIsFoundWhereverItStandsInTheBytes() {
        let canary = Simulator.canaryBytes
        let filler = [UInt8](repeating: canary[0], count: 5)
        #expect(Simulator.holdsCanary(canary))
        #expect(Simulator.holdsCanary(canary + filler))
        #expect(Simulator.holdsCanary(filler + canary))
        #expect(Simulator.holdsCanary(filler + canary + filler))
        #expect(!Simulator.holdsCanary(filler + Array(canary.dropLast())), "a canary cut short at the end")
        #expect(!Simulator.holdsCanary(Array(canary.dropFirst()) + filler))
        #expect(!Simulator.holdsCanary([]))
    }

    /// The hostile device forges, replays, stuffs ballots, sends extreme
    /// positions and content it never voted for, and floods signals for
    /// the entry it voted for: the cloud takes only its vote and signals,
    /// counts them as the oracle's rule says, and no more than the cap.
    @Test func theHostileDeviceIsContainedAndItsFloodStopsAtTheCap() throws {
        let report = try run(SimulationOptions(devices: 8, eventsPerDevice: 80, seed: 1, faults: .heavy, threshold: 3))
        #expect(failures(report) == "")
        #expect((report.faults[.hostileFrame] ?? 0) >= 10 && (report.faults[.replyReplayed] ?? 0) >= 0)
        let contained = try #require(report.invariants.first { $0.name == "hostile-contained" })
        #expect(contained.passed && contained.detail.contains("10000 engaged of them counted"), "\(contained.detail)")
    }

    @Test func theOracleNoticesACountTheCloudGotWrong() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sim-tamper-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let simulator = try Simulator(options: SimulationOptions(devices: 5, eventsPerDevice: 40, seed: 4, faults: .light,
                                                                 threshold: 3, directory: directory))
        let report = try simulator.run()
        #expect(failures(report) == "")
        // One impression more on one hash, as a double-counting cloud would
        // have: through the simulator's own connection, since it holds its
        // cloud's file exclusively.
        let cloud = try #require(simulator.cloud as? CloudIndex)
        try cloud.queue.write { db in
            try db.execute(sql: "UPDATE hashes SET shown = shown + 1 WHERE key = (SELECT min(key) FROM hashes)")
        }
        let checks = simulator.checkInvariants()
        let counts = try #require(checks.first { $0.name == "counts-exact" })
        #expect(!counts.passed && counts.detail.contains("shown"), "\(counts.detail)")
        #expect(checks.first { $0.name == "projections-equal-rebuild" }?.passed == false)
    }

    /// The end of a run checks devices on both threads, one from the first
    /// device up and the lane from the last down: a store that differs from
    /// its calls is caught whichever thread checks it, and reported in device order.
    @Test func theOracleNoticesADeviceIndexThatDiffersFromItsCalls() throws {
        var options = SimulationOptions(devices: 6, eventsPerDevice: 40, seed: 5, faults: .none, threshold: 3)
        options.callLane = true
        let simulator = try Simulator(options: options)
        #expect(failures(try simulator.run()) == "")
        for device in [simulator.devices[0], simulator.devices[5]] {
            // A deletion the app never made, straight on the store.
            let (index, items) = try #require(device.model.items.sorted { $0.key < $1.key }.first { !$0.value.isEmpty })
            let identifier = try #require(items.keys.sorted().first)
            try device.store.perform(.delete(index: index, identifiers: [identifier]))
        }
        let checks = simulator.checkInvariants()
        let index = try #require(checks.first { $0.name == "device-index-matches-calls" })
        #expect(!index.passed && index.detail.hasPrefix("device 0 index") && index.detail.contains("(and 1 more)"), "\(index.detail)")
    }

    /// A store that still holds the content of an item deleted before a
    /// backup it recorded is caught.
    @Test func theOracleNoticesContentABackupCoveredThatWasNotPurged() throws {
        let simulator = try Simulator(options: SimulationOptions(devices: 12, eventsPerDevice: 50, seed: 3, faults: .heavy, threshold: 3))
        #expect(failures(try simulator.run()) == "")
        let device = try #require(simulator.devices.first { $0.backupsTaken > 0 })
        // Indexed and deleted straight on the store, then a backup with no purge after it.
        let index = try #require(device.model.items.keys.sorted().first)
        try device.store.perform(.index(index: index, items: [SearchableItem(uniqueIdentifier: "never-purged")]))
        try device.store.perform(.delete(index: index, identifiers: ["never-purged"]))
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("unpurged-\(UUID().uuidString).slsnap").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        _ = try device.store.snapshot(to: path)
        let caught = try #require(simulator.checkInvariants().first { $0.name == "no-deleted-item-returned" })
        #expect(!caught.passed && caught.detail.contains("never-purged") && caught.detail.contains("deleted and backed up but not purged"),
                "\(caught.detail)")
    }

    @Test func aDeviceRestoreDrillLosesOnlyItsWindowAndCountsNothingTwice() throws {
        for seed: UInt64 in 1...3 {
            let drill = try DrillReport.run(side: .device, seed: seed)
            #expect(failures(drill.simulation) == "")
            #expect(drill.doubleCounts == 0 && drill.simulation.converged)
            #expect(drill.eventsLost.values.reduce(0, +) > 0, "the wipe destroys what came after the backup")
            #expect((drill.rtoVirtualSeconds ?? 0) >= 10, "the outage is part of the recovery time")
        }
    }

    /// A recovery that never catches up (here: a device that held more at
    /// the restore than the cloud ever acknowledged) fails the drill with
    /// no RTO and says which device and where, rather than erroring out.
    @Test func aDrillWhoseCloudNeverCaughtUpFailsAndNamesTheDevice() throws {
        var options = SimulationOptions(devices: 4, eventsPerDevice: 40, seed: 2, faults: .none, threshold: 3)
        options.drill = .cloud
        let simulator = try Simulator(options: options)
        let report = try simulator.run()
        let target = try #require(simulator.drill?.targets[2])
        let unreached = OutboxPosition(epoch: target.epoch, seq: OutboxSeq(target.seq.rawValue + 1_000))
        simulator.drill?.targets[2] = unreached
        simulator.drill?.caughtUpAt = nil
        let acknowledged = try simulator.devices[2].store.syncStatus().acknowledged
        let drill = try DrillReport(simulator: simulator, report: report)
        #expect(!drill.passed && !drill.caughtUp && drill.rtoVirtualSeconds == nil)
        #expect(drill.behind == ["device 2 held through \(unreached) at the restore; the cloud acknowledged through \(acknowledged)"])
        let rto = try #require(drill.summaryRows.first { $0.first == "RTO" })
        #expect(rto.last?.hasPrefix("never: device 2 held through") == true, "\(rto)")
        guard case .object(let json) = drill.jsonValue, case .object(let rtoJSON)? = json["rto"] else {
            Issue.record("the drill's JSON has no rto object: \(drill.jsonValue)")
            return
        }
        #expect(rtoJSON["virtualSeconds"] == .null && json["caughtUp"] == .bool(false))
    }

    @Test func aCloudRestoreDrillLosesNothingBecauseDevicesResend() throws {
        for seed: UInt64 in 1...3 {
            let drill = try DrillReport.run(side: .cloud, seed: seed)
            #expect(failures(drill.simulation) == "")
            #expect(drill.doubleCounts == 0 && drill.messagesLost == 0 && drill.eventsLost.isEmpty)
            #expect(drill.simulation.rewinds > 0, "devices learned from gaps what the restored cloud lacked")
        }
    }

    /// In a run too short for three quarters to come after the cloud's
    /// backup is written, the cloud is destroyed once it is: it comes back
    /// from that backup, not empty (which once stopped the run, its app no
    /// longer registered).
    @Test func aShortCloudDrillRestoresFromItsWrittenBackup() throws {
        for events in [8, 20] {
            let drill = try DrillReport.run(side: .cloud, devices: 3, eventsPerDevice: events, seed: 2)
            #expect(failures(drill.simulation) == "" && drill.passed, "\(events) calls")
            #expect(drill.messagesLost == 0 && drill.doubleCounts == 0, "\(events) calls")
        }
    }

    /// `cloud restore --to-time` in a drill: the cloud comes back as it was
    /// 30 virtual seconds before its backup, so the cut removes rows the
    /// backup held and devices had dropped; they make them again from their
    /// journals, and nothing is lost or counted twice.
    @Test func aCloudDrillRestoredToAnEarlierInstantLosesNothing() throws {
        for seed: UInt64 in 1...3 {
            let drill = try DrillReport.run(side: .cloud, devices: 6, eventsPerDevice: 80, seed: seed, cutBackMilliseconds: 30_000)
            #expect(failures(drill.simulation) == "")
            #expect(drill.logRowsCut > 0, "seed \(seed): the cut removed nothing the backup held")
            #expect(drill.doubleCounts == 0 && drill.messagesLost == 0 && drill.caughtUp)
            #expect(drill.summaryRows.contains { $0.first == "cut" })
        }
        let deviceSide = #expect(throws: SimulationError.self) {
            var options = SimulationOptions(devices: 2)
            options.drill = .device
            options.drillCutBack = 1_000
            _ = try Simulator(options: options)
        }
        #expect(deviceSide?.message.contains("cloud drill") == true)
    }

    @Test func invalidOptionsAreRefusedWithTheReason() {
        let devices = #expect(throws: SimulationError.self) { try Simulator(options: SimulationOptions(devices: 0)) }
        #expect(devices?.message.contains("--devices") == true)
        let threshold = #expect(throws: SimulationError.self) { try Simulator(options: SimulationOptions(threshold: 0)) }
        #expect(threshold?.message.contains("--threshold") == true)
        let catalogue = #expect(throws: SimulationError.self) {
            try Simulator(options: SimulationOptions(catalogueSize: 256))
        }
        #expect(catalogue?.message.contains("between 1 and 255 entries") == true)
    }

    /// A crash opens a store on disk again only once its old connection is
    /// closed, and so does a restore: however often a store crashed, its
    /// database is open once, as `OpenFiles` counts it. Opened the other
    /// way round, SQLite keeps the old connection's descriptor (`replace`).
    @Test func aStoreOnDiskThatCrashedHoldsItsDatabaseOpenOnce() throws {
        var options = SimulationOptions(devices: 6, eventsPerDevice: 40, seed: 3, faults: .heavy, threshold: 3)
        options.storesInFiles = true
        let simulator = try Simulator(options: options)
        let report = try simulator.run()
        #expect(failures(report) == "")
        #expect(report.faults[.deviceCrash, default: 0] > 0 && report.faults[.deviceRestore, default: 0] > 0)
        var opened: [String: Int] = [:]
        for descriptor in try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(descriptor)"),
                  target.hasPrefix(simulator.directory + "/"), target.hasSuffix(".sqlite") else { continue }
            opened[target, default: 0] += 1
        }
        #expect(opened.count >= options.devices, "the stores' databases are open: \(opened)")
        #expect(opened.filter { $0.value > 1 } == [:])
    }

    /// `--out` keeps three files open per device store all run: a run that
    /// needs more than the process may ever open is refused up front, saying
    /// how many devices fit, and a soft limit that is merely low is raised.
    @Test func aRunOnDiskNeedingMoreOpenFilesThanAllowedIsRefusedWithHowManyFit() {
        #expect(OpenFiles.decide(devices: 1_000, soft: 20_000, hard: 20_000) == .enough)
        #expect(OpenFiles.decide(devices: 6_000, soft: 1_024, hard: 1_048_576) == .raise(to: 18_064))
        guard case .refuse(let error) = OpenFiles.decide(devices: 10_000, soft: 20_000, hard: 20_000) else {
            Issue.record("10,000 stores of 3 files each do not fit in 20,000")
            return
        }
        #expect(error.message.contains("10000 devices need about 30064 open files"))
        #expect(error.message.contains("at most 6645 devices"))
    }
}

/// A run's manifest reads back as written, and names the stores its devices
/// ended with and those their restores replaced.
@Test func aRunManifestReadsBackAndNamesEachDevicesGenerations() throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("manifest-\(UUID().uuidString)").path
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let simulator = try Simulator(options: SimulationOptions(devices: 6, eventsPerDevice: 150, seed: 7, faults: .swarm,
                                                             threshold: 3, directory: directory))
    let report = try simulator.run()
    let manifest = simulator.manifest(report)
    #expect(try RunManifest(json: manifest.jsonValue) == manifest)
    #expect(manifest.digest == report.digest && manifest.replay == report.replayCommand && manifest.cloudStore == "cloud.sqlite")
    for device in manifest.devices {
        let restores = report.restores.filter { $0.device == device.number }
        #expect(device.replacedStores.map(\.file) == restores.indices.map { Simulator.storeFile(device.number, generation: $0) })
        #expect(device.store == Simulator.storeFile(device.number, generation: restores.count))
        #expect(manifest.device(String(device.number)) == device && manifest.device(device.id) == device)
    }
    #expect(manifest.devices.contains { !$0.replacedStores.isEmpty })
}
