import DeviceStore
import Foundation
import IndexModel
import Testing

@Suite struct HibernationTests {
    @Test func aStoreWokenFromSleepHoldsAndDoesWhatOneThatStayedAwakeDoes() throws {
        let clock = ManualClock(testStart)
        let awake = try makeStore(seed: 7, clock: clock)
        var sleeper = try makeStore(seed: 7, clock: clock)
        for round in 0..<12 {
            for call in roundCalls(round) {
                try awake.perform(call)
                try sleeper.perform(call)
            }
            if round % 3 == 2 {
                let sleeping = try sleeper.hibernate()
                #expect(sleeping.imageBytes > 0)
                #expect(sleeping.heldBytes < sleeping.imageBytes / 2, "a store's image is compressed while it sleeps, and holds no more memory than its compressed bytes")
                sleeper = try DeviceStore(waking: sleeping, options: StoreOptions(clock: clock, random: SeededRandom(seed: 99)))
            }
            try clock.advance(to: testStart.adding(milliseconds: Int64(round + 1) * 1_000))
            #expect(try observableState(sleeper) == observableState(awake), "round \(round)")
        }
        #expect(try sleeper.verifyJournal().isValid)
        // A backup of either is the same file, byte for byte: a woken store's
        // pages are laid out as they were, header included, so a restore
        // from it journals the same SHA-256.
        let directory = try temporaryDirectory()
        let paths = ["awake", "woken"].map { directory.appendingPathComponent("\($0).slsnap").path }
        _ = try awake.snapshot(to: paths[0])
        _ = try sleeper.snapshot(to: paths[1])
        #expect(try Data(contentsOf: URL(fileURLWithPath: paths[0])) == Data(contentsOf: URL(fileURLWithPath: paths[1])))
    }

