import DeviceStore
import Foundation
import IndexModel
import SyncWire
import Testing

private let recipeURL = "https://www.yummly.com/recipe/BPC-983195"

private func publicRecipe(id: String = "r1", url: String = recipeURL, related: String? = nil, weak: String? = nil,
                          expires: Timestamp? = nil) -> UserActivity {
    UserActivity(activityType: "com.yummly/browseRecipe", title: "Baked Potato Chips", keywords: ["potato"],
                 webpageURL: url, expirationDate: expires, eligibleForSearch: true, eligibleForPublicIndexing: true,
                 relatedUniqueIdentifier: related, weakRelatedUniqueIdentifier: weak, persistentIdentifier: id)
}

private func kinds(_ store: DeviceStore) throws -> [String] {
    try store.outboxEntries().map { entry in
        switch entry.message {
        case .signal(_, let counts): "signal(\(counts.views),\(counts.shown),\(counts.engaged))"
        default: entry.message.kindName
        }
    }
}

private func hash(of activity: UserActivity, app: AppID = StoreOptions.defaultApp) -> PublicHash {
    PublicHash.of(app: app, content: PublicContent(activity)!)!
}

@Suite struct OutboxTests {
    @Test func privateItemsAndActivitiesSendNothingAtAll() throws {
        let store = try makeStore()
        try store.index(named: "notes").indexSearchableItems([item("n1", title: "Diary", url: "https://example.com/n1")])
        var privateActivity = publicRecipe()
        privateActivity.eligibleForPublicIndexing = false
        try store.record(privateActivity)
        var unsearchable = publicRecipe(id: "r2", url: "https://example.com/r2")
        unsearchable.eligibleForSearch = false
        try store.record(unsearchable)
        for ref in ["n1", recipeURL, "https://example.com/r2", "https://example.com/n1"] {
            try store.recordShown(ref: ref)
            try store.recordEngaged(ref: ref)
        }
        try store.perform(.deleteActivities(identifiers: ["r1", "r2"]))
        try store.perform(.delete(index: "notes", identifiers: ["n1"]))
        #expect(try store.outboxEntries().isEmpty)
        #expect(try store.syncStatus().head == .start)
    }

    @Test func nothingLeavesBeforeTheFirstEngagementThenAVoteAndSignals() throws {
        let store = try makeStore()
        let activity = publicRecipe()
        try store.record(activity)
        try store.recordShown(ref: recipeURL)
        #expect(try store.outboxEntries().isEmpty, "viewing and being shown send nothing before the user engages")
        try store.recordEngaged(ref: recipeURL)
        try store.recordShown(ref: recipeURL)
        try store.record(activity)
        try store.recordEngaged(ref: recipeURL)
        #expect(try kinds(store) == ["vote", "signal(0,0,1)", "signal(0,1,0)", "signal(1,0,0)", "signal(0,0,1)"])
        let entries = try store.outboxEntries()
        #expect(entries.map(\.position.seq.rawValue) == [1, 2, 3, 4, 5])
        #expect(entries.allSatisfy { $0.message.hash == hash(of: activity) })
    }

    @Test func outboxSeqsSayNothingAboutPrivateActivity() throws {
        let store = try makeStore()
        try store.record(publicRecipe())
        try store.recordEngaged(ref: recipeURL)
        for index in 0..<50 {
            try store.index(named: "notes").indexSearchableItems([item("n\(index)", title: "private \(index)")])
            try store.recordEngaged(ref: "n\(index)")
        }
        try store.recordShown(ref: recipeURL)
        let entries = try store.outboxEntries()
        #expect(entries.map(\.position.seq.rawValue) == [1, 2, 3], "dense: the 100 private events left no gap")
    }

