import CloudCore
import CloudSQLite
import DeviceStore
import Foundation
import GRDB
import IndexModel
import SyncWire
import Testing

/// A device that visited four public recipes, each engaged (a vote and a
/// signal each), then engaged each three times more: with `twoAFrame`, four
/// frames that each list a new hash, then six that list hashes listed
/// before.
private func busyDevice(_ harness: SyncHarness) throws -> DeviceStore {
    let store = try harness.addDevice()
    let urls = (0..<4).map { "https://www.yummly.com/recipe/dictionary-\($0)" }
    for (index, url) in urls.enumerated() {
        try store.record(publicRecipe(url: url, id: "r\(index)"))
        try store.recordEngaged(ref: url)
    }
    for _ in 0..<3 {
        for url in urls { try store.recordEngaged(ref: url) }
    }
    return store
}

/// The frames of `busyDevice`.
private let busyFrames = 10

private let twoAFrame = UploaderConfiguration(maximumMessages: 2)

private func sentFrames(_ harness: SyncHarness) throws -> [UploadFrame] {
    try stride(from: 0, to: harness.wire.count, by: 2).map { try UploadFrame.parse(harness.wire[$0]) }
}

@Suite struct FrameDictionaryIngestTests {
    @Test(arguments: Backend.allCases)
    func framesAfterTheFirstAreDeflatedAgainstTheDictionaryAndLoggedDeflatedAlone(backend: Backend) throws {
        let harness = try SyncHarness(backend: backend)
        let store = try busyDevice(harness)
        let results = try harness.sync(store, configuration: twoAFrame)
        #expect(results.count > 2 && results.allSatisfy { if case .accepted = $0.outcome { true } else { false } })
        let frames = try sentFrames(harness)
        #expect(frames.count == busyFrames && frames.first?.base == nil)
        #expect(frames.dropFirst().allSatisfy { $0.base != nil }, "every frame after the first names the dictionary")
        #expect(try store.syncStatus().pending == 0)
        // The log's rows read alone: verifying inflates each without a dictionary.
        let verification = try harness.cloud.verifyLog()
        #expect(verification.isValid && verification.verifiedRows == frames.count, "\(verification.firstProblem ?? "")")
        #expect(try harness.cloud.rebuiltProjectionDigest() == harness.cloud.projectionDigest())
    }

