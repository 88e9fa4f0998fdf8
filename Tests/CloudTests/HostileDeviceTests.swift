import CloudCore
import CloudSQLite
import DeviceStore
import Foundation
import GRDB
import IndexModel
import ScratchDirectory
import Snapshot
import SyncWire
import Testing

/// An enrolled device that writes its own frames: every number, message and
/// name is the attacker's choice, signed with the device's real key.
struct Attacker {
    let harness: SyncHarness
    let name: DeviceID
    let key: [UInt8]

    init(_ harness: SyncHarness, name: DeviceID = DeviceID("mallory")) throws {
        self.harness = harness
        self.name = name
        key = try harness.cloud.enrol(app: app, device: name, enrolmentSecret: enrolmentSecret)
    }

    /// Sends `messages` at consecutive positions from `epoch:seq`, signed.
    @discardableResult
    func send(_ messages: [OutboxMessage], epoch: UInt64 = 1, from seq: UInt64 = 1,
              follows: OutboxPosition? = nil) -> IngestResult.Outcome {
        let records = messages.enumerated().map { offset, message in
            OutboxRecord(position: OutboxPosition(epoch: Epoch(epoch), seq: OutboxSeq(seq + UInt64(offset))), message: message)
        }
        return harness.deliver(UploadFrame(app: app, device: name, records: records, key: key, follows: follows).encoded).outcome
    }

    /// `count` devices named `prefix-0`… that each voted for `hash`, with
    /// tokens 1, 2….
    static func voters(_ harness: SyncHarness, _ count: Int, _ prefix: String = "voter", for hash: PublicHash) throws -> [Attacker] {
        try (0..<count).map { index in
            let voter = try Attacker(harness, name: DeviceID("\(prefix)-\(index)"))
            #expect(voter.send([.vote(hash, token(UInt8(index + 1)))]) == .accepted(messages: 1))
            return voter
        }
    }

    /// Sends `messages` like `send` and returns the content requests of the
    /// ack (nil when the reply is no ack).
    func requests(sending messages: [OutboxMessage], from seq: UInt64) -> [PublicHash]? {
        let records = messages.enumerated().map { offset, message in
            OutboxRecord(position: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(seq + UInt64(offset))), message: message)
        }
        let result = harness.deliver(UploadFrame(app: app, device: name, records: records, key: key).encoded)
        guard case .ack(let ack)? = try? CloudReply.decode(result.reply, device: name, key: key).reply else { return nil }
        return ack.contentRequests
    }
}

private func hash(_ name: String) -> PublicHash {
    PublicHash.of(app: app, activityType: "com.example.read", identity: "url:https://example.com/" + name)
}

func token(_ byte: UInt8) -> VoteToken {
    VoteToken([UInt8](repeating: byte, count: VoteToken.byteCount))!
}

/// A path for a cloud store file in a directory removed when the tests end.
private func scratchStore() throws -> String {
    try ScratchDirectory.make("sightline-hostile").appendingPathComponent("cloud.sqlite").path
}

/// What a refused frame must leave as it was.
private struct CloudState: Equatable {
    let logRows: Int
    let projections: String

    init(_ cloud: any CloudStore) throws {
        logRows = try cloud.stats().logRows
        projections = try cloud.projectionDigest()
    }
}

