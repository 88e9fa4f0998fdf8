import IndexModel
import Testing
@testable import SyncWire

private let key: [UInt8] = Array(repeating: 3, count: 32)
private let t0 = Timestamp(millisecondsSince1970: 1_800_000_000_000)

private func outbox(_ count: Int, epoch: UInt64 = 1, from seq: UInt64 = 1, size: Int = 1) -> [OutboxRecord] {
    (0..<count).map { index in
        let hash = PublicHash.of(app: AppID("app"), activityType: "t", identity: "title:\(index)")
        let message = OutboxMessage.content(hash, PublicContent(activityType: "t", title: String(repeating: "w", count: size),
                                                                keywords: [], contentDescription: nil, webpageURL: nil))
        return OutboxRecord(position: OutboxPosition(epoch: Epoch(epoch), seq: OutboxSeq(seq + UInt64(index))), message: message)
    }
}

/// Signals from seq 1 for three hashes in turn: after the first three,
/// each lists a hash listed before.
private func relisting(_ count: Int) -> [OutboxRecord] {
    (0..<count).map { index in
        let hash = PublicHash.of(app: AppID("app"), activityType: "t", identity: "title:\(index % 3)")
        return OutboxRecord(position: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(1 + UInt64(index))),
                            message: .signal(hash, Popularity(views: 1)))
    }
}

/// The reply's bytes as the cloud sends them to the uploader's frame in flight.
private func answer(_ reply: CloudReply, _ uploader: Uploader, key signingKey: [UInt8]? = key) -> [UInt8] {
    guard case .awaitingReply(let frame) = uploader.state else { return reply.encoded(device: DeviceID("d1"), answering: nil, key: signingKey) }
    return reply.encoded(device: DeviceID("d1"), answering: frame.signature, key: signingKey)
}

private func ack(for uploader: Uploader, _ seq: UInt64, durable: UInt64? = nil, requests: [PublicHash] = [],
                 popularity: PopularityMode = .exact, key signingKey: [UInt8]? = key) -> [UInt8] {
    answer(CloudReply.ack(Ack(acceptedThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(seq)),
                              durableThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(durable ?? seq)),
                              backedUpThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(durable ?? seq)), contentRequests: requests,
                              popularity: popularity)),
           uploader, key: signingKey)
}

private func makeUploader(_ configuration: UploaderConfiguration = UploaderConfiguration()) -> Uploader {
    Uploader(app: AppID("app"), device: DeviceID("d1"), key: key, acknowledged: .start, durable: .start, configuration: configuration)
}

@Suite struct UploaderTests {
    @Test func framesAreCutByCountAndByBytes() throws {
        var byCount = makeUploader(UploaderConfiguration(maximumMessages: 10))
        let firstSent = byCount.nextFrame(now: t0, pending: outbox(25))

        let first = try #require(firstSent)
        #expect(first.count == 10)

        var byBytes = makeUploader(UploaderConfiguration(maximumPayloadBytes: 2_000))
        let records = outbox(25, size: 500)
        let frameSent = byBytes.nextFrame(now: t0, pending: records)

        let frame = try #require(frameSent)
        #expect(frame.uncompressedLength <= 2_000 && frame.count == 3)

        var huge = makeUploader(UploaderConfiguration(maximumPayloadBytes: 100))
        #expect(huge.nextFrame(now: t0, pending: records)?.count == 1, "one message always fits")
    }

