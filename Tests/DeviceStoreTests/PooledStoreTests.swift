import DeviceStore
import Foundation
import IndexModel
import Synchronization
import Testing

/// Options for an in-memory store seeded with `seed`, on `pool` when there is one.
private func storeOptions(_ seed: UInt64, clock: ManualClock, pool: StoreConnectionPool?) -> StoreOptions {
    StoreOptions(clock: clock, random: SeededRandom(seed: seed), connections: pool)
}

/// `count` in-memory stores on `pool`, and a twin of each, seeded alike, on a connection of its own.
private func pooledStoresAndTwins(_ count: Int, pool: StoreConnectionPool,
                                  clock: ManualClock) throws -> (pooled: [DeviceStore], twins: [DeviceStore]) {
    (try (0..<count).map { try DeviceStore(at: .memory, options: storeOptions(UInt64($0), clock: clock, pool: pool)) },
     try (0..<count).map { try DeviceStore(at: .memory, options: storeOptions(UInt64($0), clock: clock, pool: nil)) })
}

@Suite struct PooledStoreTests {
    /// The simulator draws every device's identity at the start and makes
    /// each store when its device is first touched: that store must be the
    /// one made at the start, byte for byte, its randomness drawn from in
    /// the same order, on a pooled connection or one of its own.
    @Test func aStoreMadeLaterFromAnIdentityDrawnEarlierIsTheStoreMadeThenByteForByte() throws {
        for pool in [StoreConnectionPool(mostIdle: 1), nil] as [StoreConnectionPool?] {
            let clock = ManualClock(testStart)
            let early = storeOptions(42, clock: clock, pool: pool), late = storeOptions(42, clock: clock, pool: pool)
            let madeThen = try DeviceStore(at: .memory, options: early)
            let identity = DeviceStore.drawIdentity(late)
            #expect(early.random.next() == late.random.next(), "the identity is drawn as making the store draws it")
            try clock.advance(to: testStart.adding(milliseconds: 3_600_000))
            let madeLater = try DeviceStore(new: identity, options: late)
            #expect(madeLater.deviceID == madeThen.deviceID && madeLater.deviceID == identity.deviceID)
            #expect(early.random.next() == late.random.next(), "making the store later draws nothing more")
            for store in [madeThen, madeLater] { try store.setDeviceKey([UInt8](repeating: 7, count: 32)) }
            let directory = try temporaryDirectory()
            let paths = ["then", "later"].map { directory.appendingPathComponent("\($0).slsnap").path }
            _ = try madeThen.snapshot(to: paths[0])
            _ = try madeLater.snapshot(to: paths[1])
            #expect(try Data(contentsOf: URL(fileURLWithPath: paths[0])) == Data(contentsOf: URL(fileURLWithPath: paths[1])))
            let calls = roundCalls(0, owner: "either")
            for call in calls {
                try madeThen.perform(call)
                try madeLater.perform(call)
            }
            #expect(try observableState(madeLater) == observableState(madeThen))
        }
    }