@Suite struct InputBoundaryTests {
    /// Positions near 2^64 parse as varints; the cloud refuses them as
    /// malformed instead of trapping where it stores them as `Int64`.
    @Test(arguments: [
        (UInt64.max - 1, UInt64(1)), (UInt64(1) << 63, UInt64(1)), (UInt64(1), UInt64.max - 10),
        (WireLimits.maximumPosition + 1, UInt64(1)), (UInt64(1), WireLimits.maximumPosition + 1),
    ])
    func aSignedFrameWithAnExtremePositionIsMalformedAndChangesNothing(epoch: UInt64, seq: UInt64) throws {
        let harness = try SyncHarness()
        let attacker = try Attacker(harness)
        attacker.send([.vote(hash("a"), token(1))])
        let before = try CloudState(harness.cloud)
        let outcome = attacker.send([.vote(hash("b"), token(1))], epoch: epoch, from: seq,
                                    follows: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(1)))
        guard case .rejected(let error) = outcome else {
            Issue.record("a frame at \(epoch):\(seq) was accepted")
            return
        }
        #expect(error.code == .malformed && error.message.contains("above the largest position"), "\(error)")
        #expect(try CloudState(harness.cloud) == before)
        #expect(attacker.send([.vote(hash("b"), token(1))], from: 2) == .accepted(messages: 1), "the cloud still ingests")
    }

    @Test(arguments: Backend.allCases) func aFrameThatFollowsAnExtremePositionIsMalformed(backend: Backend) throws {
        let harness = try SyncHarness(backend: backend)
        let attacker = try Attacker(harness)
        let outcome = attacker.send([.vote(hash("a"), token(1))], epoch: 2, follows: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(.max)))
        guard case .rejected(let error) = outcome else {
            Issue.record("accepted")
            return
        }
        #expect(error.code == .malformed && error.message.contains("follows seq"), "\(error)")
        #expect(try harness.cloud.stats().logRows == 0)
    }

    @Test(arguments: Backend.allCases) func aSignalCountAboveTheLimitIsMalformedAndChangesNothing(backend: Backend) throws {
        let harness = try SyncHarness(backend: backend)
        let attacker = try Attacker(harness)
        attacker.send([.vote(hash("a"), token(1))])
        let before = try CloudState(harness.cloud)
        for counts in [Popularity(views: WireLimits.maximumSignalCount + 1), Popularity(shown: .max),
                       Popularity(engaged: 1 << 62)] {
            guard case .rejected(let error) = attacker.send([.signal(hash("a"), counts)], from: 2) else {
                Issue.record("a signal of \(counts) was accepted")
                continue
            }
            #expect(error.code == .malformed && error.message.contains("above \(WireLimits.maximumSignalCount)"), "\(error)")
        }
        #expect(try CloudState(harness.cloud) == before)
    }

    /// A count someone wrote into the store file as a REAL, a NULL, a string
    /// or a number past the cap is a typed error on every read, not a trap.
    @Test(arguments: ["9.5e18", "NULL", "'many'", "-1", "\((1 << 53) + 1)"])
    func anEditedProjectionCountIsACorruptStoreErrorOnRead(value: String) throws {
        let path = try scratchStore()
        do {
            let harness = try SyncHarness(threshold: 1, location: .file(path))
            let attacker = try Attacker(harness)
            attacker.send([.vote(hash("a"), token(1))])
        }
        try DatabaseQueue(path: path).write { db in
            // Dropping NOT NULL needs a table rebuild; writable_schema keeps the test short.
            try db.execute(sql: "PRAGMA writable_schema = ON")
            try db.execute(sql: "UPDATE sqlite_schema SET sql = replace(sql, 'views INTEGER NOT NULL', 'views') WHERE name = 'hashes'")
            try db.execute(sql: "PRAGMA writable_schema = OFF")
        }
        try DatabaseQueue(path: path).write { db in try db.execute(sql: "UPDATE hashes SET views = \(value)") }
        let cloud = try CloudIndex(at: .file(path), options: CloudOptions(readOnly: true))
        let error = try #require(throws: CloudError.self) { try cloud.entries(app: app) }
        #expect(error.code == .corruptStore && error.message.contains("hashes.views"), "\(error)")
        #expect(throws: CloudError.self) { try cloud.entry(app: app, hash: hash("a")) }
        #expect(throws: CloudError.self) { try cloud.search(app: app, text: "") }
    }

    @Test(arguments: [("epoch", "-1"), ("last_seq", "9.5e18"), ("accepted_from", "last_seq + 1"), ("payload", "NULL"),
                      ("uncompressed_length", "1 << 40"), ("device", "x'00ff'")])
    func anEditedLogRowIsReportedByVerificationAndRefusedByARebuild(column: String, value: String) throws {
        let path = try scratchStore()
        do {
            let harness = try SyncHarness(threshold: 1, location: .file(path))
            let attacker = try Attacker(harness)
            attacker.send([.vote(hash("a"), token(1)), .signal(hash("a"), Popularity(views: 2))])
        }
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "PRAGMA writable_schema = ON")
            try db.execute(sql: "UPDATE sqlite_schema SET sql = replace(sql, 'NOT NULL', '') WHERE name = 'cloud_log'")
            try db.execute(sql: "PRAGMA writable_schema = OFF")
        }
        try DatabaseQueue(path: path).write { db in try db.execute(sql: "UPDATE cloud_log SET \(column) = \(value)") }
        let cloud = try CloudIndex(at: .file(path), options: CloudOptions(threshold: 1))
        let verification = try cloud.verifyLog()
        #expect(verification.firstProblem?.hasPrefix("app \(app) log seq 1") == true, "\(verification)")
        let rebuild = try #require(throws: CloudError.self) { try cloud.rebuildProjections() }
        #expect(rebuild.code == .corruptLog && rebuild.message.contains("log seq 1"), "\(rebuild)")
        #expect(throws: CloudError.self) { try cloud.scanLog { _ in true } }
    }
}

