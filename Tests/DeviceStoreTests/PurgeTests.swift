import DeviceStore
import Foundation
import GRDB
import IndexModel
import Testing

/// `purge()`: a deleted item's content leaves the journal and the store
/// file once a backup covers its deletion, and the journal still verifies.
@Suite struct PurgeTests {
    static let secret = "a birthday present for Sam"

    /// A file store that indexed two notes, revised the first, searched (so
    /// the search index held the secret), then deleted the first note.
    private func storeWithADeletedNote() throws -> (store: DeviceStore, path: String, directory: URL) {
        let directory = try temporaryDirectory()
        let path = directory.appendingPathComponent("d.sqlite").path
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
        let notes = store.index(named: "notes")
        try notes.indexSearchableItems([item("n1", title: "shopping list", description: "eggs and \(Self.secret)"),
                                        item("n2", title: "meeting notes")])
        var revision = AttributeChanges()
        revision[.title] = .some(.string("shopping list, revised"))
        try notes.updateSearchableItems([ItemUpdate(uniqueIdentifier: "n1", attributes: revision)])
        #expect(try store.resultTitles("birthday") == ["shopping list, revised"])
        try notes.deleteSearchableItems(withIdentifiers: ["n1"])
        return (store, path, directory)
    }

    @Test func aDeletedItemsContentWaitsForABackupThatCoversItsDeletion() throws {
        let (store, _, _) = try storeWithADeletedNote()
        let report = try store.purge()
        #expect(report.purgedSeqs.isEmpty && report.backedUpThrough == .none)
        #expect(report.waitingForBackup == [ItemKey(index: "notes", identifier: "n1")])
        #expect(try store.records(Seq(1)...Seq(1)).first?.isPurged == false)
    }

