import CloudIndex
import SyncWire
import Testing

@Suite struct FramePlacementTests {
    private func place(_ epoch: UInt64, _ first: UInt64, _ last: UInt64, held: [(epoch: UInt64, last: UInt64)]) -> FramePlacement {
        FramePlacement.of(epoch: epoch, firstSeq: first, lastSeq: last, held: held)
    }

    @Test func theNextPositionsAreAppended() {
        #expect(place(1, 1, 5, held: []) == .append(acceptedFrom: 1, overlap: nil))
        #expect(place(1, 6, 9, held: [(1, 5)]) == .append(acceptedFrom: 6, overlap: nil))
        #expect(place(2, 1, 3, held: [(1, 5)]) == .append(acceptedFrom: 1, overlap: nil), "a new epoch starts at 1")
    }

    @Test func heldPositionsAreDuplicatesOrOverlaps() {
        #expect(place(1, 2, 4, held: [(1, 5)]) == .duplicate(head: OutboxPosition(epoch: 1, seq: 5), overlap: 2...4))
        #expect(place(1, 4, 8, held: [(1, 5)]) == .append(acceptedFrom: 6, overlap: 4...5))
        #expect(place(1, 1, 5, held: [(1, 5), (2, 3)]) == .duplicate(head: OutboxPosition(epoch: 2, seq: 3), overlap: 1...5),
                "a resent frame of an ended epoch is acknowledged with the current head")
    }

    @Test func gapsAndEndedEpochsAreRefusedWithWhereToContinue() {
        guard case .refuse(let gap) = place(1, 7, 9, held: [(1, 5)]) else { Issue.record("gap accepted"); return }
        #expect(gap.error.code == .gap && gap.expected == OutboxPosition(epoch: 1, seq: 6))
        guard case .refuse(let newEpoch) = place(3, 2, 4, held: [(1, 5)]) else { Issue.record("gap accepted"); return }
        #expect(newEpoch.expected == OutboxPosition(epoch: 1, seq: 6),
                "a restored cloud that lost a new epoch's start asks for what it lacks of the epoch before")
        guard case .refuse(let unknown) = place(3, 2, 4, held: []) else { Issue.record("gap accepted"); return }
        #expect(unknown.expected == OutboxPosition(epoch: 0, seq: 1),
                "a cloud that holds nothing of the device asks for everything, from the first epoch on")
        guard case .refuse(let ended) = place(1, 5, 7, held: [(1, 5), (2, 1)]) else { Issue.record("ended epoch grown"); return }
        #expect(ended.error.code == .gap && ended.expected == OutboxPosition(epoch: 2, seq: 2),
                "a resurfaced tail of an ended epoch is sent on past the current epoch's head")
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