@Suite struct HostilePopularityTests {
    private func popularity(_ harness: SyncHarness, _ name: String) throws -> Popularity {
        try harness.cloud.entry(app: app, hash: hash(name))?.popularity ?? Popularity()
    }

    @Test(arguments: Backend.allCases) func signalsFromADeviceThatNeverVotedCountNothing(backend: Backend) throws {
        let harness = try SyncHarness(backend: backend)
        let attacker = try Attacker(harness)
        #expect(attacker.send((0..<50).map { _ in .signal(hash("a"), Popularity(views: 1_000, engaged: 1_000)) })
                == .accepted(messages: 50), "the frame is taken, so the device's stream goes on")
        #expect(try popularity(harness, "a") == Popularity())
    }

    @Test(arguments: Backend.allCases) func signalsCountOnlyWhileTheVoteIsLive(backend: Backend) throws {
        let harness = try SyncHarness(backend: backend)
        let attacker = try Attacker(harness)
        attacker.send([.signal(hash("a"), Popularity(views: 1)), .vote(hash("a"), token(1)),
                       .signal(hash("a"), Popularity(views: 2)), .withdraw(hash("a"), token(1)),
                       .signal(hash("a"), Popularity(views: 4)), .vote(hash("a"), token(1)),
                       .signal(hash("a"), Popularity(engaged: 8))])
        #expect(try popularity(harness, "a") == Popularity(views: 2, engaged: 8))
        #expect(try harness.cloud.rebuiltProjectionDigest() == harness.cloud.projectionDigest())
    }

    /// Legal-sized signals sent as fast as the wire allows: one device adds at
    /// most its daily allowance, the next day another, and a rebuild from the
    /// log, which knows each frame's day, counts the same.
    @Test(arguments: Backend.allCases) func aFloodOfLegalSignalsStopsAtTheDevicesDailyAllowance(backend: Backend) throws {
        let harness = try SyncHarness(backend: backend)
        let attacker = try Attacker(harness)
        attacker.send([.vote(hash("a"), token(1))])
        let flood = (0..<200).map { _ in OutboxMessage.signal(hash("a"), Popularity(views: WireLimits.maximumSignalCount, shown: 1)) }
        var seq: UInt64 = 2
        for _ in 0..<3 {
            #expect(attacker.send(flood, from: seq) == .accepted(messages: flood.count))
            seq += UInt64(flood.count)
        }
        let cap = PopularityRule.maximumPerDevicePerDay
        #expect(try popularity(harness, "a") == Popularity(views: cap, shown: 600))
        harness.clock.advance(byMilliseconds: PopularityRule.dayMilliseconds)
        attacker.send(flood, from: seq)
        #expect(try popularity(harness, "a") == Popularity(views: 2 * cap, shown: 800))
        #expect(try harness.cloud.rebuiltProjectionDigest() == harness.cloud.projectionDigest())
        let honest = try Attacker(harness, name: DeviceID("honest"))
        honest.send([.vote(hash("a"), token(2)), .signal(hash("a"), Popularity(views: 1))])
        #expect(try popularity(harness, "a").views == 2 * cap + 1, "another device's allowance is its own")
    }

    /// A count at the top of its range (a long-lived store, or one edited)
    /// saturates instead of overflowing into a REAL that breaks every read.
    @Test func aCountAtItsLargestSaturatesAndStaysReadable() throws {
        let path = try scratchStore()
        let harness = try SyncHarness(threshold: 1, location: .file(path))
        let attacker = try Attacker(harness)
        attacker.send([.vote(hash("a"), token(1))])
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "UPDATE hashes SET views = ?, engaged = ?", arguments: [Int64.max - 3, Int64(PopularityRule.maximumCount) - 2])
        }
        attacker.send([.signal(hash("a"), Popularity(views: 10, engaged: 10))], from: 2)
        let entry = try #require(try harness.cloud.entry(app: app, hash: hash("a")))
        #expect(entry.popularity.views == PopularityRule.maximumCount && entry.popularity.engaged == PopularityRule.maximumCount)
    }
}