    @Test func storesThatTakeTurnsOnPooledConnectionsEachSeeOnlyTheirOwnPages() throws {
        let pool = StoreConnectionPool(mostIdle: 2)
        let clock = ManualClock(testStart)
        let count = 5
        let (pooled, twins) = try pooledStoresAndTwins(count, pool: pool, clock: clock)
        var stores: [DeviceStore?] = pooled
        var sleeping: [SleepingStore?] = Array(repeating: nil, count: count)
        for round in 0..<8 {
            for number in 0..<count {
                if let asleep = sleeping[number] {
                    stores[number] = try DeviceStore(waking: asleep, options: storeOptions(100, clock: clock, pool: pool))
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
        #expect(pool.connectionsMade == 1, "one connection runs every store's transactions, one at a time")
    }

    /// A pooled connection keeps the statements of rarer calls too (deletions
    /// by domain or of everything, a batch's client state, expiry), and hands
    /// them from one store to the next: each store's calls still read only
    /// its own rows, as they do on a store of its own, which compiles them
    /// for each use.
    @Test func pooledStoresTakingTurnsRunRareCallsAsAStoreOfItsOwnDoes() throws {
        let pool = StoreConnectionPool(mostIdle: 1)
        let clock = ManualClock(testStart)
        let count = 3
        let (stores, twins) = try pooledStoresAndTwins(count, pool: pool, clock: clock)
        func activity(_ number: Int, _ round: Int, _ index: Int, domain: String) -> AppOperation {
            var activity = UserActivity(activityType: "com.example.visit", title: "Visit \(number).\(round).\(index)",
                                        eligibleForSearch: true, persistentIdentifier: "a\(number).\(round).\(index)")
            activity.domainIdentifier = domain
            return .activity(activity)
        }
        func calls(_ number: Int, _ round: Int) -> [AppOperation] {
            let items = (0..<4).map { index in
                item("i\(number).\(round).\(index)", domain: index % 2 == 0 ? "trips.\(number)" : "notes.\(number)",
                     title: "Item \(index) of store \(number) round \(round)",
                     expires: index == 3 ? testStart.adding(milliseconds: Int64(round) * 1_000 + 500) : nil)
            }
            return [
                .batch(IndexBatch(index: "photos", operations: [.index(index: "photos", items: items)], clientState: [UInt8(round)],
                                  condition: round == 0 ? .unconditional : .expecting([UInt8(round - 1)]))),
                .index(index: "other", items: [item("o\(number).\(round)", title: "Other")]),
                activity(number, round, 0, domain: "visits.\(number).city"),
                activity(number, round, 1, domain: "visits.\(number)"),
                activity(number, round, 2, domain: "calls.\(number)"),
                .deleteDomains(index: "photos", domains: ["trips.\(number)"]),
                .deleteActivities(identifiers: ["a\(number).\(round).2", "missing"]),
                .deleteActivityDomains(domains: ["visits.\(number)"]),
            ] + (round % 2 == 1 ? [.deleteAll(index: "other"), .deleteAllActivities] : [])
        }
        for round in 0..<4 {
            for number in 0..<count {
                for call in calls(number, round) {
                    try stores[number].perform(call)
                    try twins[number].perform(call)
                }
                #expect(try observableState(stores[number]) == observableState(twins[number]), "store \(number), round \(round)")
                #expect(try stores[number].identifiers(in: "photos") == twins[number].identifiers(in: "photos"))
            }
            try clock.advance(to: testStart.adding(milliseconds: Int64(round + 1) * 1_000))
        }
        for number in 0..<count {
            // The last round's expiring item goes at the next call.
            try stores[number].perform(.shown(ref: "nothing"))
            #expect(try Set(stores[number].identifiers(in: "photos")) == Set((0..<4).map { "i\(number).\($0).1" }),
                    "store \(number) keeps only its own notes that did not expire")
        }
        #expect(pool.connectionsMade == 1)
    }

    /// The pool serves only stores of a new store's schema, whose every
    /// connection has parsed it: an unpooled store's pages (copied in by
    /// the backup API, which counts a schema change) get a connection of
    /// their own, and leave the pool's as they were.
    @Test func pagesOfAnotherSchemaCountGetAConnectionOfTheirOwn() throws {
        let pool = StoreConnectionPool(mostIdle: 4)
        let clock = ManualClock(testStart)
        let pooled = StoreOptions(clock: clock, random: SeededRandom(seed: 4), connections: pool)
        var fresh: DeviceStore? = try DeviceStore(at: .memory, options: pooled)
        try fresh?.perform(.index(index: "notes", items: [item("a", title: "Apple pie")]))
        #expect(pool.idleConnections == 1 && pool.connectionsMade == 1, "a store's transaction gives its connection back")
        fresh = nil

        let unpooled = try DeviceStore(at: .memory, options: StoreOptions(clock: clock, random: SeededRandom(seed: 3)))
        try unpooled.perform(.index(index: "notes", items: [item("b", title: "Banana bread")]))
        var woken: DeviceStore? = try DeviceStore(waking: unpooled.hibernate(), options: pooled)
        #expect(try woken?.resultTitles("banana") == ["Banana bread"])
        #expect(try woken?.resultTitles("apple") == [])
        #expect(pool.idleConnections == 1 && pool.connectionsMade == 2, "the pool's connection is not lent to another schema")
        woken = nil
        #expect(pool.idleConnections == 1, "a connection of another schema is not kept")

        let next = try DeviceStore(at: .memory, options: pooled)
        #expect(try next.resultTitles("apple") == [] && next.resultTitles("banana") == [])
        #expect(pool.idleConnections == 1 && pool.connectionsMade == 2)
    }

    /// A store's transactions run one at a time whichever threads call it,
    /// as on a connection of its own, while other stores' run beside them
    /// on other connections of the pool.
    @Test func pooledStoresCalledFromTwoThreadsAtOnceEachKeepTheirOwnPages() throws {
        let pool = StoreConnectionPool(mostIdle: 4)
        let shared = try DeviceStore(at: .memory, options: StoreOptions(clock: ManualClock(testStart), random: SeededRandom(seed: 9),
                                                                       connections: pool))
        let clocks = [ManualClock(testStart), ManualClock(testStart)]
        let stores = try (0..<2).map { thread in
            try (0..<3).map { try DeviceStore(at: .memory, options: StoreOptions(clock: clocks[thread], random: SeededRandom(seed: UInt64(thread * 3 + $0)),
                                                                                connections: pool)) }
        }
        let twins = try (0..<2).map { thread in
            try (0..<3).map { try DeviceStore(at: .memory, options: StoreOptions(clock: clocks[thread], random: SeededRandom(seed: UInt64(thread * 3 + $0)))) }
        }
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { thread in
            do {
                for round in 0..<6 {
                    for (number, store) in stores[thread].enumerated() {
                        for call in roundCalls(round, owner: "thread \(thread) store \(number)") {
                            try store.perform(call)
                            try twins[thread][number].perform(call)
                        }
                        for call in 0..<60 {
                            try shared.perform(.index(index: "shared", items: [item("t\(thread)-r\(round)-s\(number)-\(call)", title: "Shared \(thread)")]))
                        }
                    }
                    try clocks[thread].advance(to: testStart.adding(milliseconds: Int64(round + 1) * 1_000))
                }
            } catch {
                failures.withLock { $0.append("thread \(thread): \(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        for thread in 0..<2 {
            for number in 0..<3 {
                #expect(try observableState(stores[thread][number]) == observableState(twins[thread][number]), "thread \(thread), store \(number)")
            }
        }
        let verification = try shared.verifyJournal()
        #expect(verification.isValid && verification.verifiedRows == 2 * 6 * 3 * 60)
        #expect(try shared.items(in: "shared").count == 2 * 6 * 3 * 60, "every call from both threads, once")
        #expect(pool.connectionsMade <= 2, "at most one connection for each thread at once")
    }

    /// A pooled store tells a change by its pages' change count: woken and
    /// only read, it sleeps on the image it woke from; written to, it
    /// deflates its pages again, and wakes with the write.
    @Test func aPooledStoreWokenAndOnlyReadSleepsOnItsImageAndOneWrittenToDeflatesAgain() throws {
        let options = StoreOptions(clock: ManualClock(testStart), random: SeededRandom(seed: 5), connections: StoreConnectionPool())
        let store = try DeviceStore(at: .memory, options: options)
        try store.perform(.index(index: "notes", items: [item("a", title: "Apple pie")]))
        let asleep = try store.hibernate()
        #expect(!asleep.keptImage)
        let woken = try DeviceStore(waking: asleep, options: options)
        _ = try woken.syncStatus()
        #expect(try woken.items(in: "notes").count == 1 && woken.verifyJournal().isValid)
        let again = try woken.hibernate()
        #expect(again.keptImage && again.image == asleep.image)
        let written = try DeviceStore(waking: again, options: options)
        try written.perform(.index(index: "notes", items: [item("b", title: "Banana bread")]))
        let changed = try written.hibernate()
        #expect(!changed.keptImage && changed.image != asleep.image)
        #expect(try DeviceStore(waking: changed, options: options).items(in: "notes").count == 2)
    }
}
