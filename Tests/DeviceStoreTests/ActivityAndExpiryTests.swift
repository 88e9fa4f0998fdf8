import DeviceStore
import IndexModel
import Testing

/// A store whose "photos" hold a sunrise that expires a minute after the
/// start and a sunset that never does.
private func sunriseExpiringAfterAMinute() throws -> (DeviceStore, ManualClock) {
    let clock = ManualClock(testStart)
    let store = try makeStore(clock: clock)
    try store.index(named: "photos").indexSearchableItems([
        item("1", title: "Sunrise", expires: testStart.adding(milliseconds: 60_000)),
        item("2", title: "Sunset"),
    ])
    return (store, clock)
}

@Suite struct ActivityAndExpiryTests {
    @Test func expiredItemLeavesSearchAtOnceAndIsRemovedByAJournaledExpiry() throws {
        let (store, clock) = try sunriseExpiringAfterAMinute()
        #expect(try store.resultTitles("sun").count == 2)
        clock.advance(byMilliseconds: 60_000)
        #expect(try store.resultTitles("sun") == ["Sunset"])
        // Still in the projection until the next call journals the expiry.
        #expect(try store.identifiers(in: "photos") == ["1", "2"])
        let outcome = try store.expireNow()
        #expect(outcome.expired == 1)
        #expect(try store.identifiers(in: "photos") == ["2"])
        let record = try store.records(outcome.seqs!)[0]
        #expect(try record.event() == .itemExpired(index: "photos", identifier: "1"))
    }

    /// Calls grouped in one transaction keep the earliest expiration date in
    /// memory instead of querying before each call; an item indexed earlier in
    /// the same transaction must still expire when a later call passes its date.
    @Test func expiryWithinOneTransactionIsJournaledByTheNextCall() throws {
        let clock = ManualClock(testStart)
        let store = try makeStore(clock: clock)
        let soon = testStart.adding(milliseconds: 60_000)
        let later = testStart.adding(milliseconds: 120_000)
        var activity = UserActivity(activityType: "com.example.view")
        activity.persistentIdentifier = "a1"
        activity.expirationDate = later
        let outcomes = try store.performAll([
            .index(index: "photos", items: [item("1", title: "Sunrise", expires: soon), item("2", title: "Sunset")]),
            .activity(activity),
            .shown(ref: "2"),
            .advanceClock(to: soon),
            .shown(ref: "2"),
            .advanceClock(to: later),
        ])
        let expired: [Int] = outcomes.map(\.expired)
        #expect(expired == [0, 0, 0, 1, 0, 1])
        #expect(try store.identifiers(in: "photos") == ["2"])
        #expect(try store.activities().isEmpty)
        #expect(try store.projectionDigest() == store.rebuiltProjectionDigest())
    }

