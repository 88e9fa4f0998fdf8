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

    /// Journal/FORMAT.md's chain hash, against vectors computed outside
    /// Swift (Python's hashlib over the same concatenation): SHA-256 of the
    /// previous hash, epoch, seq, call and time as big-endian 64-bit words,
    /// the kind byte, then the SHA-256 of the payload.
    @Test func aChainHashIsTheSHA256OfThePreviousHashThePositionTheKindAndThePayloadsHash() throws {
        let previous = try #require(ChainHash((0..<32).map { UInt8($0) }))
        let payload: [UInt8] = [1, 7] + Array("hello, journal".utf8)
        let hash = ChainHash.of(previous: previous, epoch: Epoch(3), seq: Seq(42), call: CallID(9),
                                time: Timestamp(millisecondsSince1970: 1_795_000_000_000), kind: 7,
                                payloadHash: ChainHash.ofPayload(payload))
        #expect(hash.hex == "4d70983465fcada49d2f2b5fecca379906e7fe746ad0b69e72c4a6c05268e3b5")
        let first = ChainHash.of(previous: .genesis, epoch: Epoch(1), seq: Seq(1), call: CallID(1),
                                 time: Timestamp(millisecondsSince1970: -5), kind: 0, payloadHash: ChainHash.ofPayload([]))
        #expect(first.hex == "6e339b32688381a8fa6dbe35dbc83ef6772c51a44a2841f239b171edaaf8c587")
    }

    /// Stores of format 4 and older chained the payload itself.
    @Test func theChainOfFormat4StoresIsTheSHA256OfThePreviousHashThePositionAndThePayload() throws {
        let previous = try #require(ChainHash((0..<32).map { UInt8($0) }))
        let hash = ChainHash.overPayload(previous: previous, epoch: Epoch(3), seq: Seq(42), call: CallID(9),
                                         time: Timestamp(millisecondsSince1970: 1_795_000_000_000),
                                         payload: [1, 7] + Array("hello, journal".utf8))
        #expect(hash.hex == "94cd446cb9573420398da3d133e9552359a8e932c86c0fb07e00376a28025da3")
        let first = ChainHash.overPayload(previous: .genesis, epoch: Epoch(1), seq: Seq(1), call: CallID(1),
                                          time: Timestamp(millisecondsSince1970: -5), payload: [])
        #expect(first.hex == "143943c0b12b3c82a0691b200614f7fd669fb9f8126d44f58a0c1807b2b058f7")
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
