import DeviceStore
import Foundation
import GRDB
import IndexModel
import Testing
import Workloads

@Suite struct JournalTests {
    @Test func seqsAreDenseAndTheHashChainVerifies() throws {
        let store = try makeStore()
        var workload = SyntheticWorkload(seed: 7)
        for _ in 0..<300 { _ = try? store.perform(workload.nextOperation()) }
        let verification = try store.verifyJournal()
        #expect(verification.isValid)
        let head = try store.journalHead()
        #expect(verification.verifiedRows == Int(head.seq.rawValue))
        #expect(verification.headHash == head.hash)
        var expected = Seq(1)
        var previous = ChainHash.genesis
        try store.scanJournal { record in
            #expect(record.seq == expected)
            #expect(record.previousHash == previous)
            expected = expected.next
            previous = record.hash
            return true
        }
    }

    @Test func verifyNamesTheFirstAlteredRow() throws {
        let directory = try temporaryDirectory()
        let path = directory.appendingPathComponent("d.sqlite").path
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
        try store.index(named: "photos").indexSearchableItems((1...10).map { item("\($0)", title: "T\($0)") })
        let tamper = try DatabaseQueue(path: path)
        try tamper.write { db in
            let payload = try Data.fetchOne(db, sql: "SELECT payload FROM event_journal WHERE seq = 6")!
            var bytes = [UInt8](payload)
            bytes[bytes.count - 1] ^= 0x01
            try db.execute(sql: "UPDATE event_journal SET payload = ? WHERE seq = 6", arguments: [Data(bytes)])
        }
        let verification = try store.verifyJournal()
        #expect(verification.firstProblem?.seq == Seq(6))
        #expect(verification.verifiedRows == 5)
    }

    @Test func verifyNamesAMissingSeq() throws {
        let directory = try temporaryDirectory()
        let path = directory.appendingPathComponent("d.sqlite").path
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
        try store.index(named: "photos").indexSearchableItems((1...5).map { item("\($0)") })
        try DatabaseQueue(path: path).write { db in try db.execute(sql: "DELETE FROM event_journal WHERE seq = 3") }
        let problem = try #require(try store.verifyJournal().firstProblem)
        #expect(problem.seq == Seq(3))
        #expect(problem.message.contains("missing"))
    }

    @Test func aFailedCallLeavesJournalAndProjectionsUntouched() throws {
        let store = try makeStore()
        try store.index(named: "photos").indexSearchableItems([item("1", title: "One")])
        let before = (try store.journalHead(), try store.projectionDigest())
        var batch = store.index(named: "photos").beginBatch()
        batch.indexSearchableItems([item("2")])
        batch.deleteAllSearchableItems()
        #expect(throws: DeviceStoreError.self) {
            try store.index(named: "photos").endBatch(batch, expectedClientState: [42], newClientState: [1])
        }
        #expect(try store.journalHead().seq == before.0.seq)
        #expect(try store.projectionDigest() == before.1)
    }

    @Test func storesOfTheSameSeedHaveTheSameDeviceAndHead() throws {
        func run() throws -> (DeviceID, ChainHash) {
            let store = try makeStore(seed: 99)
            var workload = SyntheticWorkload(seed: 3)
            for _ in 0..<100 { _ = try? store.perform(workload.nextOperation()) }
            return (store.deviceID, try store.journalHead().hash)
        }
        let first = try run()
        let second = try run()
        #expect(first == second)
    }
}
