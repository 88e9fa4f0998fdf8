import DeviceStore
import Foundation
import IndexModel
import Testing
import Workloads

@Suite struct RebuildTests {
    /// Runs a seeded workload of every kind of call, with expirations and clock
    /// advances, and returns the store.
    func storeAfterRandomWorkload(seed: UInt64, calls: Int) throws -> (store: DeviceStore, committed: Int) {
        var options = SyntheticWorkload.Options()
        options.includeClock = true
        let store = try makeStore(seed: seed, clock: ManualClock(options.start))
        var workload = SyntheticWorkload(seed: seed, options: options)
        var committed = 0
        for _ in 0..<calls {
            do {
                try store.perform(workload.nextOperation())
                committed += 1
            } catch {
                // A generated conditional batch may find another client state.
                if error.code != .clientStateMismatch { throw error }
            }
        }
        return (store, committed)
    }

    /// The incrementally kept projections must equal a replay of the journal, both
    /// into a scratch database and in place, after a long random workload.
    @Test(arguments: [UInt64(11), UInt64(12), UInt64(13)])
    func projectionsEqualARebuildAfterALongRandomWorkload(seed: UInt64) throws {
        let (store, committed) = try storeAfterRandomWorkload(seed: seed, calls: 2500)
        let enough: Bool = committed > 2000
        #expect(enough, "seed \(seed): only \(committed) calls committed")
        let counts = try store.projectionCounts()
        let nonEmpty: Bool = counts.items > 0 && counts.activities > 0
        #expect(nonEmpty, "seed \(seed): the workload left nothing to compare")

        let incremental: String = try store.projectionDigest()
        let replayed: String = try store.rebuiltProjectionDigest()
        #expect(replayed == incremental, "seed \(seed)")

        try store.rebuildProjections()
        let rebuilt: String = try store.projectionDigest()
        #expect(rebuilt == incremental, "seed \(seed)")
        let valid: Bool = try store.verifyJournal().isValid
        #expect(valid)
    }

    /// Rebuilds reuse scratch databases, emptied after each use: a small
    /// store checked after a large one, of another device, must still equal
    /// its own replay, and the large one again after it.
    @Test func rebuildsOfDifferentStoresInTurnEachEqualTheirProjections() throws {
        let (large, _) = try storeAfterRandomWorkload(seed: 21, calls: 600)
        let (small, _) = try storeAfterRandomWorkload(seed: 22, calls: 40)
        let empty = try makeStore(seed: 23)
        for store in [large, small, empty, large, empty, small] {
            let incremental: String = try store.projectionDigest()
            let replayed: String = try store.rebuiltProjectionDigest()
            #expect(replayed == incremental)
        }
        // Nothing was acknowledged, so the outbox a replay implies ends where
        // the store's own does.
        for store in [large, small, empty, small] {
            let head = try store.syncStatus().head
            let implied = try store.impliedOutboxHeads()
            #expect(implied[head.epoch] == (head.seq > .beforeFirst ? head.seq : nil))
        }
    }

    @Test func digestChangesWhenAProjectionChanges() throws {
        let store = try makeStore()
        try store.index(named: "photos").indexSearchableItems([item("1", title: "One")])
        let before: String = try store.projectionDigest()
        try store.recordShown(ref: "1")
        let after: String = try store.projectionDigest()
        #expect(after != before)
    }
}
