import CloudCore
import CloudSQLite
import Foundation
import GRDB
import IndexModel
import LocalPrivacy
import ScratchDirectory
import SyncWire
import Testing

/// An app whose popularity is private (`PopularityMode.ldp`): acks say so,
/// reports fill the app's sketch within each device's daily allowance, and
/// search ranks public items by the sketch's estimates (`docs/CLOUD.md`,
/// "Popularity under local differential privacy").
@Suite struct PrivatePopularityTests {
    /// ε 2 a report, 100 a day: 50 reports a device a day.
    private let roomy = try! PrivatePopularity(epsilonThousandths: 2_000, dailyBudgetThousandths: 100_000, hashes: 16, buckets: 256)
    /// ε 4 a report, 8 a day: 2 reports a device a day.
    private let tight = try! PrivatePopularity(epsilonThousandths: 4_000, dailyBudgetThousandths: 8_000, hashes: 16, buckets: 256)

    private func hash(_ name: String) -> PublicHash {
        PublicHash.of(app: app, activityType: "com.example.read", identity: "url:https://example.com/" + name)
    }

    private func content(_ name: String) -> PublicContent {
        PublicContent(activityType: "com.example.read", title: name.capitalized, keywords: [], contentDescription: nil,
                      webpageURL: "https://example.com/" + name)
    }

    /// `count` reports of `item` made with `settings`, randomised by `seed`.
    private func reports(_ count: Int, of item: PublicHash, _ settings: PrivatePopularity, seed: UInt64) -> [OutboxMessage] {
        let random = SeededRandom(seed: seed)
        return (0..<count).map { _ in
            guard case .hadamard(let function, let row, let positive) = CountMeanSketch.report(item.bytes, parameters: settings.sketch,
                                                                                               random: random) else {
                preconditionFailure("an HCMS sketch makes HCMS reports")
            }
            return .report(PrivateReport(settings: settings, function: function, row: row, positive: positive))
        }
    }

    /// Makes `name` public with two voters (K = 2) that agree on its content;
    /// returns the voters, which have sent two messages each.
    private func publish(_ name: String, _ harness: SyncHarness) throws -> [Attacker] {
        let voters = try Attacker.voters(harness, 2, name, for: hash(name))
        for voter in voters { #expect(voter.send([.content(hash(name), content(name))], from: 2) == .accepted(messages: 1)) }
        return voters
    }

    private func ack(_ result: IngestResult, _ device: Attacker) throws -> Ack {
        guard case .ack(let ack) = try CloudReply.decode(result.reply, device: device.name, key: device.key).reply else {
            throw HarnessError("no ack: \(result.outcome)")
        }
        return ack
    }

    @Test(arguments: Backend.allCases) func everyAckSaysTheAppsPopularityMode(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        let device = try Attacker(harness)
        let vote = OutboxRecord(position: OutboxPosition(epoch: Epoch(1), seq: .first), message: .vote(hash("a"), token(1)))
        let frame = UploadFrame(app: app, device: device.name, records: [vote], key: device.key)
        #expect(try ack(harness.deliver(frame.encoded), device).popularity == .exact)
        #expect(try harness.cloud.popularity(app: app) == .exact)
        try harness.cloud.setPopularity(.ldp(roomy), app: app)
        #expect(try harness.cloud.popularity(app: app) == .ldp(roomy))
        #expect(try ack(harness.deliver(frame.encoded), device).popularity == .ldp(roomy), "a duplicate's ack says it too")
        let more = OutboxRecord(position: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(2)), message: .vote(hash("b"), token(1)))
        let next = UploadFrame(app: app, device: device.name, records: [more], key: device.key)
        #expect(try ack(harness.deliver(next.encoded), device).popularity == .ldp(roomy))
    }

