import CloudCore
import CloudSQLite
import IndexModel
import SyncWire
import Testing

@Suite struct FramePlacementTests {
    private func place(_ epoch: UInt64, _ first: UInt64, _ last: UInt64, follows: OutboxPosition? = nil, probe: Bool = false,
                       held: [(epoch: UInt64, last: UInt64)]) -> FramePlacement {
        let inside = OutboxPosition(epoch: Epoch(epoch), seq: OutboxSeq(first - 1))
        return FramePlacement.of(epoch: Epoch(epoch), firstSeq: OutboxSeq(first), lastSeq: OutboxSeq(last),
                                 follows: follows ?? (first > 1 ? inside : .nothing), isProbe: probe,
                                 held: held.map { (Epoch($0.epoch), OutboxSeq($0.last)) })
    }

    private func expected(_ placement: FramePlacement) -> OutboxPosition? {
        guard case .refuse(let rejection) = placement, rejection.error.code == .gap else { return nil }
        return rejection.expected
    }

    @Test func theNextPositionsAreAppended() {
        #expect(place(1, 1, 5, held: []) == .append(acceptedFrom: OutboxSeq(1), overlap: nil))
        #expect(place(1, 6, 9, held: [(1, 5)]) == .append(acceptedFrom: OutboxSeq(6), overlap: nil))
        #expect(place(2, 1, 3, held: [(1, 5)]) == .append(acceptedFrom: OutboxSeq(1), overlap: nil), "a new epoch starts at 1")
    }

    @Test func heldPositionsAreDuplicatesOrOverlaps() {
        #expect(place(1, 2, 4, held: [(1, 5)]) == .duplicate(head: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(5)), overlap: OutboxSeq(2)...OutboxSeq(4)))
        #expect(place(1, 4, 8, held: [(1, 5)]) == .append(acceptedFrom: OutboxSeq(6), overlap: OutboxSeq(4)...OutboxSeq(5)))
        #expect(place(1, 1, 5, held: [(1, 5), (2, 3)]) == .duplicate(head: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(5)), overlap: OutboxSeq(1)...OutboxSeq(5)),
                "a resent frame of an ended epoch is acknowledged through that epoch, so the device's cursor stays exact")
    }

    @Test func gapsAndEndedEpochsAreRefusedWithWhereToContinue() {
        guard case .refuse(let gap) = place(1, 7, 9, held: [(1, 5)]) else { Issue.record("gap accepted"); return }
        #expect(gap.error.code == .gap && gap.expected == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(6)))
        guard case .refuse(let newEpoch) = place(3, 2, 4, held: [(1, 5)]) else { Issue.record("gap accepted"); return }
        #expect(newEpoch.expected == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(6)),
                "a restored cloud that lost a new epoch's start asks for what it lacks of the epoch before")
        guard case .refuse(let unknown) = place(3, 2, 4, held: []) else { Issue.record("gap accepted"); return }
        #expect(unknown.expected == OutboxPosition(epoch: Epoch(0), seq: OutboxSeq(1)),
                "a cloud that holds nothing of the device asks for everything, from the first epoch on")
        guard case .refuse(let ended) = place(1, 5, 7, held: [(1, 5), (2, 1)]) else { Issue.record("ended epoch grown"); return }
        #expect(ended.error.code == .gap && ended.expected == OutboxPosition(epoch: Epoch(2), seq: OutboxSeq(2)),
                "a resurfaced tail of an ended epoch is sent on past the current epoch's head")
        #expect(ended.ended == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(5)), "and the device learns where its epoch ended")
        guard case .refuse(let unheld) = place(1, 1, 2, held: [(2, 1)]) else { Issue.record("ended epoch grown"); return }
        #expect(unheld.ended == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(0)), "an ended epoch the cloud holds none of ended at seq 0")
        guard case .refuse(let plain) = place(1, 7, 9, held: [(1, 5)]) else { Issue.record("gap accepted"); return }
        #expect(plain.ended == nil, "a gap in the current epoch ends nothing")
    }
}