    @Test func deletingTheLastActivityOfAHashWithdrawsAndALaterEngagementVotesAgainWithTheSameToken() throws {
        let store = try makeStore()
        try store.record(publicRecipe(id: "a"))
        try store.record(publicRecipe(id: "b"))
        try store.recordEngaged(ref: recipeURL)
        try store.perform(.deleteActivities(identifiers: ["a"]))
        #expect(try kinds(store) == ["vote", "signal(0,0,1)"], "b still holds the hash, so the vote stays")
        try store.perform(.deleteActivities(identifiers: ["b"]))
        try store.recordEngaged(ref: recipeURL)
        #expect(try kinds(store) == ["vote", "signal(0,0,1)", "withdraw"], "no activity left: nothing to vote for")
        try store.record(publicRecipe(id: "c"))
        try store.recordEngaged(ref: recipeURL)
        let entries = try store.outboxEntries()
        #expect(try kinds(store) == ["vote", "signal(0,0,1)", "withdraw", "vote", "signal(0,0,1)"])
        guard case .vote(_, let first) = entries[0].message, case .withdraw(_, let withdrawn) = entries[2].message,
              case .vote(_, let again) = entries[3].message else {
            Issue.record("unexpected messages \(entries)")
            return
        }
        #expect(first == withdrawn && first == again)
    }