    /// The device hears the app's popularity mode in every ack, and the
    /// uploader hands it over only when it is not the one the device holds.
    @Test func anAckThatChangesThePopularityModeHandsItOver() throws {
        let settings = try PrivatePopularity(epsilonThousandths: 4_000, dailyBudgetThousandths: 8_000, hashes: 64, buckets: 1024)
        var uploader = makeUploader(UploaderConfiguration(maximumMessages: 2))
        func changed(_ effects: [UploadEffect]) -> [PopularityMode] {
            effects.compactMap { if case .popularityChanged(let mode) = $0 { mode } else { nil } }
        }
        #expect(uploader.nextFrame(now: t0, pending: outbox(6)) != nil)
        #expect(changed(uploader.receive(ack(for: uploader, 2), now: t0)) == [])
        #expect(uploader.nextFrame(now: t0, pending: Array(outbox(6).dropFirst(2))) != nil)
        #expect(changed(uploader.receive(ack(for: uploader, 4, popularity: .ldp(settings)), now: t0)) == [.ldp(settings)])
        #expect(uploader.popularity == .ldp(settings))
        #expect(uploader.nextFrame(now: t0, pending: Array(outbox(6).dropFirst(4))) != nil)
        #expect(changed(uploader.receive(ack(for: uploader, 6, popularity: .ldp(settings)), now: t0)) == [],
                "a mode heard already is not handed over again")
    }

    @Test func anAckAdvancesTheCursorAndHandsOverContentRequests() throws {
        var uploader = makeUploader(UploaderConfiguration(maximumMessages: 4))
        let sent = uploader.nextFrame(now: t0, pending: outbox(6))

        _ = try #require(sent)
        #expect(uploader.nextFrame(now: t0, pending: outbox(6)) == nil, "one frame in flight at a time")
        let requested = PublicHash.of(app: AppID("app"), activityType: "t", identity: "title:x")
        let effects = uploader.receive(ack(for: uploader, 4, durable: 2, requests: [requested]), now: t0)
        #expect(effects.contains(.durable(through: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(2)))))
        #expect(effects.contains(.contentRequested([requested])))
        #expect(uploader.acknowledged == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(4)))
        let nextSent = uploader.nextFrame(now: t0, pending: Array(outbox(6).dropFirst(4)))

        let next = try #require(nextSent)
        #expect(next.first == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(5)) && next.last == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(6)))
    }

    @Test func messagesAreDroppableOnlyOnceDurableAndBackedUp() throws {
        var uploader = makeUploader()
        let sent = uploader.nextFrame(now: t0, pending: outbox(5))
        _ = try #require(sent)
        let reply = CloudReply.ack(Ack(acceptedThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(5)), durableThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(5)),
                                       backedUpThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(2))))
        let effects = uploader.receive(answer(reply, uploader), now: t0)
        #expect(effects.contains(.durable(through: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(2)))))
        #expect(uploader.durable == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(2)) && uploader.acknowledged == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(5)))
    }

    @Test func anUnknownOutcomeResendsTheSameFrameAfterAGrowingBackoff() throws {
        var uploader = makeUploader(UploaderConfiguration(initialBackoffMilliseconds: 100, maximumBackoffMilliseconds: 1_000,
                                                          jitterSeed: 42))
        let frameSent = uploader.nextFrame(now: t0, pending: outbox(3))

        let frame = try #require(frameSent)
        var now = t0
        var delays: [Int64] = []
        for _ in 0..<6 {
            let effects = uploader.failed(now: now, reason: "timeout")
            guard case .retryScheduled(let at, _, _) = effects.first else {
                Issue.record("expected a retry, got \(effects)")
                return
            }
            delays.append(at.millisecondsSince1970 - now.millisecondsSince1970)
            #expect(uploader.nextFrame(now: at.adding(milliseconds: -1), pending: outbox(3)) == nil, "not before the backoff ends")
            now = at
            #expect(uploader.nextFrame(now: now, pending: outbox(3)) == frame, "the same frame, byte for byte")
        }
        // Ceilings 100, 200, 400, 800, 1000, 1000; each delay lies in the upper half of its ceiling.
        for (delay, ceiling) in zip(delays, [100, 200, 400, 800, 1_000, 1_000] as [Int64]) {
            #expect(delay >= ceiling / 2 && delay <= ceiling, "\(delays)")
        }
        var replay = makeUploader(uploader.configuration)
        _ = replay.nextFrame(now: t0, pending: outbox(3))
        guard case .retryScheduled(let at, _, _) = replay.failed(now: t0, reason: "timeout").first else { return }
        #expect(at.millisecondsSince1970 - t0.millisecondsSince1970 == delays[0], "the same seed gives the same jitter")
    }

    @Test func aBackoffEndsOnTimeWhenTheClockWentBack() throws {
        var uploader = makeUploader(UploaderConfiguration(initialBackoffMilliseconds: 1_000, maximumBackoffMilliseconds: 5_000))
        let sent = uploader.nextFrame(now: t0, pending: outbox(3))
        let frame = try #require(sent)
        guard case .retryScheduled(let at, _, _) = uploader.failed(now: t0, reason: "timeout").first else {
            Issue.record("expected a retry")
            return
        }
        let ordinary = uploader.wakeTime(now: t0)
        #expect(ordinary == at, "an ordinary backoff keeps its end")

        // The device's clock jumps back ten minutes: the backoff ends at most
        // the longest backoff from the new time, not ten minutes later.
        let back = t0.adding(milliseconds: -600_000)
        let woke = uploader.wakeTime(now: back)
        let wake = try #require(woke)
        #expect(wake == back.adding(milliseconds: 5_000))
        let early = uploader.nextFrame(now: back.adding(milliseconds: 4_999), pending: outbox(3))
        #expect(early == nil)
        let again = uploader.nextFrame(now: wake, pending: outbox(3))
        #expect(again == frame, "the same frame goes again")
    }

    @Test func aReplyNotSignedByTheCloudIsTreatedAsNoReply() throws {
        var uploader = makeUploader()
        let sent = uploader.nextFrame(now: t0, pending: outbox(3))

        _ = try #require(sent)
        let effects = uploader.receive(ack(for: uploader, 3, key: Array(repeating: 9, count: 32)), now: t0)
        guard case .retryScheduled = effects.first else {
            Issue.record("a forged ack must not move the cursor: \(effects)")
            return
        }
        #expect(uploader.acknowledged == .start)
    }

    /// An ack is bound to the frame it answers: an old signed ack replayed
    /// (or delayed) while a later frame is in flight changes nothing, and
    /// the frame goes again as after no reply.
    @Test func aReplayedAckForAnotherFrameDoesNotMoveTheCursors() throws {
        var uploader = makeUploader(UploaderConfiguration(maximumMessages: 2))
        let firstSent = uploader.nextFrame(now: t0, pending: outbox(6))
        _ = try #require(firstSent)
        let firstAck = ack(for: uploader, 2, durable: 1)
        #expect(uploader.receive(firstAck, now: t0).contains(.durable(through: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(1)))))
        let secondSent = uploader.nextFrame(now: t0, pending: Array(outbox(6).dropFirst(2)))
        let second = try #require(secondSent)

        let effects = uploader.receive(firstAck, now: t0)
        guard case .retryScheduled(_, _, let reason)? = effects.first else {
            Issue.record("a replayed ack must be ignored: \(effects)")
            return
        }
        #expect(reason.contains("another frame"))
        #expect(uploader.acknowledged == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(2)) && uploader.durable == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(1)))
        let forged = CloudReply.ack(Ack(acceptedThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(6)), durableThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(6)),
                                        backedUpThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(6))))
        guard case .backingOff(let waiting, let until) = uploader.state else {
            Issue.record("expected a backoff, got \(uploader.state)")
            return
        }
        #expect(waiting == second)
        #expect(uploader.nextFrame(now: until, pending: Array(outbox(6).dropFirst(2))) == second, "the same frame goes again")
        let stale = forged.encoded(device: DeviceID("d1"), answering: firstSent?.signature, key: key)
        guard case .retryScheduled(let again, _, _)? = uploader.receive(stale, now: until).first else {
            Issue.record("a signed ack naming another frame must be ignored")
            return
        }
        #expect(uploader.acknowledged == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(2)), "a signed ack naming another frame moves nothing")
        #expect(uploader.nextFrame(now: again, pending: Array(outbox(6).dropFirst(2))) == second)
        #expect(uploader.receive(answer(forged, uploader), now: again).contains(.durable(through: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(6)))),
                "the answer to the frame in flight is taken")
    }

    @Test func aGapRewindsToTheExpectedPosition() throws {
        var uploader = makeUploader()
        let sent = uploader.nextFrame(now: t0, pending: outbox(5))

        _ = try #require(sent)
        let gap = CloudReply.rejection(Rejection(WireError(.gap, "expected 1:3"), expected: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(3))))
        let effects = uploader.receive(answer(gap, uploader), now: t0)
        #expect(effects == [.rewound(to: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(2)), reason: "expected 1:3")])
        let resentSent = uploader.nextFrame(now: t0, pending: Array(outbox(5).dropFirst(2)))

        let resent = try #require(resentSent)
        #expect(resent.first == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(3)))
    }


    @Test func aGapThatEndsTheFramesEpochSaysWhereItEnded() throws {
        var uploader = makeUploader()
        let sent = uploader.nextFrame(now: t0, pending: outbox(5))
        _ = try #require(sent)
        let gap = CloudReply.rejection(Rejection(WireError(.gap, "ended"), expected: OutboxPosition(epoch: Epoch(9), seq: OutboxSeq(3)),
                                                 ended: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(2))))
        let effects = uploader.receive(answer(gap, uploader), now: t0)
        #expect(effects == [.epochEnded(held: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(2)), cloudHead: OutboxPosition(epoch: Epoch(9), seq: OutboxSeq(2)), reason: "ended")])
        #expect(uploader.acknowledged == OutboxPosition(epoch: Epoch(9), seq: OutboxSeq(2)))
    }

    /// A cloud that asks for a position below the durable watermark was
    /// restored from an older backup: it has not backed up more than it
    /// holds, so the watermark comes down and the device keeps what it resends.
    @Test func aGapBelowTheDurableWatermarkLowersIt() throws {
        var uploader = makeUploader()
        let first = uploader.nextFrame(now: t0, pending: outbox(8))
        #expect(first != nil)
        let acked = uploader.receive(ack(for: uploader, 8, durable: 6), now: t0)
        #expect(acked.contains(.durable(through: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(6)))))
        let second = uploader.nextFrame(now: t0, pending: outbox(2, from: 9))
        #expect(second != nil)
        let gap = CloudReply.rejection(Rejection(WireError(.gap, "expected 1:4"), expected: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(4))))
        _ = uploader.receive(answer(gap, uploader), now: t0)
        #expect(uploader.acknowledged == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(3)))
        #expect(uploader.durable == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(3)))
    }
    @Test func aPermanentRejectionStopsTheUploader() throws {
        for code in [WireError.Code.badSignature, .equivocation, .tooLarge, .malformed, .refused] {
            var uploader = makeUploader()
            let sent = uploader.nextFrame(now: t0, pending: outbox(2))

            _ = try #require(sent)
            let rejection = CloudReply.rejection(Rejection(WireError(code, "no")))
            #expect(uploader.receive(answer(rejection, uploader), now: t0) == [.stopped(WireError(code, "no"))])
            #expect(uploader.nextFrame(now: t0.adding(milliseconds: 1_000_000), pending: outbox(2)) == nil)
        }
    }

    @Test func rateLimitingAndAnUnavailableCloudAreRetriedNotFatal() throws {
        for code in [WireError.Code.rateLimited, .unavailable] {
            var uploader = makeUploader()
            let sent = uploader.nextFrame(now: t0, pending: outbox(2))
            let frame = try #require(sent)
            let rejection = CloudReply.rejection(Rejection(WireError(code, "later")))
            guard case .retryScheduled(let at, _, _) = uploader.receive(answer(rejection, uploader), now: t0).first else {
                Issue.record("\(code) was not retried")
                continue
            }
            #expect(uploader.nextFrame(now: at, pending: outbox(2)) == frame)
        }
    }

    /// Each frame after an acknowledged one is deflated against the hashes
    /// the acknowledged frames listed, and names that dictionary.
    @Test func afterAnAckTheNextFrameIsDeflatedAgainstTheHashesAcknowledgedFramesListed() throws {
        var uploader = makeUploader(UploaderConfiguration(maximumMessages: 3))
        let records = relisting(6)
        let firstSent = uploader.nextFrame(now: t0, pending: records)
        let first = try #require(firstSent)
        #expect(first.base == nil, "the run's first frame is deflated alone")
        _ = uploader.receive(ack(for: uploader, 3), now: t0)
        let expected = try FrameDictionary.empty.following(FramePayload.encode(records.prefix(3).map(\.encoded)))
        #expect(uploader.dictionary == expected && expected.hashCount == 3)
        let secondSent = uploader.nextFrame(now: t0, pending: Array(records.dropFirst(3)))
        let second = try #require(secondSent)
        #expect(second.base == expected.digest)
        #expect(try UploadFrame.parse(second.encoded).messages(dictionary: expected).map(\.encoded) == records.dropFirst(3).map(\.encoded))
    }

    @Test func anUnknownDictionarySendsTheSameMessagesAgainDeflatedAlone() throws {
        var uploader = makeUploader(UploaderConfiguration(maximumMessages: 3))
        let records = relisting(6)
        #expect(uploader.nextFrame(now: t0, pending: records) != nil)
        _ = uploader.receive(ack(for: uploader, 3), now: t0)
        let basedSent = uploader.nextFrame(now: t0, pending: Array(records.dropFirst(3)))
        let based = try #require(basedSent)
        #expect(based.base != nil)
        let rejection = CloudReply.rejection(Rejection(WireError(.unknownBase, "not held")))
        #expect(uploader.receive(answer(rejection, uploader), now: t0) == [.dictionaryUnknown(reason: "not held")])
        #expect(uploader.dictionary == .empty && uploader.acknowledged == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(3)))
        let aloneSent = uploader.nextFrame(now: t0, pending: Array(records.dropFirst(3)))
        let alone = try #require(aloneSent, "sent again at once")
        #expect(alone.base == nil && alone.first == based.first && alone.last == based.last)
        #expect(try alone.messages().map(\.encoded) == records.dropFirst(3).map(\.encoded))
    }

    @Test func anUnknownDictionarySaidOfAFrameDeflatedAloneStopsTheUploader() throws {
        var uploader = makeUploader()
        let sent = uploader.nextFrame(now: t0, pending: outbox(2))
        #expect(sent?.base == nil)
        let rejection = CloudReply.rejection(Rejection(WireError(.unknownBase, "not held")))
        #expect(uploader.receive(answer(rejection, uploader), now: t0) == [.stopped(WireError(.unknownBase, "not held"))])
    }

    @Test func aProbeLeavesTheDictionaryAsItWas() throws {
        var uploader = makeUploader(UploaderConfiguration(maximumMessages: 3))
        let records = outbox(3)
        #expect(uploader.nextFrame(now: t0, pending: records) != nil)
        _ = uploader.receive(ack(for: uploader, 3), now: t0)
        let held = uploader.dictionary
        let probeSent = uploader.probeFrame(now: t0, record: records[2])
        let probe = try #require(probeSent)
        #expect(probe.base == nil, "a probe is deflated alone")
        _ = uploader.receive(ack(for: uploader, 3), now: t0)
        #expect(uploader.dictionary == held)
    }

    @Test func aMissingStretchOfTheOutboxStopsInsteadOfSkipping() throws {
        var uploader = makeUploader()
        #expect(uploader.nextFrame(now: t0, pending: outbox(3, from: 4)) == nil)
        guard case .stopped(let error) = uploader.state else {
            Issue.record("expected a stop, got \(uploader.state)")
            return
        }
        #expect(error.message.contains("already dropped"))
    }

    @Test func aNewEpochStartsAfterTheLastAcknowledgedOne() throws {
        var uploader = Uploader(app: AppID("app"), device: DeviceID("d1"), key: key, acknowledged: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(7)),
                                durable: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(7)))
        let pending = outbox(2, epoch: 1, from: 8) + outbox(3, epoch: 2, from: 1)
        let frameSent = uploader.nextFrame(now: t0, pending: pending)

        let frame = try #require(frameSent)
        #expect(frame.count == 2 && frame.epoch == .first, "a frame never spans two epochs")
    }
}

