import DeviceStore
import IndexModel
import Testing

@Suite struct SearchableIndexTests {
    @Test func indexingAnExistingIdentifierReplacesTheItem() throws {
        let store = try makeStore()
        let photos = store.index(named: "photos")
        try photos.indexSearchableItems([item("1", title: "Old", keywords: ["a"])])
        try photos.indexSearchableItems([item("1", title: "New")])
        let items = try store.items(in: "photos")
        #expect(items.count == 1)
        #expect(items[0].attributes.title == "New")
        #expect(items[0].attributes.keywords == nil)
    }

    @Test func indexesAreSeparateNamespaces() throws {
        let store = try makeStore()
        try store.index(named: "photos").indexSearchableItems([item("1", title: "Photo")])
        try store.index(named: "notes").indexSearchableItems([item("1", title: "Note")])
        try store.index(named: "notes").deleteSearchableItems(withIdentifiers: ["1"])
        #expect(try store.identifiers(in: "photos") == ["1"])
        #expect(try store.identifiers(in: "notes") == [])
    }

    @Test func updateMergesSetFieldsClearsNilAndKeepsTheRest() throws {
        let store = try makeStore()
        let photos = store.index(named: "photos")
        try photos.indexSearchableItems([item("1", domain: "a", title: "Sunrise", description: "Maui", keywords: ["k"])])
        var changes = AttributeChanges()
        changes[.title] = .some(.string("Dawn"))
        changes[.contentDescription] = .some(nil)
        let outcome = try photos.updateSearchableItems([
            ItemUpdate(uniqueIdentifier: "1", attributes: changes),
            ItemUpdate(uniqueIdentifier: "absent", attributes: changes),
        ])
        #expect(outcome.updated == 1)
        #expect(outcome.ignored == 1)
        let updated = try #require(try store.item(in: "photos", identifier: "1"))
        #expect(updated.attributes.title == "Dawn")
        #expect(updated.attributes.contentDescription == nil)
        #expect(updated.attributes.keywords == ["k"])
        #expect(updated.domainIdentifier == "a")
        #expect(try store.item(in: "photos", identifier: "absent") == nil)
    }

    @Test func deletingADomainDeletesItsSubdomainsButNotSiblingsWithTheSamePrefix() throws {
        let store = try makeStore()
        let photos = store.index(named: "photos")
        try photos.indexSearchableItems([
            item("1", domain: "album"), item("2", domain: "album.2015"), item("3", domain: "album.2015.maui"),
            item("4", domain: "albums"), item("5", domain: "album-2"), item("6"),
        ])
        let outcome = try photos.deleteSearchableItems(withDomainIdentifiers: ["album"])
        #expect(outcome.deleted == 3)
        #expect(try store.identifiers(in: "photos") == ["4", "5", "6"])
    }

    @Test func deleteAllEmptiesOnlyThatIndex() throws {
        let store = try makeStore()
        try store.index(named: "photos").indexSearchableItems([item("1"), item("2")])
        try store.index(named: "notes").indexSearchableItems([item("3")])
        #expect(try store.index(named: "photos").deleteAllSearchableItems().deleted == 2)
        #expect(try store.identifiers(in: "photos") == [])
        #expect(try store.identifiers(in: "notes") == ["3"])
    }

    @Test func deletingUnknownIdentifiersJournalsNothing() throws {
        let store = try makeStore()
        let outcome = try store.index(named: "photos").deleteSearchableItems(withIdentifiers: ["nope"])
        #expect(outcome.seqs == nil)
        #expect(try store.journalHead().seq == .none)
    }

    @Test func batchCommitsItsOperationsWithTheClientState() throws {
        let store = try makeStore()
        let photos = store.index(named: "photos")
        try photos.indexSearchableItems([item("old")])
        var batch = photos.beginBatch()
        batch.indexSearchableItems([item("1"), item("2")])
        batch.deleteSearchableItems(withIdentifiers: ["old"])
        let outcome = try photos.endBatch(batch, clientState: Array("page-1".utf8))
        #expect(outcome.indexed == 2 && outcome.deleted == 1 && outcome.clientStates == 1)
        #expect(try photos.fetchLastClientState() == Array("page-1".utf8))
        #expect(try store.identifiers(in: "photos") == ["1", "2"])
        // Every event of the batch carries the same call number.
        let records = try store.records(outcome.seqs!)
        #expect(Set(records.map(\.call)).count == 1)
    }