    /// An in-memory store remembers its earliest expiry date between calls. A
    /// group of calls that swept an item, then failed, rolls the item back:
    /// the store must not remember the swept state, or the item would never
    /// expire.
    @Test func anItemSweptByAGroupThatRolledBackStillExpiresAtTheNextCall() throws {
        let (store, clock) = try sunriseExpiringAfterAMinute()
        clock.advance(byMilliseconds: 10_000)
        #expect(try store.perform(.shown(ref: "2")).expired == 0)
        clock.advance(byMilliseconds: 60_000)
        #expect {
            try store.performAll([
                .shown(ref: "2"),
                .shown(ref: "2"),
                .batch(IndexBatch(index: "photos", operations: [], clientState: [2], condition: .expecting([7]))),
            ])
        } throws: { error in
            (error as? DeviceStoreError)?.code == .clientStateMismatch
        }
        #expect(try store.identifiers(in: "photos") == ["1", "2"], "the rollback brought the item back")
        #expect(try store.perform(.shown(ref: "2")).expired == 1)
        #expect(try store.identifiers(in: "photos") == ["2"])
    }

    @Test func advanceClockNeedsASimulatedClock() throws {
        let store = try DeviceStore(at: .memory, options: StoreOptions(clock: SystemClock()))
        #expect {
            try store.perform(.advanceClock(to: testStart))
        } throws: { error in
            (error as? DeviceStoreError)?.code == .clockNotSimulated
        }
    }

    @Test func advanceClockRefusesToGoBackwards() throws {
        let store = try makeStore()
        #expect {
            try store.perform(.advanceClock(to: testStart.adding(milliseconds: -1)))
        } throws: { error in
            (error as? DeviceStoreError)?.code == .clockWentBackwards
        }
    }

    @Test func activitiesAreSearchableOnlyWhenEligible() throws {
        let store = try makeStore()
        try store.record(UserActivity(activityType: "t", title: "Private recipe"))
        try store.record(UserActivity(activityType: "t", title: "Searchable recipe", eligibleForSearch: true))
        #expect(try store.resultTitles("recipe") == ["Searchable recipe"])
        #expect(try store.activities().count == 2)
    }

    @Test func makingAnActivityCurrentAgainCountsAView() throws {
        let store = try makeStore()
        let activity = UserActivity(activityType: "t", title: "Chips", webpageURL: "https://x/1", eligibleForSearch: true)
        try store.record(activity)
        try store.record(activity)
        let stored = try store.activities()
        #expect(stored.count == 1)
        #expect(stored[0].viewCount == 2)
    }

    @Test func deletingTheStronglyRelatedItemMakesTheActivityIneligible() throws {
        let store = try makeStore()
        try store.index(named: "photos").indexSearchableItems([item("1", title: "Photo"), item("2", title: "Other")])
        let strong = UserActivity(activityType: "t", title: "Viewing strong", eligibleForSearch: true,
                                  relatedUniqueIdentifier: "1")
        let weak = UserActivity(activityType: "t", title: "Viewing weak", eligibleForSearch: true,
                                weakRelatedUniqueIdentifier: "2")
        try store.record(strong)
        try store.record(weak)
        #expect(Set(try store.resultTitles("viewing")) == ["Viewing strong", "Viewing weak"])
        try store.index(named: "photos").deleteSearchableItems(withIdentifiers: ["1", "2"])
        #expect(try store.resultTitles("viewing") == ["Viewing weak"])
        // Becoming current again makes it eligible again.
        try store.record(strong)
        #expect(Set(try store.resultTitles("viewing")) == ["Viewing strong", "Viewing weak"])
    }

    @Test func activitiesAreDeletedByPersistentIdentifierDomainAndAll() throws {
        let store = try makeStore()
        try store.record(UserActivity(activityType: "t", title: "a", persistentIdentifier: "a1"))
        try store.record(UserActivity(activityType: "t", title: "b", domainIdentifier: "recipes.2015"))
        try store.record(UserActivity(activityType: "t", title: "c", domainIdentifier: "recipesx"))
        #expect(try store.perform(.deleteActivities(identifiers: ["a1", "unknown"])).deleted == 1)
        #expect(try store.perform(.deleteActivityDomains(domains: ["recipes"])).deleted == 1)
        #expect(try store.activities().map(\.activity.title) == ["c"])
        #expect(try store.perform(.deleteAllActivities).deleted == 1)
        #expect(try store.activities().isEmpty)
    }

    @Test func expiredActivityIsJournaledAndRemoved() throws {
        let clock = ManualClock(testStart)
        let store = try makeStore(clock: clock)
        try store.record(UserActivity(activityType: "t", title: "Soon gone", expirationDate: testStart.adding(milliseconds: 10),
                                      eligibleForSearch: true))
        clock.advance(byMilliseconds: 10)
        #expect(try store.resultTitles("soon").isEmpty)
        #expect(try store.perform(.shown(ref: "x")).expired == 1)
        #expect(try store.activities().isEmpty)
    }
}