@Suite struct HostileContentTests {
    private let url = "https://example.com/recipe"
    private var theHash: PublicHash { PublicHash.of(app: app, activityType: "com.example.read", identity: "url:" + url) }

    /// Content from a device that never voted for the hash counts for
    /// nothing: it is no offer, so it neither publishes nor helps agree. The
    /// frame is accepted, not refused: an honest device whose vote the cloud
    /// lost would otherwise send the same frame for ever.
    @Test(arguments: Backend.allCases) func contentFromADeviceThatNeverVotedIsNoOffer(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        let voters = try (0..<2).map { index in
            let voter = try Attacker(harness, name: DeviceID("voter-\(index)"))
            #expect(voter.send([.vote(theHash, token(UInt8(index + 1)))]) == .accepted(messages: 1))
            return voter
        }
        #expect(try harness.cloud.entry(app: app, hash: theHash)?.isWanted == true)
        let spam = PublicContent(activityType: "com.example.read", title: "Buy pills", keywords: [], contentDescription: nil,
                                 webpageURL: url)
        #expect(voters[0].send([.content(theHash, spam)], from: 2) == .accepted(messages: 1))
        let before = try harness.cloud.entry(app: app, hash: theHash)
        let stranger = try Attacker(harness, name: DeviceID("stranger"))
        #expect(stranger.send([.content(theHash, spam)]) == .accepted(messages: 1))
        let after = try harness.cloud.entry(app: app, hash: theHash)
        #expect(after == before && after?.isPublic == false, "one voter's offer and a stranger's do not agree")
    }
}

/// Content becomes public only when K live voters offered it byte for byte
/// (`ContentRule`).
@Suite struct ContentAgreementTests {
    private let url = "https://example.com/recipe"
    private var theHash: PublicHash { PublicHash.of(app: app, activityType: "com.example.read", identity: "url:" + url) }

    private func content(_ title: String) -> PublicContent {
        PublicContent(activityType: "com.example.read", title: title, keywords: ["recipe"], contentDescription: nil, webpageURL: url)
    }

    private func voters(_ harness: SyncHarness, _ count: Int, _ prefix: String = "voter") throws -> [Attacker] {
        try Attacker.voters(harness, count, prefix, for: theHash)
    }

    @Test(arguments: Backend.allCases) func aPersonalisedTitleThatDiffersPerDeviceNeverBecomesPublic(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        let devices = try voters(harness, 3)
        #expect(devices[0].send([.content(theHash, content("Alice's potato chips"))], from: 2) == .accepted(messages: 1))
        #expect(devices[1].send([.content(theHash, content("Bob's potato chips"))], from: 2) == .accepted(messages: 1))
        let waiting = try #require(try harness.cloud.entry(app: app, hash: theHash))
        #expect(!waiting.isPublic && waiting.isWanted && waiting.content == nil, "two live voters, two titles: nothing agreed")
        #expect(devices[2].send([.content(theHash, content("Bob's potato chips"))], from: 2) == .accepted(messages: 1))
        let agreed = try #require(try harness.cloud.entry(app: app, hash: theHash))
        #expect(agreed.isPublic && agreed.content?.title == "Bob's potato chips" && !agreed.isWanted)
        #expect(try harness.cloud.projectionDigest() == harness.cloud.rebuiltProjectionDigest())
    }

