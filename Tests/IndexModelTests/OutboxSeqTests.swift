import IndexModel
import Testing

@Suite struct OutboxSeqTests {
    @Test func theSeqBeforeTheFirstHasNoPrevious() {
        #expect(OutboxSeq.first.previous == .beforeFirst)
        #expect(OutboxSeq.beforeFirst.previous == nil)
        #expect(OutboxSeq.beforeFirst.next == .first)
    }

    @Test func countsSpanARangeAndNeverGoNegative() {
        #expect(OutboxSeq(3).count(through: OutboxSeq(7)) == 5)
        #expect(OutboxSeq(3).count(through: OutboxSeq(3)) == 1)
        #expect(OutboxSeq(7).count(through: OutboxSeq(3)) == 0)
        #expect(OutboxSeq(3).count(before: OutboxSeq(7)) == 4, "the offset of seq 7 among messages from seq 3")
        #expect(OutboxSeq(3).count(before: OutboxSeq(3)) == 0)
        #expect(OutboxSeq(7).count(before: OutboxSeq(3)) == 0)
        #expect(OutboxSeq.beforeFirst.count(through: OutboxSeq(.max)) == Int.max, "a count past Int.max saturates")
    }

    @Test func anEpochAdvanceRenumbersWhatComesAfterTheKeptSeqs() {
        #expect(OutboxSeq(5).renumbered(after: OutboxSeq(2)) == OutboxSeq(3))
        #expect(OutboxSeq(5).renumbered(after: .beforeFirst) == OutboxSeq(5), "nothing kept: the seqs stay")
        #expect(OutboxSeq(2).renumbered(after: OutboxSeq(2)) == .beforeFirst, "a kept seq stays in its epoch")
    }
}