    @Test func onceABackupCoversTheDeletionTheContentIsPurgedAndTheJournalStillVerifies() throws {
        let (store, _, directory) = try storeWithADeletedNote()
        let before = try store.journalHead()
        try store.snapshot(to: directory.appendingPathComponent("backup.slsnap").path)
        let report = try store.purge()
        #expect(report.items == [ItemKey(index: "notes", identifier: "n1")])
        #expect(report.purgedSeqs == [Seq(1), Seq(3)], "the indexing and the update; n2's indexing stays")
        #expect(report.backedUpThrough == Seq(4) && report.waitingForBackup.isEmpty && report.bytes > Self.secret.utf8.count)
        let records = try store.records(Seq(1)...Seq(4))
        #expect(records.map(\.isPurged) == [true, false, true, false])
        #expect(try records[0].event() == .itemIndexed(index: "notes", item: SearchableItem(uniqueIdentifier: "n1")))
        let verification = try store.verifyJournal()
        #expect(verification.isValid && verification.head == before.seq && verification.headHash == before.hash,
                "\(String(describing: verification.firstProblem))")
        #expect(try store.projectionDigest() == store.rebuiltProjectionDigest())
        #expect(try store.resultTitles("birthday").isEmpty)
        #expect(try store.resultTitles("meeting") == ["meeting notes"])
        #expect(try store.purge().purgedSeqs.isEmpty, "a second purge finds nothing left")
    }

    @Test func theStoreFileAndItsWALKeepNoByteOfAPurgedPayload() throws {
        let (store, path, directory) = try storeWithADeletedNote()
        try store.snapshot(to: directory.appendingPathComponent("backup.slsnap").path)
        #expect(try fileBytes(path).range(of: Data(Self.secret.utf8)) != nil, "before the purge the store holds the text")
        let report = try store.purge()
        #expect(report.walEmptied)
        #expect(try fileBytes(path).range(of: Data(Self.secret.utf8)) == nil)
        #expect(try fileBytes(path).range(of: Data("eggs".utf8)) == nil)
    }

    @Test func aPurgeOfAStoreNeverSearchedBuildsNoSearchIndex() throws {
        let directory = try temporaryDirectory()
        let path = directory.appendingPathComponent("d.sqlite").path
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
        try store.index(named: "notes").indexSearchableItems([item("n1", title: Self.secret)])
        try store.index(named: "notes").deleteSearchableItems(withIdentifiers: ["n1"])
        try store.snapshot(to: directory.appendingPathComponent("b.slsnap").path)
        #expect(try store.purge().purgedSeqs == [Seq(1)])
        // Every new store has the index's tables; a purge leaves them empty.
        let indexed = try DatabaseQueue(path: path).read { db in
            try Int.fetchOne(db, sql: "SELECT (SELECT count(*) FROM search_meta) + (SELECT count(*) FROM search_docs)")
        }
        #expect(indexed == 0)
        #expect(try fileBytes(path).range(of: Data(Self.secret.utf8)) == nil)
    }

    @Test func aDryRunSaysWhatWouldGoAndChangesNothing() throws {
        let (store, path, directory) = try storeWithADeletedNote()
        try store.snapshot(to: directory.appendingPathComponent("backup.slsnap").path)
        let dry = try store.purge(dryRun: true)
        #expect(dry.purgedSeqs == [Seq(1), Seq(3)])
        #expect(try store.records(Seq(1)...Seq(4)).allSatisfy { !$0.isPurged })
        #expect(try fileBytes(path).range(of: Data(Self.secret.utf8)) != nil)
        #expect(try store.purge() == dry)
    }

    @Test func anItemIndexedAgainAfterItsDeletionKeepsItsNewContent() throws {
        let (store, _, directory) = try storeWithADeletedNote()
        let notes = store.index(named: "notes")
        try notes.indexSearchableItems([item("n1", title: "a new list")])
        try store.snapshot(to: directory.appendingPathComponent("backup.slsnap").path)
        #expect(try store.purge().purgedSeqs == [Seq(1), Seq(3)])
        #expect(try store.resultTitles("new") == ["a new list"])
        #expect(try store.projectionDigest() == store.rebuiltProjectionDigest())
        // Deleted again after the backup: the new content waits for the next one.
        try notes.deleteSearchableItems(withIdentifiers: ["n1"])
        let waiting = try store.purge()
        #expect(waiting.purgedSeqs.isEmpty && waiting.waitingForBackup == [ItemKey(index: "notes", identifier: "n1")])
    }

    @Test func aSnapshotTakenAfterAPurgeRestoresVerifiedWithItsRowsStillPurged() throws {
        let (store, _, directory) = try storeWithADeletedNote()
        try store.snapshot(to: directory.appendingPathComponent("first.slsnap").path)
        _ = try store.purge()
        let snapshot = directory.appendingPathComponent("after-purge.slsnap").path
        try store.snapshot(to: snapshot)
        let path = directory.appendingPathComponent("restored.sqlite").path
        _ = try DeviceStore.restore(snapshot: snapshot, to: path, options: StoreOptions(clock: ManualClock(testStart)))
        let restored = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
        #expect(try restored.records(Seq(1)...Seq(4)).map(\.isPurged) == [true, false, true, false])
        #expect(try restored.verifyJournal().isValid)
        #expect(try restored.resultTitles("birthday").isEmpty)
        #expect(try restored.purge(dryRun: true).backedUpThrough == Seq(4), "the snapshot it came from is a backup")
    }

    /// Backups before and after the deletion, then a purge: the store a restore replaces.
    private func purgedStoreWithBackups() throws -> (path: String, beforeDeletion: String, afterDeletion: String, directory: URL) {
        let directory = try temporaryDirectory()
        let path = directory.appendingPathComponent("d.sqlite").path
        let beforeDeletion = directory.appendingPathComponent("before.slsnap").path
        let afterDeletion = directory.appendingPathComponent("after.slsnap").path
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
        let notes = store.index(named: "notes")
        try notes.indexSearchableItems([item("n1", title: "shopping list", description: Self.secret), item("n2", title: "meeting notes")])
        try store.snapshot(to: beforeDeletion)
        try notes.deleteSearchableItems(withIdentifiers: ["n1"])
        try store.snapshot(to: afterDeletion)
        #expect(try store.purge().items == [ItemKey(index: "notes", identifier: "n1")])
        return (path, beforeDeletion, afterDeletion, directory)
    }

    @Test func restoringABackupTakenBeforeTheDeletionDeletesThePurgedItemAgain() throws {
        let (path, beforeDeletion, _, directory) = try purgedStoreWithBackups()
        let report = try DeviceStore.restore(snapshot: beforeDeletion, to: path, force: true,
                                             options: StoreOptions(clock: ManualClock(testStart)))
        let n1 = ItemKey(index: "notes", identifier: "n1")
        #expect(report.deletedAgain == [n1])
        #expect(report.purge?.purgedSeqs == [], "the new deletion waits for a backup that covers it")
        let restored = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
        #expect(try restored.resultTitles("shopping").isEmpty)
        #expect(try restored.resultTitles("meeting") == ["meeting notes"])
        let last = try restored.records(report.head...report.head).first
        #expect(try last?.event() == .itemDeleted(index: "notes", identifier: "n1", cause: .identifier))
        #expect(try restored.verifyJournal().isValid)
        #expect(try restored.projectionDigest() == restored.rebuiltProjectionDigest())
        try restored.snapshot(to: directory.appendingPathComponent("next.slsnap").path)
        #expect(try restored.purge().items == [n1])
        #expect(try fileBytes(path).range(of: Data(Self.secret.utf8)) == nil)
    }

    @Test func restoringABackupThatHoldsTheDeletionPurgesTheItemAgainAtOnce() throws {
        let (path, _, afterDeletion, _) = try purgedStoreWithBackups()
        let report = try DeviceStore.restore(snapshot: afterDeletion, to: path, force: true,
                                             options: StoreOptions(clock: ManualClock(testStart)))
        #expect(report.deletedAgain.isEmpty)
        #expect(report.purge?.purgedSeqs == [Seq(1)])
        #expect(try fileBytes(path).range(of: Data(Self.secret.utf8)) == nil)
        #expect(try DeviceStore(at: .file(path), options: StoreOptions(readOnly: true)).verifyJournal().isValid)
    }

    @Test func aRestoreToANewPathForgetsWhatTheCallerSaysTheWipedStorePurged() throws {
        let (_, beforeDeletion, _, directory) = try purgedStoreWithBackups()
        let path = directory.appendingPathComponent("new-device.sqlite").path
        let n1 = ItemKey(index: "notes", identifier: "n1")
        let wiped = try DeviceStore(at: .file(directory.appendingPathComponent("d.sqlite").path), options: StoreOptions(readOnly: true))
        let purged = try wiped.purgedPayloadHashes()
        #expect(purged.count == 1)
        let report = try DeviceStore.restore(snapshot: beforeDeletion, to: path, purged: purged,
                                             options: StoreOptions(clock: ManualClock(testStart)))
        #expect(report.deletedAgain == [n1])
        #expect(try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart))).resultTitles("shopping").isEmpty)
        // Without the caller's word, a restore to a new path knows nothing of the purge.
        let unaware = try DeviceStore.restore(snapshot: beforeDeletion, to: directory.appendingPathComponent("unaware.sqlite").path,
                                              options: StoreOptions(clock: ManualClock(testStart)))
        #expect(unaware.deletedAgain.isEmpty && unaware.purge == nil)
    }

    /// An item deleted, purged, then indexed anew: a backup holding the new
    /// version restores it, and only the old version's rows are purged again.
    @Test func aRestoreKeepsAnItemIndexedAgainAfterItsPurge() throws {
        let (path, _, _, directory) = try purgedStoreWithBackups()
        let snapshot = directory.appendingPathComponent("new-version.slsnap").path
        do {
            let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
            try store.index(named: "notes").indexSearchableItems([item("n1", title: "a new list")])
            try store.snapshot(to: snapshot)
        }
        let report = try DeviceStore.restore(snapshot: snapshot, to: path, force: true, options: StoreOptions(clock: ManualClock(testStart)))
        #expect(report.deletedAgain.isEmpty)
        let restored = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
        #expect(try restored.resultTitles("new") == ["a new list"])
        #expect(try restored.records(Seq(1)...Seq(1)).first?.isPurged == true)
    }

    /// A snapshot taken after the purge, restored to a seq before the
    /// deletion: the cut would leave the item live as its bare residue, with
    /// no deletion after its purged rows.
    @Test func aRestoreCutBackBeforeAPurgedDeletionDeletesTheItemAgain() throws {
        let (path, _, _, directory) = try purgedStoreWithBackups()
        let snapshot = directory.appendingPathComponent("after-purge.slsnap").path
        do {
            let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
            try store.snapshot(to: snapshot)
        }
        let restoredPath = directory.appendingPathComponent("cut.sqlite").path
        let report = try DeviceStore.restore(snapshot: snapshot, to: restoredPath, toSeq: Seq(2),
                                             options: StoreOptions(clock: ManualClock(testStart)))
        #expect(report.deletedAgain == [ItemKey(index: "notes", identifier: "n1")])
        let restored = try DeviceStore(at: .file(restoredPath), options: StoreOptions(clock: ManualClock(testStart)))
        #expect(try restored.items(in: "notes").map(\.uniqueIdentifier) == ["n2"])
        let verification = try restored.verifyJournal()
        #expect(verification.isValid, "\(String(describing: verification.firstProblem))")
        #expect(try restored.projectionDigest() == restored.rebuiltProjectionDigest())
    }

    @Test func theAutomaticPurgeWaitsForItsDelayAfterTheDeletion() throws {
        let directory = try temporaryDirectory()
        let path = directory.appendingPathComponent("d.sqlite").path
        let clock = ManualClock(testStart)
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: clock))
        #expect(try store.purgeIfDue() == nil, "no delay set: no automatic purge")
        let day: Int64 = 86_400_000
        try store.setAutomaticPurge(afterMilliseconds: day)
        #expect(try store.automaticPurgeDelay() == day)
        let notes = store.index(named: "notes")
        try notes.indexSearchableItems([item("n1", title: Self.secret)])
        try notes.deleteSearchableItems(withIdentifiers: ["n1"])
        try store.snapshot(to: directory.appendingPathComponent("b.slsnap").path)
        let early = try #require(try store.purgeIfDue())
        #expect(early.purgedSeqs.isEmpty && early.waitingForDelay == [ItemKey(index: "notes", identifier: "n1")])
        #expect(try store.purge(dryRun: true).purgedSeqs == [Seq(1)], "an explicit purge does not wait")
        clock.advance(byMilliseconds: day - 1)
        #expect(try store.purgeIfDue()?.purgedSeqs == [])
        clock.advance(byMilliseconds: 1)
        #expect(try store.purgeIfDue()?.purgedSeqs == [Seq(1)])
        try store.setAutomaticPurge(afterMilliseconds: nil)
        #expect(try store.automaticPurgeDelay() == nil && store.purgeIfDue() == nil)
        #expect {
            try store.setAutomaticPurge(afterMilliseconds: -1)
        } throws: { error in
            (error as? DeviceStoreError)?.code == .invalidOption
        }
    }

    /// Nothing becomes due without a new backup or the clock passing a
    /// waiting deletion's due time, so the automatic purge does not read the
    /// journal again until one of them moves: an undecodable item event
    /// written meanwhile goes unnoticed until the next backup.
    @Test func theAutomaticPurgeReadsTheJournalAgainOnlyWhenSomethingCanHaveBecomeDue() throws {
        let directory = try temporaryDirectory()
        let path = directory.appendingPathComponent("d.sqlite").path
        let clock = ManualClock(testStart)
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: clock))
        let hour: Int64 = 3_600_000
        try store.setAutomaticPurge(afterMilliseconds: hour)
        let notes = store.index(named: "notes")
        try notes.indexSearchableItems([item("n1", title: "first"), item("n2", title: "second")])
        try notes.deleteSearchableItems(withIdentifiers: ["n1"])
        try store.snapshot(to: directory.appendingPathComponent("b.slsnap").path)
        #expect(try store.purgeIfDue()?.waitingForDelay == [ItemKey(index: "notes", identifier: "n1")])
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "UPDATE event_journal SET payload = x'01' WHERE seq = 2")
        }
        let skipped = try #require(try store.purgeIfDue())
        #expect(skipped.purgedSeqs.isEmpty && skipped.waitingForDelay.isEmpty, "not read again: nothing can be due")
        clock.advance(byMilliseconds: hour)
        let due = storeError { _ = try store.purgeIfDue() }
        #expect(due?.code == .corruptJournal && due?.seq == Seq(2), "n1's deletion fell due, so the journal is read: \(String(describing: due))")
    }

    @Test func anEditedPurgeDelayIsACorruptStoreError() throws {
        let directory = try temporaryDirectory()
        let path = directory.appendingPathComponent("d.sqlite").path
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "INSERT INTO store_meta (key, value) VALUES ('purge_after_ms', -5), ('backed_up_through', -1)")
        }
        let delay = storeError { _ = try store.purgeIfDue() }
        #expect(delay?.code == .corruptStore && delay?.message.contains("store_meta.purge_after_ms is -5") == true, "\(String(describing: delay))")
        let backup = storeError { _ = try store.purge() }
        #expect(backup?.code == .corruptStore && backup?.message.contains("store_meta.backed_up_through is -1") == true,
                "\(String(describing: backup))")
    }

    @Test func aStoreOfFormat4IsPurgedOnceMigratedAndBackedUp() throws {
        let directory = try temporaryDirectory()
        let path = directory.appendingPathComponent("v4.sqlite").path
        try FileManager.default.copyItem(atPath: ChainMigrationTests.fixtures.appendingPathComponent("device-v4.sqlite").path,
                                         toPath: path)
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
        try store.snapshot(to: directory.appendingPathComponent("backup.slsnap").path)
        #expect(try store.purge().purgedSeqs == [Seq(1), Seq(3)])
        #expect(try store.verifyJournal().isValid)
        #expect(try fileBytes(path).range(of: Data(Self.secret.utf8)) == nil)
    }
}