    @Test(arguments: Backend.allCases) func oneHostileVoterCannotChooseWhatAPublicHashShows(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        let mallory = try Attacker(harness)
        #expect(mallory.send([.vote(theHash, token(9)), .content(theHash, content("Buy pills"))]) == .accepted(messages: 2))
        let honest = try voters(harness, 1)
        #expect(mallory.send([.content(theHash, content("Buy pills"))], from: 3) == .accepted(messages: 1),
                "offering the same content again is still one voter's offer")
        #expect(honest[0].send([.content(theHash, content("Potato chips"))], from: 2) == .accepted(messages: 1))
        #expect(try harness.cloud.entry(app: app, hash: theHash)?.isPublic == false, "K live votes, but no two offers agree")
        let second = try voters(harness, 1, "late")
        #expect(second[0].send([.content(theHash, content("Potato chips"))], from: 2) == .accepted(messages: 1))
        #expect(try harness.cloud.entry(app: app, hash: theHash)?.content?.title == "Potato chips")
    }

    @Test(arguments: Backend.allCases) func contentFromAVoterWhoseVoteIsNotLiveIsIgnored(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        let devices = try voters(harness, 3)
        #expect(devices[0].send([.withdraw(theHash, token(1)), .content(theHash, content("Potato chips"))], from: 2)
                == .accepted(messages: 2))
        #expect(devices[1].send([.content(theHash, content("Potato chips"))], from: 2) == .accepted(messages: 1))
        #expect(try harness.cloud.entry(app: app, hash: theHash)?.isPublic == false, "a withdrawn voter's content does not count")
    }

    @Test(arguments: Backend.allCases) func aWithdrawalTakesTheVotersOfferWithIt(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        let devices = try voters(harness, 3)
        #expect(devices[0].send([.content(theHash, content("Potato chips")), .withdraw(theHash, token(1))], from: 2)
                == .accepted(messages: 2))
        #expect(devices[1].send([.content(theHash, content("Potato chips"))], from: 2) == .accepted(messages: 1))
        #expect(try harness.cloud.entry(app: app, hash: theHash)?.isPublic == false, "the withdrawn offer no longer agrees")
        #expect(devices[2].send([.content(theHash, content("Potato chips"))], from: 2) == .accepted(messages: 1))
        #expect(try harness.cloud.entry(app: app, hash: theHash)?.isPublic == true)
    }

    /// An operator whose app never personalises titles can ask for less
    /// agreement than K; changing it refolds the log under the new rule.
    @Test func theAgreementIsTheStoresOwnAndChangingItRebuildsTheProjections() throws {
        let path = try scratchStore()
        do {
            let harness = try SyncHarness(threshold: 2, location: .file(path))
            #expect(harness.cloud.agreement == 2, "a new store follows K")
            let devices = try voters(harness, 2)
            #expect(devices[0].send([.content(theHash, content("Alice's potato chips"))], from: 2) == .accepted(messages: 1))
            #expect(devices[1].send([.content(theHash, content("Bob's potato chips"))], from: 2) == .accepted(messages: 1))
            #expect(try harness.cloud.entry(app: app, hash: theHash)?.isPublic == false)
        }
        let relaxed = try CloudIndex(at: .file(path), options: CloudOptions(agreement: 1))
        #expect(relaxed.agreement == 1 && relaxed.threshold == 2)
        #expect(try relaxed.entry(app: app, hash: theHash)?.content?.title == "Alice's potato chips",
                "with an agreement of 1 the first live voter's offer is public")
        let reopened = try CloudIndex(at: .file(path))
        let stats = try reopened.stats()
        #expect(reopened.agreement == 1 && stats.agreement == 1, "the agreement is kept in the store")
        #expect(throws: CloudError.self) { try CloudIndex(at: .memory, options: CloudOptions(agreement: 0)) }
    }

    /// Ingest remembers each device's requests between frames (`AskMemory`);
    /// an ack must ask for the same whether it works from that memory or
    /// from every wanted hash.
    @Test(arguments: Backend.allCases) func anAckAsksTheSameWhetherOrNotTheCloudRemembersTheDevice(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        let devices = try (0..<3).map { try Attacker(harness, name: DeviceID("device-\($0)")) }
        for (index, device) in devices.enumerated() {
            #expect(device.send([.vote(hash("a"), token(UInt8(index + 1))), .vote(hash("b"), token(UInt8(index + 1)))])
                    == .accepted(messages: 2))
        }
        let first = try #require(devices[0].requests(sending: [.signal(hash("a"), Popularity(views: 1))], from: 3))
        #expect(Set(first) == [hash("a"), hash("b")])
        #expect(devices[1].send([.withdraw(hash("b"), token(2)), .withdraw(hash("a"), token(2))], from: 3) == .accepted(messages: 2))
        let remembered = try #require(devices[0].requests(sending: [.signal(hash("a"), Popularity(views: 1))], from: 3))
        try harness.cloud.rebuildProjections()
        let afresh = try #require(devices[0].requests(sending: [.signal(hash("a"), Popularity(views: 1))], from: 3))
        #expect(remembered == afresh && Set(afresh) == [hash("a"), hash("b")], "\(remembered) \(afresh)")
    }

    @Test(arguments: Backend.allCases) func everyAckAsksItsDeviceForTheWantedHashesItVotedForUntilItAnswers(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        let first = try Attacker(harness, name: DeviceID("first"))
        #expect(first.requests(sending: [.vote(theHash, token(1))], from: 1) == [], "below K nothing is wanted")
        let second = try Attacker(harness, name: DeviceID("second"))
        #expect(second.requests(sending: [.vote(theHash, token(2))], from: 1) == [theHash], "the vote that reaches K asks its sender")
        #expect(first.requests(sending: [.signal(theHash, Popularity(views: 1))], from: 2) == [theHash],
                "an earlier voter is asked in its next ack")
        #expect(first.requests(sending: [.signal(theHash, Popularity(views: 1))], from: 3) == [theHash],
                "and in every ack after, until it answers")
        #expect(first.requests(sending: [.content(theHash, content("Potato chips"))], from: 4) == [], "an offer ends the asking")
        let bystander = try Attacker(harness, name: DeviceID("bystander"))
        #expect(bystander.requests(sending: [.vote(hash("other"), token(3))], from: 1) == [],
                "a device that did not vote for a wanted hash never hears of it")
    }
}