    @Test(arguments: Backend.allCases) func reportsFillTheSketchAndItsEstimatesRankThePublicIndex(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        try harness.cloud.setPopularity(.ldp(roomy), app: app)
        let soup = try publish("soup", harness)
        let chips = try publish("chips", harness)
        #expect(soup[0].send(reports(50, of: hash("soup"), roomy, seed: 1), from: 3) == .accepted(messages: 50))
        #expect(chips[0].send(reports(5, of: hash("chips"), roomy, seed: 2), from: 3) == .accepted(messages: 5))
        #expect(try harness.cloud.stats().reports == 55)
        #expect(try harness.cloud.stats().privateApps == [app: roomy], "stats name each app whose popularity is private")
        let index = try harness.cloud.publicIndex(app: app)
        #expect(index.map(\.hash) == [hash("soup"), hash("chips")], "the estimates rank the public index")
        let soupEstimate = try #require(index.first?.estimatedEngaged)
        #expect(abs(soupEstimate - 50) < 25, "an estimate of 50 reports is \(soupEstimate)")
        #expect(index.allSatisfy { $0.popularity.engaged == 0 }, "no exact count is kept of a report")
        let results = try harness.cloud.search(app: app, text: "", explain: true)
        #expect(results.map(\.entry.hash) == [hash("soup"), hash("chips")])
        let explanation = try #require(results.first?.explanation)
        #expect(explanation.estimatedEngaged == soupEstimate
                && explanation.popularityFactor == 1 + log(1 + max(0, soupEstimate)))
        #expect(try harness.cloud.publicEntry(app: app, hash: hash("soup"))?.estimatedEngaged == soupEstimate)
        guard case .object(let json) = try #require(index.first).jsonValue else { Issue.record("not an object"); return }
        #expect(json["estimatedEngaged"] == .double(soupEstimate))
        #expect(try harness.cloud.projectionDigest() == harness.cloud.rebuiltProjectionDigest())
    }

    /// Reading keeps the sketch it built while the app's log does not move
    /// (`SketchCache`): reports that arrive after a search move the next
    /// search's estimates, and so does a change of settings.
    @Test(arguments: Backend.allCases) func estimatesFollowTheReportsThatArriveAfterASearch(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        try harness.cloud.setPopularity(.ldp(roomy), app: app)
        let soup = try publish("soup", harness)
        #expect(soup[0].send(reports(10, of: hash("soup"), roomy, seed: 11), from: 3) == .accepted(messages: 10))
        let before = try #require(try harness.cloud.publicIndex(app: app).first?.estimatedEngaged)
        #expect(try harness.cloud.publicIndex(app: app).first?.estimatedEngaged == before, "the same log, the same estimate")
        #expect(soup[1].send(reports(30, of: hash("soup"), roomy, seed: 12), from: 3) == .accepted(messages: 30))
        let after = try #require(try harness.cloud.publicIndex(app: app).first?.estimatedEngaged)
        #expect(after > before + 10, "40 reports estimate to \(after), 10 to \(before)")
        let other = try PrivatePopularity(epsilonThousandths: 2_000, dailyBudgetThousandths: 100_000, hashes: 32, buckets: 256)
        try harness.cloud.setPopularity(.ldp(other), app: app)
        #expect(try harness.cloud.publicIndex(app: app).first?.estimatedEngaged == 0, "no report was made for the new sketch")
    }

    @Test(arguments: Backend.allCases) func aDeviceAddsAtMostItsDailyReports(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        try harness.cloud.setPopularity(.ldp(tight), app: app)
        let device = try Attacker(harness)
        #expect(device.send(reports(5, of: hash("soup"), tight, seed: 3)) == .accepted(messages: 5), "the frame is accepted")
        #expect(try harness.cloud.stats().reports == 2, "2 reports a day: ε 8 a day over ε 4 a report")
        #expect(device.send(reports(2, of: hash("soup"), tight, seed: 4), from: 6) == .accepted(messages: 2))
        #expect(try harness.cloud.stats().reports == 2, "the day's allowance is spent")
        let other = try Attacker(harness, name: DeviceID("other"))
        #expect(other.send(reports(1, of: hash("soup"), tight, seed: 5)) == .accepted(messages: 1))
        #expect(try harness.cloud.stats().reports == 3, "each device has its own allowance")
        try harness.clock.advance(to: Timestamp(millisecondsSince1970: harnessStart.millisecondsSince1970 + PopularityRule.dayMilliseconds))
        #expect(device.send(reports(3, of: hash("soup"), tight, seed: 6), from: 8) == .accepted(messages: 3))
        #expect(try harness.cloud.stats().reports == 5, "a new day of cloud time, a new allowance")
        #expect(try harness.cloud.projectionDigest() == harness.cloud.rebuiltProjectionDigest(), "a rebuild counts the same")
    }

    @Test(arguments: Backend.allCases) func reportsOfAnotherSketchOrOfAnExactAppCountNothing(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        let device = try Attacker(harness)
        #expect(device.send(reports(3, of: hash("soup"), roomy, seed: 7)) == .accepted(messages: 3), "an exact app drops reports")
        #expect(try harness.cloud.stats().reports == 0)
        try harness.cloud.setPopularity(.ldp(tight), app: app)
        #expect(try harness.cloud.stats().reports == 0, "the earlier reports were made for another sketch")
        #expect(device.send(reports(3, of: hash("soup"), roomy, seed: 8), from: 4) == .accepted(messages: 3))
        #expect(try harness.cloud.stats().reports == 0)
        #expect(try harness.cloud.sketchCells(app: app).isEmpty)
    }

    @Test(arguments: Backend.allCases) func changingTheModeFoldsTheLogAgain(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        try harness.cloud.setPopularity(.ldp(roomy), app: app)
        let device = try Attacker(harness)
        #expect(device.send(reports(10, of: hash("soup"), roomy, seed: 9)) == .accepted(messages: 10))
        let counted = try harness.cloud.projectionDigest()
        try harness.cloud.setPopularity(.exact, app: app)
        #expect(try harness.cloud.stats().reports == 0 && harness.cloud.sketchCells(app: app).isEmpty)
        try harness.cloud.setPopularity(.ldp(roomy), app: app)
        #expect(try harness.cloud.stats().reports == 10, "the log kept the reports")
        #expect(try harness.cloud.projectionDigest() == counted)
        let refused = try #require(throws: CloudError.self) {
            try harness.cloud.setPopularity(.ldp(roomy), app: AppID("com.example.nobody"))
        }
        #expect(refused.code == .invalidOption && refused.message.contains("not registered"))
    }

    @Test func aSnapshotKeepsTheModeAndTheSketch() throws {
        let harness = try SyncHarness(threshold: 2)
        try harness.cloud.setPopularity(.ldp(roomy), app: app)
        let device = try Attacker(harness)
        #expect(device.send(reports(10, of: hash("soup"), roomy, seed: 10)) == .accepted(messages: 10))
        let directory = try ScratchDirectory.make("sightline-ldp")
        let snapshot = directory.appendingPathComponent("cloud.snap").path
        try harness.cloud.snapshot(to: snapshot)
        let restoredPath = directory.appendingPathComponent("restored.sqlite").path
        _ = try CloudIndex.restore(snapshot: snapshot, to: restoredPath)
        let restored = try CloudIndex(at: .file(restoredPath))
        #expect(try restored.popularity(app: app) == .ldp(roomy))
        #expect(try restored.sketchCells(app: app).map(\.cell) == harness.cloud.sketchCells(app: app).map(\.cell))
        #expect(try restored.projectionDigest() == harness.cloud.projectionDigest())
    }

    /// A store someone edited: the mode is outside bytes too. Reading it,
    /// ingest and a restore of a snapshot of it each refuse it, and say
    /// where.
    @Test(arguments: [
        ("garbage", Data([7, 1, 2])),
        ("the exact mode as bytes", Data([0])),
        ("an ε above 20", Data([1, 0xA1, 0x9C, 0x01, 0xA1, 0x9C, 0x01, 16, 0x80, 0x02])),
        ("a trailing byte", Data(PopularityMode.ldp(try! PrivatePopularity(epsilonThousandths: 4_000, dailyBudgetThousandths: 8_000,
                                                                            hashes: 16, buckets: 256)).encoded + [0])),
    ]) func anEditedModeIsRefusedWhereverItIsRead(label: String, bytes: Data) throws {
        let directory = try ScratchDirectory.make("sightline-ldp-edit")
        let path = directory.appendingPathComponent("cloud.sqlite").path
        let harness = try SyncHarness(threshold: 2, location: .file(path))
        try harness.cloud.setPopularity(.ldp(roomy), app: app)
        let device = try Attacker(harness)
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in try db.execute(sql: "UPDATE apps SET popularity = ?", arguments: [bytes]) }
        try queue.close()
        let error = try #require(throws: CloudError.self, "\(label)") { try harness.cloud.popularity(app: app) }
        #expect(error.code == .corruptStore && error.message.contains("apps.popularity of \(app)"))
        guard case .rejected(let refusal) = device.send([.vote(hash("soup"), token(1))]) else {
            Issue.record("\(label): a frame was taken by a store whose mode does not read")
            return
        }
        #expect(refusal.code == .unavailable && refusal.message.contains("apps.popularity"), "\(label): \(refusal)")
        let snapshot = directory.appendingPathComponent("cloud.snap").path
        try harness.cloud.snapshot(to: snapshot)
        let restored = directory.appendingPathComponent("restored.sqlite").path
        let restore = try #require(throws: CloudError.self, "\(label)") { try CloudIndex.restore(snapshot: snapshot, to: restored) }
        #expect(restore.code == .snapshot && restore.message.contains("apps.popularity"), "\(label): \(restore.message)")
        #expect(!FileManager.default.fileExists(atPath: restored))
    }

    /// Devices learn the mode from their acks and report privately from then
    /// on: the cloud learns which item is engaged most without any exact
    /// count, and both sides' projections equal their rebuilds.
    @Test(arguments: Backend.allCases) func devicesLearnTheModeInAcksAndTheirReportsRankThePublicIndex(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        let settings = try PrivatePopularity(epsilonThousandths: 4_000, dailyBudgetThousandths: 16_000, hashes: 16, buckets: 256)
        try harness.cloud.setPopularity(.ldp(settings), app: app)
        let stores = try (0..<6).map { _ in try harness.addDevice() }
        let soupURL = "https://recipes.example.com/soup", chipsURL = "https://recipes.example.com/chips"
        for (index, store) in stores.enumerated() {
            try store.record(publicRecipe(url: soupURL, id: "soup"))
            try store.record(publicRecipe(url: chipsURL, id: "chips"))
            try store.recordEngaged(ref: soupURL)
            if index < 2 { try store.recordEngaged(ref: chipsURL) }
        }
        #expect(try stores.allSatisfy { try $0.popularityMode() == .exact }, "nothing heard yet")
        var learned: [PopularityMode?] = []
        for store in stores {
            var run = try store.beginSync()
            var action = try store.perform(run.next(now: harness.clock.now()), in: &run, now: harness.clock.now())
            while case .send(let frame) = action {
                let reply = harness.deliver(frame.encoded).reply
                action = try store.perform(run.received(reply, now: harness.clock.now()), in: &run, now: harness.clock.now())
            }
            guard case .finished(let report) = action else { throw HarnessError("the sync did not finish") }
            learned.append(report.popularityLearned)
        }
        #expect(learned == Array(repeating: .ldp(settings), count: 6), "every first ack announces the mode")
        #expect(try stores.allSatisfy { try $0.popularityMode() == .ldp(settings) })
        // From now on engagements leave as reports: soup four more times on
        // every device (the day's budget holds four), chips on none.
        for store in stores { for _ in 0..<4 { try store.recordEngaged(ref: soupURL) } }
        try harness.syncAll()
        #expect(try harness.cloud.stats().reports == 24)
        let index = try harness.cloud.publicIndex(app: app)
        #expect(index.count == 2)
        #expect(index.first?.content?.webpageURL == soupURL, "\(index.map { ($0.content?.webpageURL, $0.estimatedEngaged) })")
        let soupEstimate = try #require(index.first?.estimatedEngaged)
        #expect(abs(soupEstimate - 24) < 12, "24 reports of soup estimate to \(soupEstimate)")
        let soupEntry = try #require(index.first)
        #expect(soupEntry.popularity.engaged == 6, "only the engagements before the mode was learned were exact signals")
        #expect(try harness.cloud.projectionDigest() == harness.cloud.rebuiltProjectionDigest())
        for store in stores { #expect(try store.projectionDigest() == store.rebuiltProjectionDigest()) }
    }
}