/// A purged row someone edited is a `corruptJournal` error naming its seq.
@Suite struct EditedPurgeTests {
    private func purgedStore() throws -> (DeviceStore, String) {
        let directory = try temporaryDirectory()
        let path = directory.appendingPathComponent("d.sqlite").path
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
        let notes = store.index(named: "notes")
        try notes.indexSearchableItems([item("n1", title: "private"), item("n2", title: "kept")])
        try notes.deleteSearchableItems(withIdentifiers: ["n1"])
        try store.snapshot(to: directory.appendingPathComponent("backup.slsnap").path)
        #expect(try store.purge().purgedSeqs == [Seq(1)])
        return (store, path)
    }

    private func problem(_ store: DeviceStore) throws -> DeviceStoreError? {
        try store.verifyJournal().firstProblem
    }

    @Test func aPurgedRowWhosePayloadHoldsContentAgainIsRefused() throws {
        let (store, path) = try purgedStore()
        let full = EventCodec.encode(.itemIndexed(index: "notes", item: item("n1", title: "forged")))
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "UPDATE event_journal SET payload = ? WHERE seq = 1", arguments: [Data(full)])
        }
        let found = try problem(store)
        #expect(found?.seq == Seq(1) && found?.message.contains("more than the residue") == true, "\(String(describing: found))")
    }

    @Test func aRowMarkedPurgedWithoutALaterDeletionIsRefused() throws {
        let (store, path) = try purgedStore()
        // n2's indexing (seq 2) marked purged with its own payload's hash: the chain verifies, but n2 was never deleted.
        try DatabaseQueue(path: path).write { db in
            let payload = try Data.fetchOne(db, sql: "SELECT payload FROM event_journal WHERE seq = 2") ?? Data()
            let residue = EventCodec.encode(.itemIndexed(index: "notes", item: SearchableItem(uniqueIdentifier: "n2")))
            try db.execute(sql: "UPDATE event_journal SET payload = ?, purged_payload_hash = ? WHERE seq = 2",
                           arguments: [Data(residue), Data(ChainHash.ofPayload([UInt8](payload)).bytes)])
        }
        let found = try problem(store)
        #expect(found?.seq == Seq(2) && found?.message.contains("no later deletion of notes/n2") == true, "\(String(describing: found))")
    }

    @Test func aPurgedRowOfAKindAPurgeNeverTouchesIsRefused() throws {
        let (store, path) = try purgedStore()
        // The deletion (seq 3) marked purged with its own payload's hash.
        try DatabaseQueue(path: path).write { db in
            let payload = try Data.fetchOne(db, sql: "SELECT payload FROM event_journal WHERE seq = 3") ?? Data()
            try db.execute(sql: "UPDATE event_journal SET purged_payload_hash = ? WHERE seq = 3",
                           arguments: [Data(ChainHash.ofPayload([UInt8](payload)).bytes)])
        }
        let found = try problem(store)
        #expect(found?.seq == Seq(3) && found?.message.contains("only an item's indexing or update") == true, "\(String(describing: found))")
    }

    @Test func aPurgeHashOfTheWrongLengthIsACorruptJournalError() throws {
        let (store, path) = try purgedStore()
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "UPDATE event_journal SET purged_payload_hash = x'0102' WHERE seq = 1")
        }
        let found = try problem(store)
        #expect(found?.code == .corruptJournal && found?.seq == Seq(1) && found?.message.contains("not 32 bytes") == true)
    }

    /// Found by the device-store-file fuzz target: a column of the wrong
    /// type where a purge reads the journal was a trap in GRDB's row
    /// subscript.
    @Test func aJournalColumnOfTheWrongTypeIsAnErrorWhereAPurgeReadsIt() throws {
        let (store, path) = try purgedStore()
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "UPDATE event_journal SET time = 'noon' WHERE seq = 3")
        }
        let time = storeError { _ = try store.purge(dryRun: true) }
        #expect(time?.code == .corruptStore && time?.message.contains("the time of journal seq 3") == true, "\(String(describing: time))")
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "UPDATE event_journal SET time = 0 WHERE seq = 3; UPDATE event_journal SET purged_payload_hash = 7 WHERE seq = 1")
        }
        let hash = storeError { _ = try store.purgedPayloadHashes() }
        #expect(hash?.code == .corruptStore && hash?.message.contains("purged_payload_hash of seq 1") == true, "\(String(describing: hash))")
    }

    /// Every column a purge reads of the journal, edited to a value of
    /// another type or to NULL where the schema lets it, is an error naming
    /// the row, in a dry run and in a purge: never a trap.
    @Test func everyJournalColumnAPurgeReadsIsCheckedWhereItIsRead() throws {
        let edits = ["time = 'noon'", "time = NULL", "time = 2.5", "time = x'00'", "payload = NULL", "payload = 7",
                     "seq = 'three'"]
        var applied = 0
        for edit in edits {
            let (store, path) = try purgedStore()
            let edited = (try? DatabaseQueue(path: path).write { db in try db.execute(sql: "UPDATE event_journal SET \(edit) WHERE seq = 3") }) != nil
            guard edited else { continue }
            applied += 1
            for dryRun in [true, false] {
                let error = storeError { _ = try store.purge(dryRun: dryRun) }
                #expect(error?.code == .corruptStore || error?.code == .corruptJournal, "\(edit), dry run \(dryRun): \(String(describing: error))")
                #expect(error?.message.contains("seq 3") == true || error?.message.contains("event_journal.seq") == true,
                        "\(edit): \(String(describing: error))")
            }
        }
        #expect(applied == 4, "the schema refuses a NULL time or payload and a text seq; the other edits stand")
    }

    @Test func aPurgeRefusesARowThatNoLongerMatchesItsHash() throws {
        let directory = try temporaryDirectory()
        let path = directory.appendingPathComponent("d.sqlite").path
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
        try store.index(named: "notes").indexSearchableItems([item("n1", title: "private")])
        try store.index(named: "notes").deleteSearchableItems(withIdentifiers: ["n1"])
        try store.snapshot(to: directory.appendingPathComponent("backup.slsnap").path)
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "UPDATE event_journal SET payload = ? WHERE seq = 1",
                           arguments: [Data(EventCodec.encode(.itemIndexed(index: "notes", item: item("n1", title: "other"))))])
        }
        let error = storeError { _ = try store.purge() }
        #expect(error?.code == .corruptJournal && error?.seq == Seq(1) && error?.message.contains("nothing was purged") == true, "\(String(describing: error))")
        #expect(try store.records(Seq(1)...Seq(1)).first?.isPurged == false)
    }
}