/// Ingest remembers vote rows between frames (`IngestMemory`); what it
/// remembers must never outlive what the store holds.
@Suite struct IngestMemoryTests {
    @Test(arguments: Backend.allCases) func aRefusedFrameLeavesNothingRememberedOfWhatItFolded(backend: Backend) throws {
        let harness = try SyncHarness(backend: backend)
        let attacker = try Attacker(harness)
        let lie = PublicContent(activityType: "com.example.read", title: "x", keywords: [], contentDescription: nil,
                                webpageURL: "https://example.com/other")
        guard case .rejected = attacker.send([.vote(hash("a"), token(1)), .content(hash("a"), lie)]) else {
            Issue.record("content for another hash was accepted")
            return
        }
        #expect(attacker.send([.signal(hash("a"), Popularity(views: 5))]) == .accepted(messages: 1))
        #expect(try harness.cloud.entry(app: app, hash: hash("a"))?.popularity ?? Popularity() == Popularity(),
                "the vote rolled back with its frame, so the signal is a non-voter's")
    }

    @Test func aWriteByAnotherConnectionIsSeenByTheNextFrame() throws {
        let path = try scratchStore()
        let harness = try SyncHarness(location: .file(path))
        let attacker = try Attacker(harness)
        attacker.send([.vote(hash("a"), token(1)), .signal(hash("a"), Popularity(views: 1))])
        try DatabaseQueue(path: path).write { db in try db.execute(sql: "UPDATE votes SET live = 0") }
        attacker.send([.signal(hash("a"), Popularity(views: 1))], from: 3)
        #expect(try harness.cloud.entry(app: app, hash: hash("a"))?.popularity.views == 1,
                "the vote another connection made not live is not live to ingest")
    }
}