    /// A cloud that holds no dictionary makes each one again from the
    /// device's newest log rows: every frame is taken the first time, and
    /// the cloud ends as one that held them all.
    @Test(arguments: Backend.allCases)
    func aCloudThatHoldsNoDictionaryRecoversEachFromTheLogAndEndsTheSame(backend: Backend) throws {
        let holding = try SyncHarness(backend: backend)
        try holding.sync(try busyDevice(holding), configuration: twoAFrame)
        let forgetting = try SyncHarness(backend: backend, frameDictionaryBytes: 0)
        let store = try busyDevice(forgetting)
        let results = try forgetting.sync(store, configuration: twoAFrame)
        #expect(results.count == busyFrames && results.allSatisfy { if case .accepted = $0.outcome { true } else { false } },
                "\(results.map(\.outcome))")
        let recoveries = forgetting.cloud.frameDictionaries.recoveries
        #expect(recoveries.recovered == busyFrames - 1 && recoveries.unrecovered == 0)
        #expect(holding.cloud.frameDictionaries.recoveries.recovered == 0)
        #expect(try store.syncStatus().pending == 0)
        #expect(forgetting.cloud.frameDictionaries.heldBytes == 0)
        #expect(try forgetting.cloud.projectionDigest() == holding.cloud.projectionDigest())
        #expect(try forgetting.cloud.stats().logRows == holding.cloud.stats().logRows)
    }

    /// A payload may be 16 MiB: a recovery reads only the newest rows whose
    /// uncompressed lengths fit in its budget together.
    @Test(arguments: Backend.allCases)
    func aRecoveryReadsOnlyTheNewestRowsThatFitItsBudget(backend: Backend) throws {
        let harness = try SyncHarness(backend: backend)
        let store = try busyDevice(harness)
        try harness.sync(store, configuration: twoAFrame)
        func newest(_ limit: Int, within bytes: Int) throws -> [[UInt8]] {
            try harness.cloud.newestLoggedPayloads(app: app, device: store.deviceID, limit: limit, maximumBytes: bytes)
        }
        let all = try newest(64, within: FrameDictionaries.recoveryBytes)
        #expect(all.count == busyFrames)
        #expect(try newest(3, within: FrameDictionaries.recoveryBytes) == Array(all.prefix(3)))
        #expect(try newest(64, within: all[0].count + all[1].count) == Array(all.prefix(2)))
        #expect(try newest(64, within: all[0].count - 1).isEmpty)
        #expect(FrameDictionaries.rows([10, 20, 30], within: 30) == 2)
        #expect(FrameDictionaries.rows([10, -1, 5], within: 100) == 1, "a length no payload has ends the rows read")
        #expect(FrameDictionaries.rows([Int64(WireLimits.maximumPayloadBytes) + 1], within: .max) == 0)
    }

    @Test(arguments: Backend.allCases)
    func aFrameNamingADictionaryTheCloudDoesNotHoldIsRefusedWithASignedReplyAndChangesNothing(backend: Backend) throws {
        let harness = try SyncHarness(backend: backend)
        let (store, key, records) = try votedThenEngaged(harness)
        // The cloud holds [recipe] (the first frame's one hash) for the device.
        let other = OutboxRecord(position: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(1)),
                                 message: .signal(recipeHash(url: "https://example.com/other"), Popularity(views: 1)))
        let unheld = try FrameDictionary.empty.following(FramePayload.encode([other.encoded] + records.map(\.encoded)))
        let frame = UploadFrame(app: app, device: store.deviceID, records: records, key: key, dictionary: unheld)
        let digest = try harness.cloud.projectionDigest()
        let result = harness.deliver(frame.encoded)
        guard case .rejected(let error) = result.outcome else {
            Issue.record("a frame the cloud cannot inflate was taken: \(result.outcome)")
            return
        }
        #expect(error.code == .unknownBase && error.message.contains("cannot make from the device's newest log rows (1 read)")
                && error.message.contains("deflated alone"), "\(error)")
        let recoveries = harness.cloud.frameDictionaries.recoveries
        #expect(recoveries.recovered == 0 && recoveries.unrecovered == 1)
        let reply = try CloudReply.decode(result.reply, device: store.deviceID, key: key)
        #expect(reply.isAuthentic && reply.isAnswer(to: frame))
        #expect(try harness.cloud.projectionDigest() == digest && harness.cloud.stats().logRows == 1)
    }

    /// A frame that names a dictionary the cloud holds but does not inflate
    /// to its digest against it (damaged, or deflated against another of
    /// the same name) is answered `unknownBase`: deflated alone it reads.
    @Test func aFrameThatDoesNotInflateAgainstItsDictionaryIsSentAgainAlone() throws {
        let harness = try SyncHarness()
        let store = try busyDevice(harness)
        let now = harness.clock.now()
        var run = try store.beginSync(configuration: twoAFrame)
        var action = try store.perform(run.next(now: now), in: &run, now: now)
        guard case .send(let first) = action else { throw HarnessError("no first frame: \(action)") }
        action = try store.perform(run.received(harness.deliver(first.encoded).reply, now: now), in: &run, now: now)
        guard case .send(let second) = action, second.base != nil else { throw HarnessError("no frame named a dictionary: \(action)") }
        var damaged = second.encoded
        damaged[damaged.count - 1] ^= 0x40
        let result = harness.deliver(damaged)
        guard case .rejected(let error) = result.outcome else {
            Issue.record("a damaged frame was taken: \(result.outcome)")
            return
        }
        #expect(error.code == .unknownBase && error.message.contains("does not inflate against dictionary"), "\(error)")
        action = try store.perform(run.received(result.reply, now: now), in: &run, now: now)
        guard case .send(let alone) = action else { throw HarnessError("the messages were not sent again: \(action)") }
        #expect(alone.base == nil && alone.first == second.first)
        #expect(harness.deliver(alone.encoded).outcome == .accepted(messages: 2))
    }

    /// The ack of a frame deflated against a dictionary is lost; the device
    /// sends the same frame again, and the cloud, which already moved on to
    /// the next dictionary, still holds the one before.
    @Test(arguments: Backend.allCases)
    func aFrameRetriedAfterItsAckWasLostStillFindsItsDictionary(backend: Backend) throws {
        let harness = try SyncHarness(backend: backend)
        let store = try busyDevice(harness)
        let now = harness.clock.now()
        var run = try store.beginSync(configuration: twoAFrame)
        var action = try store.perform(run.next(now: now), in: &run, now: now)
        // The frames of new hashes go through; the first that names a
        // dictionary is the one whose ack is lost.
        while case .send(let frame) = action, frame.base == nil {
            action = try store.perform(run.received(harness.deliver(frame.encoded).reply, now: now), in: &run, now: now)
        }
        guard case .send(let second) = action else { throw HarnessError("no frame named a dictionary: \(action)") }
        #expect(harness.deliver(second.encoded).outcome == .accepted(messages: 2))
        action = try store.perform(run.failed(reason: "the ack was lost", now: now), in: &run, now: now)
        guard case .wait(let until) = action else { throw HarnessError("no backoff: \(action)") }
        action = try store.perform(run.next(now: until), in: &run, now: until)
        guard case .send(let again) = action else { throw HarnessError("no retry: \(action)") }
        #expect(again == second)
        #expect(harness.deliver(again.encoded).outcome == .duplicate)
    }
}

