import DeviceStore
import Foundation
import GRDB
import IndexModel
import Testing

/// `purge()` of activities: a deleted activity's recordings, its removal and
/// the engagement events naming its URL keep only pseudonyms once a backup
/// covers the removal, and the journal still verifies and rebuilds the same.
@Suite struct ActivityPurgeTests {
    static let secretURL = "https://clinic.example/appointments/oncology-follow-up"
    static let secretTitle = "Oncology follow-up, Tuesday"

    /// A private activity the user viewed twice and engaged with.
    static func privateVisit(_ title: String = secretTitle) -> UserActivity {
        UserActivity(activityType: "com.example.health/appointment", title: title, keywords: ["oncology"],
                     userInfo: ["doctor": "Dr. Lindqvist"], webpageURL: secretURL, eligibleForSearch: true)
    }

    /// A file store that recorded the private visit, saw it shown and
    /// engaged with it, then deleted it (`id:` keys are the app's
    /// persistent identifiers; this activity has none, so its key holds its URL).
    private func storeWithADeletedVisit() throws -> (store: DeviceStore, path: String, directory: URL) {
        let directory = try temporaryDirectory()
        let path = directory.appendingPathComponent("d.sqlite").path
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
        try store.record(Self.privateVisit())
        try store.recordShown(ref: Self.secretURL)
        try store.recordEngaged(ref: Self.secretURL)
        #expect(try store.resultTitles("oncology") == [Self.secretTitle])
        try store.perform(.deleteAllActivities)
        return (store, path, directory)
    }

    @Test func aDeletedActivityWaitsForABackupThatCoversItsRemoval() throws {
        let (store, _, _) = try storeWithADeletedVisit()
        let report = try store.purge()
        #expect(report.purgedSeqs.isEmpty && report.activities.isEmpty)
        #expect(report.activitiesWaiting == [ActivityWait(key: Self.privateVisit().key, reason: .backup)])
    }

