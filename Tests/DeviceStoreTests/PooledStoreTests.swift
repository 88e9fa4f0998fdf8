import DeviceStore
import Foundation
import IndexModel
import Testing

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
                for call in roundCalls(round, owner: "store \(number)") {
                    try store.perform(call)
                    try twins[number].perform(call)
                }
                #expect(try observableState(store) == observableState(twins[number]), "store \(number), round \(round)")
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