/// A device syncs in many short runs; the store hands the dictionary of
/// one run to the next.
@Suite struct FrameDictionaryAcrossRunsTests {
    @Test(arguments: Backend.allCases)
    func aLaterSyncRunStartsFromTheDictionaryTheLastOneEndedWith(backend: Backend) throws {
        let harness = try SyncHarness(backend: backend)
        let store = try busyDevice(harness)
        try harness.sync(store)
        #expect(try sentFrames(harness).first?.base == nil)
        try store.recordEngaged(ref: "https://www.yummly.com/recipe/dictionary-1")
        let before = harness.wire.count
        let results = try harness.sync(store)
        let later = try UploadFrame.parse(harness.wire[before])
        #expect(later.base != nil, "the next run's first frame names the dictionary")
        #expect(results.map(\.outcome) == [.accepted(messages: 1)], "an engagement signal")
        #expect(try harness.cloud.rebuiltProjectionDigest() == harness.cloud.projectionDigest())
    }

    /// A busy device syncs with a cloud in a file and engages once more;
    /// `tamper` gets the file, and the device's next run goes to the cloud
    /// opened again (a restarted process): each frame's outcome, the run's
    /// report and that cloud.
    private func runAfterRestart(tamper: (String) throws -> Void = { _ in }) throws
        -> (outcomes: [IngestResult.Outcome], report: SyncReport, cloud: CloudIndex) {
        let directory = try temporaryDirectory("dictionary-restart")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("cloud.sqlite").path
        let harness = try SyncHarness(location: .file(path))
        let store = try busyDevice(harness)
        try harness.sync(store)
        try store.recordEngaged(ref: "https://www.yummly.com/recipe/dictionary-2")
        try tamper(path)
        let restarted = try CloudIndex(at: .file(path), options: CloudOptions(clock: harness.clock, random: SeededRandom(seed: 7)))
        var run = try store.beginSync()
        var action = try store.perform(run.next(now: harness.clock.now()), in: &run, now: harness.clock.now())
        var outcomes: [IngestResult.Outcome] = []
        while case .send(let frame) = action {
            let result = restarted.ingest(frame.encoded)
            outcomes.append(result.outcome)
            action = try store.perform(run.received(result.reply, now: harness.clock.now()), in: &run, now: harness.clock.now())
        }
        guard case .finished(let report) = action else { throw HarnessError("the run did not finish: \(action)") }
        return (outcomes, report, restarted)
    }