extension FramePlacementTests {
    @Test func aNewEpochBeginsOnlyWhenTheCloudHoldsWhatItFollows() {
        #expect(place(2, 1, 3, follows: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(5)), held: [(1, 5)]) == .append(acceptedFrom: OutboxSeq(1), overlap: nil))
        #expect(expected(place(2, 1, 3, follows: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(9)), held: [(1, 5)])) == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(6)),
                "a cloud restored between the device's last ack and the new epoch asks for the rest of the old one first")
        #expect(expected(place(3, 1, 3, follows: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(9)), held: [(1, 5), (2, 4)])) == OutboxPosition(epoch: Epoch(2), seq: OutboxSeq(5)),
                "what an ended epoch lacks can no longer be added: the device goes on from the cloud's head")
        #expect(expected(place(3, 1, 3, follows: OutboxPosition(epoch: Epoch(2), seq: OutboxSeq(4)), held: [(1, 5)])) == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(6)),
                "a followed epoch the cloud never got sends the device back to the cloud's head")
        #expect(place(3, 1, 3, follows: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(0)), held: [(1, 5)]) == .append(acceptedFrom: OutboxSeq(1), overlap: nil),
                "seq 0 claims nothing")
    }

    @Test func aProbeIsAcknowledgedOrAnsweredWithAGapButNeverAdded() {
        #expect(place(1, 5, 5, probe: true, held: [(1, 5)]) == .duplicate(head: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(5)), overlap: OutboxSeq(5)...OutboxSeq(5)))
        #expect(expected(place(1, 6, 6, probe: true, held: [(1, 5)])) == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(6)),
                "the next position, probed, is asked for rather than taken")
        #expect(expected(place(2, 1, 1, probe: true, held: [(1, 5)])) == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(6)),
                "a probe does not begin an epoch")
        #expect(expected(place(2, 1, 1, probe: true, held: [])) == OutboxPosition(epoch: Epoch(0), seq: OutboxSeq(1)))
    }

    @Test func anUnheldEpochBelowTheCloudsNewestSendsTheDeviceToTheCloudsHead() {
        // The device's clock ran back past an earlier restore: its new epoch
        // is below one the cloud has begun for it.
        #expect(expected(place(5, 1, 3, held: [(1, 5), (9, 2)])) == OutboxPosition(epoch: Epoch(9), seq: OutboxSeq(3)))
    }
}

@Suite struct ThresholdRuleTests {
    @Test func reachingKKeepsTheHashAndAsksForContent() {
        let actions = ThresholdRule.actions(liveVotes: 3, delta: 1, threshold: 3, hasContent: false, isWanted: false)
        #expect(actions.keepRawHash && actions.markWanted && !actions.dropRawHash)
        let again = ThresholdRule.actions(liveVotes: 4, delta: 1, threshold: 3, hasContent: true, isWanted: false)
        #expect(!again.keepRawHash && !again.markWanted, "already public: nothing changes")
    }

    @Test func fallingBelowKDropsEverythingButTheCounts() {
        let actions = ThresholdRule.actions(liveVotes: 2, delta: -1, threshold: 3, hasContent: true, isWanted: false)
        #expect(actions.dropRawHash && actions.dropContent && !actions.markWanted)
        let below = ThresholdRule.actions(liveVotes: 1, delta: 1, threshold: 3, hasContent: false, isWanted: false)
        #expect(below == ThresholdRule.Actions(), "below K and nothing held: nothing to do")
    }
}

@Suite struct ContentRuleTests {
    @Test func contentFromANonVoterOrANonLiveVoterIsIgnored() {
        #expect(ContentRule.verdict(hasVoted: false, isLive: false, liveVotes: 5, threshold: 3, hasContent: false) == .ignore)
        #expect(ContentRule.verdict(hasVoted: true, isLive: false, liveVotes: 5, threshold: 3, hasContent: false) == .ignore)
    }