@Suite struct ReplyBindingTests {
    /// Every reply names the frame it answers by that frame's signature, so
    /// a device can tell an answer to its frame from a replayed one; a frame
    /// the cloud could not read is answered with the all-zero name, and a
    /// frame whose signature failed gets an unsigned answer.
    @Test(arguments: Backend.allCases) func everyReplyNamesTheFrameItAnswers(backend: Backend) throws {
        let harness = try SyncHarness(backend: backend)
        let attacker = try Attacker(harness)
        let record = OutboxRecord(position: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(1)), message: .vote(hash("a"), token(1)))
        let frame = UploadFrame(app: app, device: attacker.name, records: [record], key: attacker.key)
        for expected in [IngestResult.Outcome.accepted(messages: 1), .duplicate] {
            let result = harness.deliver(frame.encoded)
            #expect(result.outcome == expected)
            let reply = try CloudReply.decode(result.reply, device: attacker.name, key: attacker.key)
            #expect(reply.isAnswer(to: frame) && reply.isAuthentic)
        }

        let forged = UploadFrame(app: app, device: attacker.name, records: [record], key: [UInt8](repeating: 7, count: 32))
        let refused = try CloudReply.decode(harness.deliver(forged.encoded).reply, device: attacker.name, key: attacker.key)
        #expect(refused.isAnswer(to: forged) && !refused.isAuthentic)

        var junk = frame.encoded
        junk[4] = 99
        let unread = try CloudReply.decode(harness.deliver(junk).reply, device: DeviceID(""), key: attacker.key)
        #expect(unread.answers == CloudReply.unreadFrame && !unread.isAuthentic)
    }
}

/// A snapshot of a cloud that took one vote, and the same snapshot with its
/// database changed by the SQL `edit`, as someone who can write the backup
/// location could change a plaintext snapshot.
private func tamperedCloudSnapshot(_ edit: String) throws -> (directory: URL, snapshot: String, tampered: String) {
    let directory = try ScratchDirectory.make("sightline-restore-tampered")
    let harness = try SyncHarness(threshold: 1, location: .file(directory.appendingPathComponent("cloud.sqlite").path))
    try Attacker(harness).send([.vote(hash("a"), token(1))])
    let snapshot = directory.appendingPathComponent("cloud.snap").path
    try harness.cloud.snapshot(to: snapshot)
    let database = directory.appendingPathComponent("tampered.sqlite").path
    let manifest = try SnapshotFile.extract(snapshot, to: database, key: nil)
    try DatabaseQueue(path: database).writeWithoutTransaction { db in try db.execute(sql: edit) }
    try SnapshotFile.write(source: database, destination: database + ".snap", manifest: manifest, key: nil)
    return (directory, snapshot, database + ".snap")
}

@Suite struct RestoredCloudSchemaTests {
    /// A trigger on the cloud log would rewrite counts at every ingest of
    /// the restored cloud; a view, an extra table or index, or a table
    /// defined otherwise is as foreign. A restore refuses them before it
    /// opens the file, and nothing appears at the target.
    @Test(arguments: [
        "CREATE TRIGGER poison AFTER INSERT ON cloud_log BEGIN UPDATE hashes SET views = views + 1000; END",
        "CREATE VIEW keys AS SELECT device, key FROM devices",
        "CREATE TABLE extra (x)",
        "CREATE INDEX extra_index ON devices (app)",
        """
        ALTER TABLE flags RENAME TO old_flags;
        CREATE TABLE flags (device TEXT NOT NULL CHECK (length(device) < 3), epoch INTEGER NOT NULL, first_seq INTEGER NOT NULL,
                            last_seq INTEGER NOT NULL, reason TEXT NOT NULL, flagged_at INTEGER NOT NULL);
        DROP TABLE old_flags
        """,
    ])
    func aCloudSnapshotWithSchemaThisBuildDidNotMakeIsRefused(edit: String) throws {
        let (directory, snapshot, bad) = try tamperedCloudSnapshot(edit)
        let target = directory.appendingPathComponent("restored.sqlite").path
        let error = try #require(throws: CloudError.self) { try CloudIndex.restore(snapshot: bad, to: target) }
        #expect(error.code == .snapshot && error.message.hasSuffix("refused"), "\(error)")
        #expect(!FileManager.default.fileExists(atPath: target))
        try CloudIndex.restore(snapshot: snapshot, to: target)
        #expect(FileManager.default.fileExists(atPath: target), "the snapshot as made restores")
    }