    @Test func expiryAndTheStrongRelatedItemsDeletionWithdrawButAWeakOnesDoesNot() throws {
        let clock = ManualClock(testStart)
        let store = try makeStore(clock: clock)
        try store.index(named: "recipes").indexSearchableItems([item("strong"), item("weak")])
        try store.record(publicRecipe(id: "s", url: "https://example.com/s", related: "strong"))
        try store.record(publicRecipe(id: "w", url: "https://example.com/w", weak: "weak"))
        try store.record(publicRecipe(id: "e", url: "https://example.com/e", expires: testStart.adding(milliseconds: 1_000)))
        for ref in ["https://example.com/s", "https://example.com/w", "https://example.com/e"] {
            try store.recordEngaged(ref: ref)
        }
        try store.perform(.delete(index: "recipes", identifiers: ["strong", "weak"]))
        clock.advance(byMilliseconds: 1_000)
        try store.expireNow()
        let withdrawn = try store.outboxEntries().compactMap { entry -> PublicHash? in
            if case .withdraw(let hash, _) = entry.message { return hash }
            return nil
        }
        #expect(Set(withdrawn) == [hash(of: publicRecipe(id: "s", url: "https://example.com/s")),
                                   hash(of: publicRecipe(id: "e", url: "https://example.com/e"))])
    }

    @Test func engagingThroughTheRelatedItemCountsForThePublicActivity() throws {
        let store = try makeStore()
        try store.index(named: "recipes").indexSearchableItems([item("bpc", title: "Baked Potato Chips")])
        try store.record(publicRecipe(related: "bpc"))
        try store.recordEngaged(ref: "bpc")
        #expect(try kinds(store) == ["vote", "signal(0,0,1)"])
    }

    @Test func privateContentNeverReachesTheOutbox() throws {
        let canary = "CANARY-7f3a9c"
        let store = try makeStore()
        try store.index(named: "notes").indexSearchableItems([item("n1", title: "secret \(canary)", url: "https://x/\(canary)")])
        var privateActivity = publicRecipe(id: "p", url: "https://example.com/\(canary)")
        privateActivity.eligibleForPublicIndexing = false
        privateActivity.title = canary
        try store.record(privateActivity)
        var publicActivity = publicRecipe(id: "q", url: "https://example.com/public")
        publicActivity.userInfo = ["session": canary]
        publicActivity.domainIdentifier = canary
        try store.record(publicActivity)
        for ref in ["n1", "https://example.com/\(canary)", "https://example.com/public"] {
            try store.recordEngaged(ref: ref)
        }
        let bytes = try store.pendingOutbox(after: .start, limit: 100).flatMap(\.encoded)
        #expect(!bytes.isEmpty)
        #expect(!Data(bytes).contains(Data(canary.utf8)))
        #expect(!Data(bytes).contains(Data("public".utf8)), "before a content request even public text stays home")
    }

    @Test func aRebuildMakesTheSameOutboxAtTheSamePositions() throws {
        let store = try makeStore()
        try store.record(publicRecipe(id: "a"))
        try store.record(publicRecipe(id: "b", url: "https://example.com/b"))
        try store.recordEngaged(ref: recipeURL)
        try store.recordEngaged(ref: "https://example.com/b")
        try store.recordShown(ref: recipeURL)
        try store.perform(.deleteActivities(identifiers: ["b"]))
        try store.recordAcknowledgement(acceptedThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(4)),
                                        durableThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(2)))
        let before = try store.outboxEntries()
        #expect(before.first?.position.seq == OutboxSeq(3), "the durable messages were dropped")
        #expect(try store.rebuiltProjectionDigest() == store.projectionDigest())
        try store.rebuildProjections()
        #expect(try store.outboxEntries() == before)
        #expect(try store.syncStatus().head == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(6)))
        try store.recordEngaged(ref: recipeURL)
        #expect(try store.outboxEntries().last?.position == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(7)))
    }

    @Test func anAckMovesTheCursorAndAnAckBeyondTheOutboxIsRefused() throws {
        let store = try makeStore()
        try store.record(publicRecipe())
        for _ in 0..<3 { try store.recordEngaged(ref: recipeURL) }
        #expect(try store.syncStatus().pending == 4)
        try store.recordAcknowledgement(acceptedThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(3)),
                                        durableThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(1)))
        let status = try store.syncStatus()
        #expect(status.acknowledged == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(3)) && status.durable == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(1)))
        #expect(status.pending == 1)
        #expect(try store.pendingOutbox(after: status.acknowledged, limit: 10).map(\.position.seq.rawValue) == [4])
        let error = try #require(throws: DeviceStoreError.self) {
            try store.recordAcknowledgement(acceptedThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(9)),
                                            durableThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(9)))
        }
        #expect(error.code == .sync)
        #expect(try store.syncStatus() == status, "a refused ack changes nothing")
    }

    @Test func theSyncStatusOfAnInMemoryStoreFollowsEveryWrite() throws {
        // An in-memory store keeps its last answer until the next write.
        let store = try makeStore()
        try store.record(publicRecipe())
        #expect(try store.syncStatus().head == .start)
        #expect(try store.syncStatus().pending == 0)
        try store.recordEngaged(ref: recipeURL)
        #expect(try store.syncStatus().head == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(2)))
        #expect(try store.syncStatus().pending == 2)
        try store.recordAcknowledgement(acceptedThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(2)),
                                        durableThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(2)))
        let acknowledged = try store.syncStatus()
        #expect(acknowledged.acknowledged == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(2)) && acknowledged.pending == 0)
        try store.perform(.deleteActivities(identifiers: ["r1"]))
        #expect(try store.syncStatus().head == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(3)), "the withdrawal")
        #expect(try store.syncStatus().pending == 1)
    }

    /// Calls that send nothing keep an in-memory store's cached status; every
    /// call that sends (a vote, a signal, a withdrawal by expiry) moves it
    /// forward by what it sent, which must be what a fresh read finds.
    @Test func theCachedSyncStatusAgreesWithTheOutboxAfterEveryKindOfCall() throws {
        let store = try makeStore()
        let at = { (seconds: Int64) in Timestamp(millisecondsSince1970: testStart.millisecondsSince1970 + seconds * 1000) }
        func expectAgreement(_ step: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let status = try store.syncStatus()
            let entries = try store.outboxEntries()
            #expect(status.head == entries.last?.position ?? .start, "head after \(step)", sourceLocation: sourceLocation)
            #expect(status.pending == entries.filter { $0.position > status.acknowledged }.count,
                    "pending after \(step)", sourceLocation: sourceLocation)
        }
        let calls: [(String, AppOperation)] = [
            ("a public activity", .activity(publicRecipe(expires: at(60)))),
            ("an engagement", .engage(ref: recipeURL)),
            ("an item", .index(index: "notes", items: [item("n1", title: "Diary")])),
            ("an impression", .shown(ref: recipeURL)),
            ("a private engagement", .engage(ref: "n1")),
            ("the clock passing the expiry", .advanceClock(to: at(61))),
            ("the activity again", .activity(publicRecipe(id: "r2"))),
            ("a second vote", .engage(ref: recipeURL)),
        ]
        try expectAgreement("opening")
        for (step, call) in calls {
            try store.perform(call)
            try expectAgreement(step)
        }
        #expect(try kinds(store) == ["vote", "signal(0,0,1)", "signal(0,1,0)", "withdraw", "vote", "signal(0,0,1)"])
    }

    @Test func twoDevicesVoteForTheSameHashWithDifferentTokens() throws {
        let first = try makeStore(seed: 1)
        let second = try makeStore(seed: 2)
        for store in [first, second] {
            try store.record(publicRecipe())
            try store.recordEngaged(ref: recipeURL)
        }
        guard case .vote(let hashA, let tokenA) = try first.outboxEntries()[0].message,
              case .vote(let hashB, let tokenB) = try second.outboxEntries()[0].message else {
            Issue.record("expected votes")
            return
        }
        #expect(hashA == hashB && tokenA != tokenB)
        let otherApp = try DeviceStore(at: .memory, options: StoreOptions(clock: ManualClock(testStart),
                                                                         random: SeededRandom(seed: 3), app: AppID("com.other")))
        try otherApp.record(publicRecipe())
        try otherApp.recordEngaged(ref: recipeURL)
        #expect(try otherApp.outboxEntries()[0].message.hash != hashA, "another app's salt gives another hash")
    }
}