    @Test func batchWithMismatchedExpectedClientStateCommitsNothing() throws {
        let store = try makeStore()
        let photos = store.index(named: "photos")
        var first = photos.beginBatch()
        first.indexSearchableItems([item("1")])
        try photos.endBatch(first, expectedClientState: nil, newClientState: [1])
        let head = try store.journalHead()

        var stale = photos.beginBatch()
        stale.indexSearchableItems([item("2")])
        #expect {
            try photos.endBatch(stale, expectedClientState: nil, newClientState: [2])
        } throws: { error in
            (error as? DeviceStoreError)?.code == .clientStateMismatch
        }
        #expect(try store.journalHead().seq == head.seq)
        #expect(try photos.fetchLastClientState() == [1])
        #expect(try store.identifiers(in: "photos") == ["1"])

        var current = photos.beginBatch()
        current.indexSearchableItems([item("2")])
        try photos.endBatch(current, expectedClientState: [1], newClientState: [2])
        #expect(try photos.fetchLastClientState() == [2])
    }

    /// Calls performed together commit together: a mismatch in the second
    /// rolls back what the first had already journaled and projected, and the
    /// store goes on taking calls, chained to the head the rollback left (not
    /// to the row it undid, which the write path had seen).
    @Test func aGroupOfCallsWhoseSecondFailsCommitsNeitherAndTheStoreGoesOn() throws {
        let store = try makeStore()
        try store.index(named: "photos").indexSearchableItems([item("1", title: "One")])
        let head = try store.journalHead()
        let digest = try store.projectionDigest()
        #expect {
            try store.performAll([
                .index(index: "photos", items: [item("2", title: "Two")]),
                .batch(IndexBatch(index: "photos", operations: [.delete(index: "photos", identifiers: ["1"])],
                                  clientState: [2], condition: .expecting([7]))),
            ])
        } throws: { error in
            (error as? DeviceStoreError)?.code == .clientStateMismatch
        }
        #expect(try store.journalHead().seq == head.seq && store.journalHead().hash == head.hash)
        #expect(try store.projectionDigest() == digest)
        #expect(try store.identifiers(in: "photos") == ["1"])
        #expect(try store.search("two").isEmpty)

        try store.index(named: "photos").indexSearchableItems([item("3", title: "Three")])
        #expect(try store.journalHead().seq == head.seq.next)
        let verification = try store.verifyJournal()
        #expect(verification.isValid && verification.head == head.seq.next)
        #expect(try store.identifiers(in: "photos") == ["1", "3"])
        #expect(try store.search("three").map(\.members) == [[.item(index: "photos", identifier: "3")]])
        #expect(try store.projectionDigest() == (try store.rebuiltProjectionDigest()))
    }

    @Test func fetchLastClientStateIsNilBeforeAnyBatchAndPerIndex() throws {
        let store = try makeStore()
        #expect(try store.index(named: "photos").fetchLastClientState() == nil)
        try store.index(named: "notes").endBatch(store.index(named: "notes").beginBatch(), clientState: [9])
        #expect(try store.index(named: "photos").fetchLastClientState() == nil)
        #expect(try store.index(named: "notes").fetchLastClientState() == [9])
    }

    @Test func invalidCallCommitsNothingAndNamesTheField() throws {
        let store = try makeStore()
        let photos = store.index(named: "photos")
        #expect {
            try photos.indexSearchableItems([item("1"), item("2"), item("1")])
        } throws: { error in
            (error as? DeviceStoreError)?.operationError?.path == "items[2].id"
        }
        let huge = String(repeating: "x", count: Limits.textBytes + 1)
        #expect {
            try photos.indexSearchableItems([item("1", title: huge)])
        } throws: { error in
            (error as? DeviceStoreError)?.operationError?.path == "items[0].title"
        }
        #expect(try store.journalHead().seq == .none)
    }

    @Test func readOnlyStoreRefusesWrites() throws {
        let directory = try temporaryDirectory()
        let path = directory.appendingPathComponent("d.sqlite").path
        _ = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
        let reader = try DeviceStore(at: .file(path), options: StoreOptions(readOnly: true))
        #expect {
            try reader.index(named: "photos").indexSearchableItems([item("1")])
        } throws: { error in
            (error as? DeviceStoreError)?.code == .readOnly
        }
    }
}