    /// No replay checks the registry: a short device key, a threshold of 0
    /// (everything public), a backed-up position past the limit or an
    /// unknown meta key is refused by name.
    @Test(arguments: [
        ("UPDATE devices SET key = zeroblob(31)", "devices.key"),
        ("UPDATE cloud_meta SET value = 0 WHERE key = 'threshold'", "cloud_meta.threshold"),
        ("INSERT INTO cloud_meta (key, value) VALUES ('agreement', 0)", "cloud_meta.agreement"),
        ("UPDATE devices SET backed_up_seq = 9007199254740992", "devices.backed_up_seq"),
        ("UPDATE apps SET secret_hash = 'secret'", "apps.secret_hash"),
        ("INSERT INTO cloud_meta (key, value) VALUES ('debug', 1)", "cloud_meta holds debug"),
    ])
    func aCloudSnapshotWithAnImpossibleRegistryIsRefused(edit: String, named: String) throws {
        let (directory, _, bad) = try tamperedCloudSnapshot(edit)
        let target = directory.appendingPathComponent("restored.sqlite").path
        let error = try #require(throws: CloudError.self) { try CloudIndex.restore(snapshot: bad, to: target) }
        #expect(error.code == .snapshot && error.message.contains(named) && error.message.hasSuffix("refused"), "\(error)")
        #expect(!FileManager.default.fileExists(atPath: target))
    }
}

@Suite struct PerAppDeviceNameTests {
    /// Device names are per app: two apps may each have a device named
    /// "phone-1". Each enrols, syncs and re-enrols with its proof on its own;
    /// neither's stream, key or counts touch the other's.
    @Test(arguments: Backend.allCases) func twoAppsEachHaveADeviceOfTheSameName(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 1, backend: backend)
        let other = AppID("com.example.other")
        try harness.cloud.registerApp(other, enrolmentSecret: enrolmentSecret)
        let first = try harness.cloud.enrol(app: app, device: DeviceID("phone-1"), enrolmentSecret: enrolmentSecret, proof: Array(repeating: 1, count: 32))
        let second = try harness.cloud.enrol(app: other, device: DeviceID("phone-1"), enrolmentSecret: enrolmentSecret, proof: Array(repeating: 2, count: 32))
        #expect(first != second)
        #expect(try harness.cloud.enrol(app: other, device: DeviceID("phone-1"), enrolmentSecret: enrolmentSecret,
                                        proof: Array(repeating: 2, count: 32)) == second, "re-enrolment with the proof, in its own app")
        func frame(_ appName: AppID, _ key: [UInt8], _ message: OutboxMessage) -> [UInt8] {
            UploadFrame(app: appName, device: DeviceID("phone-1"),
                        records: [OutboxRecord(position: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(1)), message: message)], key: key).encoded
        }
        let otherHash = PublicHash.of(app: other, activityType: "com.example.read", identity: "url:https://example.com/x")
        #expect(harness.deliver(frame(app, first, .vote(hash("x"), token(1)))).outcome == .accepted(messages: 1))
        let result = harness.deliver(frame(other, second, .vote(otherHash, token(2))))
        #expect(result.outcome == .accepted(messages: 1), "the same name and position in another app is another stream")
        #expect(try CloudReply.decode(result.reply, device: DeviceID("phone-1"), key: second).isAuthentic)
        #expect(try harness.cloud.entry(app: app, hash: hash("x"))?.liveVotes == 1)
        #expect(try harness.cloud.entry(app: other, hash: otherHash)?.liveVotes == 1)
        // A key of one app does not sign for the other's phone-1.
        guard case .rejected(let error) = harness.deliver(frame(other, first, .vote(otherHash, token(1)))).outcome else {
            Issue.record("a frame signed with the other app's key was accepted")
            return
        }
        #expect(error.code == .badSignature)
        #expect(try harness.cloud.stats().devices == 2 && harness.cloud.stats().logRows == 2)
        #expect(try harness.cloud.projectionDigest() == harness.cloud.rebuiltProjectionDigest())
        #expect(try harness.cloud.verifyLog().firstProblem == nil)
    }
}