    @Test func aStoreWokenAndLeftAsItWasSleepsOnItsImageAndOneWrittenToIsCompressedAgain() throws {
        let clock = ManualClock(testStart)
        let twin = try makeStore(seed: 5, clock: clock)
        var store = try makeStore(seed: 5, clock: clock)
        func options() -> StoreOptions { StoreOptions(clock: clock, random: SeededRandom(seed: 11)) }
        func both(_ round: Int) throws {
            for call in roundCalls(round) {
                try store.perform(call)
                try twin.perform(call)
            }
        }
        try both(0)
        let first = try store.hibernate()
        #expect(!first.keptImage, "a store that never slept has no image to keep")
        store = try DeviceStore(waking: first, options: options())
        #expect(store.wokenImageBytes > 0 && store.wokenImageBytes < first.imageBytes / 2,
                "a woken store keeps the deflated image it woke from, not its pages")
        // Reads leave the pages as they were.
        _ = try store.projectionDigest()
        _ = try store.syncStatus()
        _ = try store.verifyJournal()
        let unchanged = try store.hibernate()
        #expect(unchanged.keptImage, "the pages it woke with: the image it woke from")
        #expect(unchanged.imageBytes == first.imageBytes && unchanged.heldBytes == first.heldBytes)
        store = try DeviceStore(waking: unchanged, options: options())
        #expect(try observableState(store) == observableState(twin))
        try both(1)
        let written = try store.hibernate()
        #expect(!written.keptImage, "a store written to deflates its new pages")
        store = try DeviceStore(waking: written, options: options())
        #expect(try observableState(store) == observableState(twin), "the woken store holds the writes made before it slept")
    }

    @Test func aStoreWhoseKeeperHoldsItsImageSleepsUnchangedWithoutOneAndWakesFromTheKeepersCopy() throws {
        let clock = ManualClock(testStart)
        let twin = try makeStore(seed: 4, clock: clock)
        var store = try makeStore(seed: 4, clock: clock)
        func options() -> StoreOptions { StoreOptions(clock: clock, random: SeededRandom(seed: 12)) }
        for call in roundCalls(0) {
            try store.perform(call)
            try twin.perform(call)
        }
        let first = try store.hibernate()
        // The keeper takes the image out and keeps the rest.
        let held = first.image
        let parked = first.parked()
        #expect(parked.image.isEmpty && !held.isEmpty)
        #expect(parked.heldBytes == first.heldBytes - held.capacity, "a parked store holds none of its image")
        store = try DeviceStore(waking: parked.unparked(image: held), options: options(), keepingImage: false)
        #expect(store.wokenImageBytes == 0, "the keeper holds the image, not the woken store")
        _ = try store.projectionDigest()
        let unchanged = try store.hibernate()
        #expect(unchanged.keptImage && unchanged.image.isEmpty,
                "put to sleep as it woke, the store says so and leaves the image to its keeper")
        #expect(unchanged.imageBytes == first.imageBytes)
        store = try DeviceStore(waking: unchanged.unparked(image: held), options: options(), keepingImage: false)
        #expect(try observableState(store) == observableState(twin))
        for call in roundCalls(1) {
            try store.perform(call)
            try twin.perform(call)
        }
        let written = try store.hibernate()
        #expect(!written.keptImage && !written.image.isEmpty, "a store written to gives its keeper a new image")
        store = try DeviceStore(waking: written, options: options(), keepingImage: false)
        #expect(try observableState(store) == observableState(twin))
    }

    @Test func aStoreAsleepHoldsOnlyWhatItChangedOfANewStoresPages() throws {
        let clock = ManualClock(testStart)
        let new = try makeStore(seed: 9, clock: clock)
        let sleeping = try new.hibernate()
        // Its pages compressed as they are would take a few KiB, nearly all
        // of them the schema's.
        #expect(sleeping.imageBytes > 30_000 && sleeping.heldBytes < 1_024,
                "a new store asleep holds \(sleeping.heldBytes) bytes for \(sleeping.imageBytes) bytes of pages")
        let woken = try DeviceStore(waking: sleeping, options: StoreOptions(clock: clock, random: SeededRandom(seed: 9)))
        let twin = try makeStore(seed: 9, clock: clock)
        for round in 0..<3 {
            for call in roundCalls(round) {
                try woken.perform(call)
                try twin.perform(call)
            }
        }
        #expect(try observableState(woken) == observableState(twin))
    }

    /// A parked image comes back from a file another process could change:
    /// cut or lengthened, it is refused with an error that says so; with a
    /// byte changed, it is refused or wakes as some pages, and is never
    /// trapped on. (The keeper's file checks each image's `Fingerprint`
    /// before it gets here.)
    @Test func aStoreWhoseImageChangedWhileItSleptIsRefusedOrWakesWithoutATrap() throws {
        let clock = ManualClock(testStart)
        let store = try makeStore(seed: 13, clock: clock)
        for round in 0..<3 { for call in roundCalls(round) { try store.perform(call) } }
        let sleeping = try store.hibernate()
        let image = sleeping.image
        #expect(image.count > 16)
        func wake(_ candidate: [UInt8]) throws -> DeviceStore {
            try DeviceStore(waking: sleeping.parked().unparked(image: candidate),
                            options: StoreOptions(clock: clock, random: SeededRandom(seed: 13)))
        }
        for candidate in [Array(image.prefix(image.count / 2)), Array(image.dropLast(1)), image + [0x55], []] {
            #expect {
                _ = try wake(candidate)
            } throws: { error in
                (error as? DeviceStoreError)?.code == .corruptStore
            }
        }
        for at in stride(from: 0, to: image.count, by: max(1, image.count / 40)) {
            var changed = image
            changed[at] ^= 0xA5
            if let woken = try? wake(changed) { _ = try? woken.verifyJournal() }
        }
        #expect(try wake(image).verifyJournal().isValid)
    }

    @Test func aStoreFileSleepsByClosingItsConnectionAndWakesWhereItWas() throws {
        let directory = try temporaryDirectory()
        let clock = ManualClock(testStart)
        func options() -> StoreOptions { StoreOptions(clock: clock, random: SeededRandom(seed: 3), durability: .normal) }
        let twin = try DeviceStore(at: .file(directory.appendingPathComponent("awake.sqlite").path), options: options())
        let path = directory.appendingPathComponent("sleeper.sqlite").path
        var store = try DeviceStore(at: .file(path), options: options())
        for round in 0..<12 {
            for call in roundCalls(round) {
                try store.perform(call)
                try twin.perform(call)
            }
            // A backup of each, as the simulator takes them between sleeps.
            _ = try twin.snapshot(to: directory.appendingPathComponent("awake-\(round).slsnap").path)
            _ = try store.snapshot(to: directory.appendingPathComponent("woken-\(round).slsnap").path)
            let sleeping = try store.hibernate()
            #expect(sleeping.location == .file(path))
            #expect(sleeping.imageBytes == 0, "a file is not copied into memory")
            store = try DeviceStore(waking: sleeping, options: options())
            #expect(try observableState(store) == observableState(twin), "round \(round)")
        }
        let paths = ["awake", "woken"].map { directory.appendingPathComponent("\($0).slsnap").path }
        _ = try twin.snapshot(to: paths[0])
        _ = try store.snapshot(to: paths[1])
        #expect(try Data(contentsOf: URL(fileURLWithPath: paths[0])) == Data(contentsOf: URL(fileURLWithPath: paths[1])))
    }
}
