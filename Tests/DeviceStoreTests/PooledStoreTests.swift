import DeviceStore
import Foundation
import IndexModel
import Testing

/// The calls each store makes in a round: a note, a public activity with
/// its engagement, an edit, a delete and a search.
private func calls(_ round: Int, store: Int) -> [AppOperation] {
    let url = "https://example.com/\(store)/recipe/\(round)"
    return [
        .index(index: "notes", items: [item("n\(round)", domain: "notes.f\(round % 3)", title: "Note \(round) of store \(store)")]),
        .activity(UserActivity(activityType: "com.example.recipe", title: "Recipe \(round)", webpageURL: url,
                               eligibleForSearch: true, eligibleForPublicIndexing: true, persistentIdentifier: "r\(round)")),
        .engage(ref: url),
        .update(index: "notes", updates: [ItemUpdate(uniqueIdentifier: "n\(round)",
                                                     attributes: AttributeChanges([.title: .string("Note \(round) of store \(store) edited")]))]),
        .delete(index: "notes", identifiers: ["n\(max(0, round - 2))"]),
    ]
}

/// What a user and the sync would see of a store.
private func state(_ store: DeviceStore) throws -> [String] {
    [try store.projectionDigest(), "\(try store.outboxEntries())", "\(try store.syncStatus())",
     "\(try store.resultTitles("note"))", "\(try store.verifyJournal().head)", store.deviceID.rawValue]
}

@Suite struct PooledStoreTests {
    @Test func storesThatTakeTurnsOnPooledConnectionsEachSeeOnlyTheirOwnPages() throws {
        let pool = StoreConnectionPool(mostIdle: 2)
        let clock = ManualClock(testStart)
        func options(_ seed: UInt64, pooled: Bool) -> StoreOptions {
            StoreOptions(clock: clock, random: SeededRandom(seed: seed), connections: pooled ? pool : nil)
        }
        let count = 5
        let twins = try (0..<count).map { try DeviceStore(at: .memory, options: options(UInt64($0), pooled: false)) }
        var stores: [DeviceStore?] = try (0..<count).map { try DeviceStore(at: .memory, options: options(UInt64($0), pooled: true)) }
        var sleeping: [SleepingStore?] = Array(repeating: nil, count: count)
        for round in 0..<8 {
            for number in 0..<count {
                if let asleep = sleeping[number] {
                    stores[number] = try DeviceStore(waking: asleep, options: options(100, pooled: true))
                    sleeping[number] = nil
                }
                guard let store = stores[number] else { continue }
                for call in calls(round, store: number) {
                    try store.perform(call)
                    try twins[number].perform(call)
                }
                #expect(try state(store) == state(twins[number]), "store \(number), round \(round)")
                // Every other store sleeps, and its connection goes to the next store to wake.
                if (number + round) % 2 == 0 {
                    sleeping[number] = try store.hibernate()
                    stores[number] = nil
                }
            }
            try clock.advance(to: testStart.adding(milliseconds: Int64(round + 1) * 1_000))
        }
        #expect(pool.connectionsMade < count * 8 / 2, "woken stores take connections back from the pool")
    }

    /// The pool serves only stores of a new store's schema, whose every
    /// connection has parsed it: an unpooled store's pages (copied in by
    /// the backup API, which counts a schema change) open a connection of
    /// their own, and leave the pool's as they were.
    @Test func aStoreOfAnotherSchemaCountOpensAConnectionOfItsOwn() throws {
        let pool = StoreConnectionPool(mostIdle: 4)
        let clock = ManualClock(testStart)
        let pooled = StoreOptions(clock: clock, random: SeededRandom(seed: 4), connections: pool)
        var fresh: DeviceStore? = try DeviceStore(at: .memory, options: pooled)
        try fresh?.perform(.index(index: "notes", items: [item("a", title: "Apple pie")]))
        fresh = nil
        #expect(pool.idleConnections == 1, "a new store's connection goes back to the pool")

        let unpooled = try DeviceStore(at: .memory, options: StoreOptions(clock: clock, random: SeededRandom(seed: 3)))
        try unpooled.perform(.index(index: "notes", items: [item("b", title: "Banana bread")]))
        var woken: DeviceStore? = try DeviceStore(waking: unpooled.hibernate(), options: pooled)
        #expect(pool.idleConnections == 1 && pool.connectionsMade == 1, "the pool's connection is not lent to another schema")
        #expect(try woken?.resultTitles("banana") == ["Banana bread"])
        #expect(try woken?.resultTitles("apple") == [])
        woken = nil
        #expect(pool.idleConnections == 1)

        var next: DeviceStore? = try DeviceStore(at: .memory, options: pooled)
        #expect(pool.idleConnections == 0 && pool.connectionsMade == 1)
        #expect(try next?.resultTitles("apple") == [] && next?.resultTitles("banana") == [])
        next = nil
    }
}