@Suite struct ContentRequestTests {
    @Test func aContentRequestIsAnsweredWithThePublicFieldsOnly() throws {
        let store = try makeStore()
        var activity = publicRecipe()
        activity.userInfo = ["session": "private-session"]
        activity.domainIdentifier = "private-domain"
        try store.record(activity)
        try store.recordEngaged(ref: recipeURL)
        let unknown = PublicHash.of(app: StoreOptions.defaultApp, activityType: "t", identity: "url:https://nowhere")
        let seqs = try #require(try store.recordContentRequests([hash(of: activity), unknown]))
        #expect(try store.records(seqs).map { try $0.event().kind } == [.publicContentRequested])
        let last = try #require(try store.outboxEntries().last)
        #expect(last.journalSeq == seqs.lowerBound)
        #expect(last.message == .content(hash(of: activity), PublicContent(
            activityType: "com.yummly/browseRecipe", title: "Baked Potato Chips", keywords: ["potato"],
            contentDescription: nil, webpageURL: recipeURL)))
        #expect(try kinds(store) == ["vote", "signal(0,0,1)", "content"], "the unknown hash gets no answer")
    }

    @Test func aDeviceWithoutALiveVoteDoesNotAnswer() throws {
        let store = try makeStore()
        let activity = publicRecipe()
        try store.record(activity)
        try store.recordContentRequests([hash(of: activity)])
        #expect(try store.outboxEntries().isEmpty, "the user never engaged: the content stays home")
        #expect(try store.recordContentRequests([]) == nil)
    }

    /// The cloud asks in every ack until it has the answer; a device whose
    /// answer is still on its way (a backlog ahead of it in the outbox) does
    /// not answer again, and answers again once the cloud took the first.
    @Test func aRequestWhoseAnswerIsInTheOutboxIsNotAnsweredAgain() throws {
        let store = try makeStore()
        let activity = publicRecipe()
        try store.record(activity)
        try store.recordEngaged(ref: recipeURL)
        #expect(try store.recordContentRequests([hash(of: activity)]) != nil)
        #expect(try store.recordContentRequests([hash(of: activity)]) == nil, "the answer is not acknowledged yet")
        #expect(try kinds(store) == ["vote", "signal(0,0,1)", "content"])
        let head = try #require(try store.outboxEntries().last).position
        try store.recordAcknowledgement(acceptedThrough: head, durableThrough: head)
        #expect(try store.recordContentRequests([hash(of: activity)]) != nil, "asked after its answer arrived: the cloud ignored it")
    }
}