    @Test func onceBackedUpTheActivityItsRemovalAndItsEngagementKeepOnlyPseudonyms() throws {
        let (store, path, directory) = try storeWithADeletedVisit()
        let head = try store.journalHead()
        try store.snapshot(to: directory.appendingPathComponent("backup.slsnap").path)
        #expect(try fileBytes(path).range(of: Data(Self.secretURL.utf8)) != nil, "before the purge the store names the URL")
        let report = try store.purge()
        #expect(report.activities == [Self.privateVisit().key])
        #expect(report.references == 2, "the impression and the engagement")
        #expect(report.purgedSeqs == [Seq(1), Seq(2), Seq(3), Seq(4)])
        let events = try store.records(Seq(1)...Seq(4)).map { try $0.event() }
        guard case .activityPurged(let residue) = events[0] else {
            Issue.record("the recording's residue is \(events[0])")
            return
        }
        #expect(PurgedActivity.isPseudonym(residue.key) && residue.publicHash == nil)
        #expect(residue.webpageURL.map(PurgedActivity.isPseudonym) == true)
        #expect(events[1] == .resultShown(ref: residue.webpageURL!) && events[2] == .resultEngaged(ref: residue.webpageURL!))
        #expect(events[3] == .activityDeleted(key: residue.key, cause: .all))
        for secret in [Self.secretURL, Self.secretTitle, "Lindqvist", "oncology"] {
            #expect(try fileBytes(path).range(of: Data(secret.utf8)) == nil, "the store file still holds \(secret)")
        }
        let verification = try store.verifyJournal()
        #expect(verification.isValid && verification.head == head.seq && verification.headHash == head.hash,
                "\(String(describing: verification.firstProblem))")
        #expect(try store.projectionDigest() == store.rebuiltProjectionDigest())
        #expect(try store.resultTitles("oncology").isEmpty)
        let counts = try store.engagement(ref: Self.secretURL)
        #expect(counts.shown == 0 && counts.engaged == 0, "its counts went with the reference")
        #expect(try store.purge().purgedSeqs.isEmpty, "a second purge finds nothing left")
    }

    @Test func engagementWithAURLAnActivityStillNamesStaysInTheClear() throws {
        let (store, _, directory) = try storeWithADeletedVisit()
        // Another activity of the same page, not deleted.
        try store.record(UserActivity(activityType: "com.example.health/reminder", title: "Reminder",
                                      webpageURL: Self.secretURL, eligibleForSearch: true))
        try store.snapshot(to: directory.appendingPathComponent("backup.slsnap").path)
        let report = try store.purge()
        #expect(report.activities == [Self.privateVisit().key] && report.references == 0)
        #expect(try store.records(Seq(2)...Seq(3)).map { try $0.event() }
                == [.resultShown(ref: Self.secretURL), .resultEngaged(ref: Self.secretURL)])
        #expect(try store.engagement(ref: Self.secretURL).engaged == 1)
        #expect(try store.projectionDigest() == store.rebuiltProjectionDigest())
    }

    /// What the app says of the URL after the deletion is new, and stays:
    /// the purge takes only engagement up to the removal.
    @Test func engagementWithTheURLAfterTheRemovalStaysInTheClear() throws {
        let (store, _, directory) = try storeWithADeletedVisit()
        try store.recordEngaged(ref: Self.secretURL)
        try store.snapshot(to: directory.appendingPathComponent("backup.slsnap").path)
        let report = try store.purge()
        #expect(report.references == 2 && report.purgedSeqs == [Seq(1), Seq(2), Seq(3), Seq(4)])
        #expect(try store.records(Seq(5)...Seq(5)).first?.event() == .resultEngaged(ref: Self.secretURL))
        let counts = try store.engagement(ref: Self.secretURL)
        #expect(counts.shown == 0 && counts.engaged == 1, "only the later engagement still counts under the URL")
        #expect(try store.projectionDigest() == store.rebuiltProjectionDigest())
    }

    @Test func theAutomaticPurgeTakesADeletedActivityOnceItsDelayHasPassed() throws {
        let directory = try temporaryDirectory()
        let clock = ManualClock(testStart)
        let store = try DeviceStore(at: .file(directory.appendingPathComponent("d.sqlite").path), options: StoreOptions(clock: clock))
        try store.setAutomaticPurge(afterMilliseconds: 60_000)
        try store.record(Self.privateVisit())
        try store.perform(.deleteAllActivities)
        try store.snapshot(to: directory.appendingPathComponent("backup.slsnap").path)
        let early = try #require(try store.purgeIfDue())
        #expect(early.activities.isEmpty && early.activitiesWaiting == [ActivityWait(key: Self.privateVisit().key, reason: .delay)])
        clock.advance(byMilliseconds: 60_000)
        #expect(try store.purgeIfDue()?.activities == [Self.privateVisit().key])
    }

    @Test func aPublicActivityWaitsUntilTheCloudsBackupHoldsWhatWasSentBeforeItsRemoval() throws {
        let directory = try temporaryDirectory()
        let store = try DeviceStore(at: .file(directory.appendingPathComponent("d.sqlite").path),
                                    options: StoreOptions(clock: ManualClock(testStart)))
        let recipe = UserActivity(activityType: "com.example/recipe", title: "Soup", webpageURL: "https://example.com/soup",
                                  eligibleForSearch: true, eligibleForPublicIndexing: true, persistentIdentifier: "soup")
        try store.record(recipe)
        try store.recordEngaged(ref: "https://example.com/soup")
        try store.perform(.deleteActivities(identifiers: ["soup"]))
        // The same key again, private this time, and deleted again.
        var privately = recipe
        privately.eligibleForPublicIndexing = false
        privately.webpageURL = "https://example.com/soup/private"
        try store.record(privately)
        try store.perform(.deleteActivities(identifiers: ["soup"]))
        try store.snapshot(to: directory.appendingPathComponent("backup.slsnap").path)
        let report = try store.purge()
        #expect(report.activitiesWaiting == [ActivityWait(key: "id:soup", reason: .cloud)], "the vote and withdrawal are unsent")
        #expect(report.activities == ["id:soup"] && report.purgedSeqs == [Seq(4), Seq(5)], "the private recording and its deletion go")
        #expect(try store.purge().activitiesWaiting == report.activitiesWaiting, "the first deletion still waits, and says so")
        #expect(try store.projectionDigest() == store.rebuiltProjectionDigest())
    }

    /// A residue is what a purge leaves: a purged row naming its subject in
    /// the clear, or a residue in a row not marked purged, is named.
    @Test func verificationNamesAPurgedRowThatStillNamesItsSubject() throws {
        let (store, path, directory) = try storeWithADeletedVisit()
        try store.snapshot(to: directory.appendingPathComponent("backup.slsnap").path)
        _ = try store.purge()
        let queue = try DatabaseQueue(path: path)
        let clear = EventCodec.encode(.activityDeleted(key: Self.privateVisit().key, cause: .all))
        try queue.write { db in try db.execute(sql: "UPDATE event_journal SET payload = ? WHERE seq = 4", arguments: [Data(clear)]) }
        let reopened = try DeviceStore(at: .file(path), options: StoreOptions(readOnly: true))
        let problem = try reopened.verifyJournal().firstProblem
        #expect(problem?.seq == Seq(4) && problem?.message.contains("in the clear") == true, "\(String(describing: problem))")
    }

    @Test func restoringABackupTakenBeforeTheRemovalDeletesThePurgedActivityAgain() throws {
        let directory = try temporaryDirectory()
        let path = directory.appendingPathComponent("d.sqlite").path
        let before = directory.appendingPathComponent("before.slsnap").path
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
        try store.record(Self.privateVisit())
        try store.snapshot(to: before)
        try store.perform(.deleteAllActivities)
        try store.snapshot(to: directory.appendingPathComponent("after.slsnap").path)
        #expect(try store.purge().activities == [Self.privateVisit().key])
        let report = try DeviceStore.restore(snapshot: before, to: path, force: true, options: StoreOptions(clock: ManualClock(testStart)))
        #expect(report.activitiesDeletedAgain == [Self.privateVisit().key])
        let restored = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
        #expect(try restored.activities().isEmpty && restored.resultTitles("oncology").isEmpty)
        #expect(try restored.verifyJournal().isValid)
        #expect(try restored.projectionDigest() == restored.rebuiltProjectionDigest())
        try restored.snapshot(to: directory.appendingPathComponent("next.slsnap").path)
        #expect(try restored.purge().activities == [Self.privateVisit().key])
        #expect(try fileBytes(path).range(of: Data(Self.secretTitle.utf8)) == nil)
    }

    /// A restore cut back to before the removal keeps the recording as its
    /// residue, which no call removes: the restore removes it under its
    /// pseudonym, and the activity stays gone.
    @Test func aRestoreCutBackBeforeTheRemovalRemovesTheResidueUnderItsPseudonym() throws {
        let (store, path, directory) = try storeWithADeletedVisit()
        let snapshot = directory.appendingPathComponent("backup.slsnap").path
        try store.snapshot(to: snapshot)
        _ = try store.purge()
        try store.snapshot(to: snapshot)
        let report = try DeviceStore.restore(snapshot: snapshot, to: path, force: true, toSeq: Seq(3),
                                             options: StoreOptions(clock: ManualClock(testStart)))
        #expect(report.activitiesDeletedAgain.count == 1 && report.activitiesDeletedAgain.allSatisfy(PurgedActivity.isPseudonym))
        let restored = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
        #expect(try restored.activities().isEmpty)
        #expect(try restored.verifyJournal().isValid)
        #expect(try restored.projectionDigest() == restored.rebuiltProjectionDigest())
    }

    @Test func aPurgedActivityEventReadsBackAndANameInTheClearIsRefused() throws {
        let key = PurgedActivity.pseudonym(digest: [UInt8](repeating: 0xab, count: 32))
        let residue = JournalEvent.activityPurged(PurgedActivity(key: key, publicHash: [UInt8](repeating: 1, count: 32),
                                                                 webpageURL: key, relatedUniqueIdentifier: "n1",
                                                                 weakRelatedUniqueIdentifier: nil))
        #expect(try EventCodec.decode(EventCodec.encode(residue)) == residue)
        let clear = JournalEvent.activityPurged(PurgedActivity(key: "id:soup", publicHash: nil, webpageURL: nil,
                                                               relatedUniqueIdentifier: nil, weakRelatedUniqueIdentifier: nil))
        let error = try #require(throws: CodecError.self) { try EventCodec.decode(EventCodec.encode(clear)) }
        #expect(error.message.contains("not a pseudonym"), "\(error)")
    }
}