    @Test func aLiveVotersContentIsAnOfferOnlyWhileTheHashIsWanted() {
        #expect(ContentRule.verdict(hasVoted: true, isLive: true, liveVotes: 3, threshold: 3, hasContent: false) == .offer)
        #expect(ContentRule.verdict(hasVoted: true, isLive: true, liveVotes: 2, threshold: 3, hasContent: false) == .ignore,
                "below K nothing of the content is kept")
        #expect(ContentRule.verdict(hasVoted: true, isLive: true, liveVotes: 4, threshold: 3, hasContent: true) == .ignore,
                "content already agreed is not replaced")
    }

    @Test func contentIsPublishedOnlyWhenAgreementManyLiveVotersOfferedIt() {
        #expect(!ContentRule.publishes(agreeing: 2, agreement: 3, liveVotes: 5, threshold: 3, hasContent: false))
        #expect(ContentRule.publishes(agreeing: 3, agreement: 3, liveVotes: 3, threshold: 3, hasContent: false))
        #expect(!ContentRule.publishes(agreeing: 3, agreement: 3, liveVotes: 2, threshold: 3, hasContent: false))
    }

    @Test func onlyALiveVoterWithoutAnOfferIsAskedAndOnlyWhileTheHashIsWanted() {
        #expect(ContentRule.asksVoter(isLive: true, hasOffer: false, liveVotes: 3, threshold: 3, hasContent: false))
        #expect(!ContentRule.asksVoter(isLive: true, hasOffer: true, liveVotes: 3, threshold: 3, hasContent: false))
        #expect(!ContentRule.asksVoter(isLive: false, hasOffer: false, liveVotes: 3, threshold: 3, hasContent: false))
        #expect(!ContentRule.asksVoter(isLive: true, hasOffer: false, liveVotes: 2, threshold: 3, hasContent: false))
        #expect(!ContentRule.asksVoter(isLive: true, hasOffer: false, liveVotes: 3, threshold: 3, hasContent: true))
    }
}

@Suite struct PopularityRuleTests {
    private let cap = PopularityRule.maximumPerDevicePerDay

    @Test func aDeviceAddsAtMostItsDailyAllowancePerHash() {
        var allowance = PopularityRule.Allowance(day: 0, used: Popularity())
        var counted = Popularity()
        for _ in 0..<11 {
            let admitted = PopularityRule.admit(Popularity(views: 1_000, engaged: 1), on: 5, after: allowance)
            counted += admitted.counted
            allowance = admitted.allowance
        }
        #expect(counted == Popularity(views: cap, engaged: 11), "views stop at the cap; engagements are far below it")
        #expect(allowance == PopularityRule.Allowance(day: 5, used: Popularity(views: cap, engaged: 11)))
        let nextDay = PopularityRule.admit(Popularity(views: 7), on: 6, after: allowance)
        #expect(nextDay.counted == Popularity(views: 7), "a new day of cloud time starts a new allowance")
        #expect(nextDay.allowance == PopularityRule.Allowance(day: 6, used: Popularity(views: 7)))
    }

    @Test func anAllowanceAboveTheCapAdmitsNothing() {
        let edited = PopularityRule.Allowance(day: 3, used: Popularity(views: .max, shown: cap + 1, engaged: cap))
        #expect(PopularityRule.admit(Popularity(views: 1, shown: 1, engaged: 1), on: 3, after: edited).counted == Popularity())
    }

    @Test func daysAreWholeDaysOfCloudTime() {
        #expect(PopularityRule.day(milliseconds: 0) == 0)
        #expect(PopularityRule.day(milliseconds: PopularityRule.dayMilliseconds - 1) == 0)
        #expect(PopularityRule.day(milliseconds: PopularityRule.dayMilliseconds) == 1)
        #expect(PopularityRule.day(milliseconds: -1) == -1, "a clock before 1970 still has days")
    }
}