/// The sync run as a pure machine: every test drives it by hand, as the
/// device store and a transport would.
@Suite struct SyncRunTests {
    private func run(probe: OutboxRecord? = nil, maximumAttempts: Int = 8) -> SyncRun {
        SyncRun(uploader: makeUploader(UploaderConfiguration(maximumMessages: 10)), probe: probe, maximumAttempts: maximumAttempts)
    }

    @Test func aRunAsksForTheOutboxAfterItsCursorThenSendsWhatItRead() throws {
        var machine = run()
        #expect(machine.next(now: t0) == .readOutbox(after: .start, limit: 10))
        guard case .send(let frame) = machine.outboxRead(outbox(3), now: t0) else {
            Issue.record("no frame for three pending records"); return
        }
        #expect(frame.first == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(1)) && frame.last == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(3)))
        #expect(machine.report.framesSent == 1)
    }

    @Test func aReplyIsPersistedBeforeTheRunGoesOn() throws {
        var machine = run()
        _ = machine.next(now: t0)
        _ = machine.outboxRead(outbox(3), now: t0)
        let hash = PublicHash.of(app: AppID("app"), activityType: "t", identity: "wanted")
        let action = machine.received(ack(for: machine.uploader, 3, durable: 2, requests: [hash]), now: t0)
        let through = OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(3)), durable = OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(2))
        guard case .persist(let effects, let acknowledged, let watermark) = action else {
            Issue.record("an ack was not handed to the store: \(action)"); return
        }
        #expect(acknowledged == through && watermark == durable)
        #expect(effects.contains(.contentRequested([hash])) && effects.contains(.durable(through: durable)))
        #expect(machine.report.messagesAcknowledged == 0, "nothing counts until the store persisted it")
        #expect(machine.persisted(effects, now: t0) == .readOutbox(after: through, limit: 10))
        #expect(machine.report.messagesAcknowledged == 3 && machine.report.contentRequests == 1)
    }

    @Test func withNothingPendingTheRunProbesTheLastAcknowledgedMessage() throws {
        let last = try #require(outbox(1).first)
        var machine = SyncRun(uploader: Uploader(app: AppID("app"), device: DeviceID("d1"), key: key, acknowledged: last.position,
                                                 durable: .start), probe: last)
        guard case .send(let frame) = machine.next(now: t0) else { Issue.record("no probe"); return }
        #expect(frame.isProbe && frame.first == last.position)
        #expect(machine.report.probes == 1 && machine.report.framesSent == 0)
    }

    @Test func anEmptyOutboxEndsTheRun() {
        var machine = run()
        _ = machine.next(now: t0)
        #expect(machine.outboxRead([], now: t0) == .finished(SyncReport()))
        #expect(machine.next(now: t0) == .finished(SyncReport()), "a finished run stays finished")
    }

    @Test func aFailedAttemptWaitsOutItsBackoffThenSendsTheSameFrame() throws {
        var machine = run()
        _ = machine.next(now: t0)
        guard case .send(let frame) = machine.outboxRead(outbox(2), now: t0) else { Issue.record("no frame"); return }
        guard case .wait(let until) = machine.failed(reason: "timeout", now: t0) else { Issue.record("no backoff"); return }
        #expect(until > t0)
        #expect(machine.next(now: until) == .send(frame))
        #expect(machine.report.retries == 1)
    }

    @Test func aRunGivesUpAfterItsAttemptsAndSaysWhere() throws {
        var machine = run(maximumAttempts: 2)
        _ = machine.next(now: t0)
        _ = machine.outboxRead(outbox(2), now: t0)
        guard case .wait(let until) = machine.failed(reason: "timeout", now: t0) else { Issue.record("no backoff"); return }
        _ = machine.next(now: until)
        guard case .finished(let report) = machine.failed(reason: "timeout", now: until) else {
            Issue.record("the run went on after its last attempt"); return
        }
        #expect(report.failure?.contains("gave up after 2 attempts") == true, "\(report.failure ?? "")")
    }

    @Test func aPermanentRejectionEndsTheRunWithTheCloudsReason() throws {
        var machine = run()
        _ = machine.next(now: t0)
        _ = machine.outboxRead(outbox(2), now: t0)
        guard case .persist(let effects, _, _) = machine.received(
            answer(.rejection(Rejection(WireError(.refused, "no such app"))), machine.uploader), now: t0) else {
            Issue.record("a rejection was not handed over"); return
        }
        guard case .finished(let report) = machine.persisted(effects, now: t0) else { Issue.record("the run went on"); return }
        #expect(report.failure?.contains("no such app") == true)
    }
}