    /// The cloud process restarted between two runs: it holds no
    /// dictionary, and makes the one the device's next frame names from the
    /// log.
    @Test func aCloudThatRestartedBetweenRunsRecoversTheDictionaryFromItsLog() throws {
        let (outcomes, report, restarted) = try runAfterRestart()
        #expect(outcomes == [.accepted(messages: 1)])
        #expect(report.dictionaryResets == 0 && report.failure == nil && report.status?.pending == 0)
        let recoveries = restarted.frameDictionaries.recoveries
        #expect(recoveries.recovered == 1 && recoveries.unrecovered == 0)
    }

    /// A log row someone edited cannot make the dictionary: the refusal
    /// names the row, and the device sends its messages again alone.
    @Test func aLogRowSomeoneEditedIsNamedWhenADictionaryCannotBeRecovered() throws {
        let (outcomes, report, restarted) = try runAfterRestart { path in
            try DatabaseQueue(path: path).write { db in try db.execute(sql: "UPDATE cloud_log SET digest = zeroblob(32)") }
        }
        guard case .rejected(let error) = outcomes.first, outcomes.count == 2 else {
            Issue.record("the frame was not refused once: \(outcomes)")
            return
        }
        #expect(error.code == .unknownBase && error.message.contains("could not recover from its log (app \(app) log seq 1:")
                && error.message.contains("does not match its digest"), "\(error)")
        #expect(outcomes.last == .accepted(messages: 1))
        #expect(report.dictionaryResets == 1 && report.status?.pending == 0)
        let recoveries = restarted.frameDictionaries.recoveries
        #expect(recoveries.recovered == 0 && recoveries.unrecovered == 1)
    }
}

@Suite struct FrameDictionariesTests {
    private func dictionary(_ name: String) throws -> FrameDictionary {
        let hash = PublicHash.of(app: app, activityType: "t", identity: name)
        let record = OutboxRecord(position: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(1)), message: .signal(hash, Popularity(views: 1)))
        return try FrameDictionary.empty.following(FramePayload.encode([record.encoded]))
    }

    @Test func aDeviceKeepsItsTwoNewestDictionaries() throws {
        let held = FrameDictionaries()
        let (a, b, c) = (try dictionary("a"), try dictionary("b"), try dictionary("c"))
        for each in [a, b, c] { held.keep(each, app: app, device: DeviceID("d")) }
        #expect(held.dictionary(app: app, device: DeviceID("d"), digest: a.digest) == nil)
        #expect(held.dictionary(app: app, device: DeviceID("d"), digest: b.digest) == b)
        #expect(held.dictionary(app: app, device: DeviceID("d"), digest: c.digest) == c)
        #expect(held.dictionary(app: app, device: DeviceID("e"), digest: c.digest) == nil, "a device finds only its own")
        #expect(held.heldBytes == 64)
    }

    /// Past the capacity, the devices used longest ago go until three
    /// quarters of it are held.
    @Test func pastItsCapacityTheDevicesUsedLongestAgoGoFirst() throws {
        let held = FrameDictionaries(capacityBytes: 100)
        let names = ["a", "b", "c", "d"]
        let dictionaries = try names.map(dictionary)
        for (name, each) in zip(names, dictionaries).prefix(3) { held.keep(each, app: app, device: DeviceID(name)) }
        #expect(held.dictionary(app: app, device: DeviceID("a"), digest: dictionaries[0].digest) != nil)
        held.keep(dictionaries[3], app: app, device: DeviceID("d"))
        let kept = zip(names, dictionaries).filter { held.dictionary(app: app, device: DeviceID($0.0), digest: $0.1.digest) != nil }.map(\.0)
        #expect(kept == ["a", "d"] && held.heldBytes == 64)
    }
}
