import DeviceStore
import Foundation
import GRDB
import IndexModel
import SyncWire
import Testing

private let soupURL = "https://recipes.example.com/potato-soup"

private let soup = UserActivity(activityType: "com.example.recipes/browseRecipe", title: "Potato Soup", keywords: ["soup"],
                                webpageURL: soupURL, eligibleForSearch: true, eligibleForPublicIndexing: true,
                                persistentIdentifier: "soup")

/// ε 4 a report, 8 a day: two reports a day.
private let twoADay = try! PrivatePopularity(epsilonThousandths: 4_000, dailyBudgetThousandths: 8_000, hashes: 16, buckets: 256)

/// A store file at a new path whose app counts popularity privately, with
/// the soup recorded and engaged `engagements` times; closed again.
private func privateStoreFile(engagements: Int) throws -> String {
    let path = try temporaryDirectory().appendingPathComponent("device.sqlite").path
    let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart), random: SeededRandom(seed: 1)))
    try store.record(soup)
    try store.recordPopularityMode(.ldp(twoADay))
    for _ in 0..<engagements { try store.recordEngaged(ref: soupURL) }
    return path
}

private func kinds(_ store: DeviceStore) throws -> [String] {
    try store.outboxEntries().map(\.message.kindName)
}

private func budget(_ path: String) throws -> [Int64: Int64] {
    try DatabaseQueue(path: path).read { db in
        Dictionary(uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT day, spent FROM privacy_budget").map { ($0[0], $0[1]) })
    }
}

/// A device whose app counts popularity privately (`docs/SYNC.md`, "Private
/// popularity"): engagements leave as randomised reports within a daily
/// budget kept in the journal, and nothing else about them leaves.
@Suite struct PrivateReportTests {
    @Test func underPrivatePopularityAnEngagementSendsAReportAndNoSignalLeaves() throws {
        let store = try makeStore()
        try store.record(soup)
        #expect(try store.recordPopularityMode(.ldp(twoADay)) != nil)
        #expect(try store.recordPopularityMode(.ldp(twoADay)) == nil, "a mode the store holds is not journaled again")
        #expect(try store.popularityMode() == .ldp(twoADay))
        try store.recordEngaged(ref: soupURL)
        try store.recordShown(ref: soupURL)
        try store.record(soup)
        #expect(try kinds(store) == ["vote", "report"], "the vote still counts toward K; views and impressions send nothing")
        guard case .report(let report) = try #require(try store.outboxEntries().last).message else {
            Issue.record("no report")
            return
        }
        #expect(twoADay.fits(report))
        try store.recordPopularityMode(.exact)
        try store.recordEngaged(ref: soupURL)
        #expect(try kinds(store) == ["vote", "report", "signal"], "back to exact, signals again")
        #expect(try store.projectionDigest() == store.rebuiltProjectionDigest(), "a rebuild makes the same report")
    }

    @Test func reportsStopAtTheDaysBudgetAndANewDayBringsAnother() throws {
        let clock = ManualClock(testStart)
        let store = try makeStore(clock: clock)
        try store.record(soup)
        try store.recordPopularityMode(.ldp(twoADay))
        for _ in 0..<5 { try store.recordEngaged(ref: soupURL) }
        #expect(try kinds(store) == ["vote", "report", "report"], "ε 8 a day over ε 4 a report")
        clock.advance(byMilliseconds: 86_400_000)
        for _ in 0..<3 { try store.recordEngaged(ref: soupURL) }
        #expect(try kinds(store).filter { $0 == "report" }.count == 4)
        #expect(try store.projectionDigest() == store.rebuiltProjectionDigest())
    }

    @Test func aDeviceNeverSpendsMoreThanItsOwnCeilingWhateverTheCloudAsks() throws {
        let store = try makeStore()
        try store.record(soup)
        let greedy = try PrivatePopularity(epsilonThousandths: 4_000, dailyBudgetThousandths: 100_000, hashes: 16, buckets: 256)
        try store.recordPopularityMode(.ldp(greedy))
        for _ in 0..<30 { try store.recordEngaged(ref: soupURL) }
        #expect(try kinds(store).filter { $0 == "report" }.count == 4, "ε 16 a day at most: four reports of ε 4")
    }

    /// The ledger is a projection of the journal: an edited row is caught
    /// by the comparison with a rebuild, as every projection is.
    @Test func anEditedLedgerDiffersFromTheRebuild() throws {
        let path = try privateStoreFile(engagements: 1)
        #expect(try budget(path).values.sorted() == [4_000])
        try DatabaseQueue(path: path).write { db in try db.execute(sql: "UPDATE privacy_budget SET spent = 0") }
        let store = try DeviceStore(at: .file(path), options: StoreOptions(readOnly: true))
        #expect(try store.projectionDigest() != store.rebuiltProjectionDigest())
    }

    /// A backup holds the ledger: the device restored from it cannot spend
    /// again what it had spent that day when the backup was taken.
    @Test func aRestoredDeviceCannotSpendAgainWhatItsBackupHadSpent() throws {
        let directory = try temporaryDirectory()
        let path = directory.appendingPathComponent("device.sqlite").path
        let clock = ManualClock(testStart)
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: clock, random: SeededRandom(seed: 1)))
        try store.record(soup)
        try store.recordPopularityMode(.ldp(twoADay))
        try store.recordEngaged(ref: soupURL)
        try store.recordEngaged(ref: soupURL)
        let snapshot = directory.appendingPathComponent("device.snap").path
        try store.snapshot(to: snapshot)
        let restoredPath = directory.appendingPathComponent("restored.sqlite").path
        _ = try DeviceStore.restore(snapshot: snapshot, to: restoredPath,
                                options: StoreOptions(clock: ManualClock(testStart.adding(milliseconds: 60_000))))
        let restored = try DeviceStore(at: .file(restoredPath),
                                       options: StoreOptions(clock: ManualClock(testStart.adding(milliseconds: 120_000))))
        #expect(try restored.popularityMode() == .ldp(twoADay))
        let before = try restored.outboxEntries().count
        try restored.recordEngaged(ref: soupURL)
        #expect(try restored.outboxEntries().count == before, "the day's budget was spent before the backup")
        #expect(try budget(restoredPath) == budget(path))
        #expect(try restored.projectionDigest() == restored.rebuiltProjectionDigest())
    }

    /// A report's coins come from the vote secret and its position: the same
    /// engagements on another device (another secret) give other reports,
    /// and each report of one device is made with coins of its own.
    @Test func reportsAreRandomisedPerDeviceAndPerReport() throws {
        var reports: [[PrivateReport]] = []
        for seed: UInt64 in [1, 2] {
            let store = try makeStore(seed: seed)
            try store.record(soup)
            let roomy = try PrivatePopularity(epsilonThousandths: 1_000, dailyBudgetThousandths: 16_000, hashes: 1_024, buckets: 1_024)
            try store.recordPopularityMode(.ldp(roomy))
            for _ in 0..<16 { try store.recordEngaged(ref: soupURL) }
            reports.append(try store.outboxEntries().compactMap { entry in
                if case .report(let report) = entry.message { report } else { nil }
            })
        }
        #expect(reports.map(\.count) == [16, 16])
        #expect(reports[0] != reports[1], "two devices' secrets give two sets of coins")
        #expect(Set(reports[0].map { [$0.function, $0.row] }).count > 12, "16 reports of one device do not repeat their coins")
    }

    /// A ledger someone edited to the largest integer: the device reports
    /// nothing more that day, and nothing traps.
    @Test func aLedgerEditedToTheLargestIntegerStopsReportsWithoutATrap() throws {
        let path = try privateStoreFile(engagements: 1)
        try DatabaseQueue(path: path).write { db in try db.execute(sql: "UPDATE privacy_budget SET spent = 9223372036854775807") }
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
        let before = try store.outboxEntries().count
        try store.recordEngaged(ref: soupURL)
        #expect(try store.outboxEntries().count == before)
        #expect(try store.projectionDigest() != store.rebuiltProjectionDigest(), "the edit shows against a rebuild")
    }

    @Test func anEditedModeIsACorruptStore() throws {
        let path = try privateStoreFile(engagements: 0)
        try DatabaseQueue(path: path).write { db in try db.execute(sql: "UPDATE popularity_mode SET mode = x'01ff'") }
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
        let read = try #require(throws: DeviceStoreError.self) { try store.popularityMode() }
        #expect(read.code == .corruptStore && read.message.contains("popularity_mode.mode"))
        let engaged = try #require(throws: DeviceStoreError.self) { try store.recordEngaged(ref: soupURL) }
        #expect(engaged.message.contains("popularity_mode.mode"), "\(engaged)")
        #expect(try store.outboxEntries().isEmpty, "the call was not committed")
    }

    /// A backup of a store of version 3, before private popularity: it
    /// restores as the current version, its app counting exactly, with nothing spent.
    @Test func aSnapshotOfAVersionThreeStoreRestoresAsTheCurrentVersion() throws {
        let directory = try temporaryDirectory()
        let path = directory.appendingPathComponent("v3.sqlite").path
        do {
            let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart), random: SeededRandom(seed: 1)))
            try store.record(soup)
            try store.recordEngaged(ref: soupURL)
        }
        try chainAsBeforeFormat5(path)
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: """
                DROP TABLE popularity_mode; DROP TABLE privacy_budget; UPDATE store_meta SET value = 3 WHERE key = 'format_version'
                """)
        }
        let snapshot = directory.appendingPathComponent("v3.snap").path
        try DeviceStore(at: .file(path), options: StoreOptions(readOnly: true)).snapshot(to: snapshot)
        let restoredPath = directory.appendingPathComponent("restored.sqlite").path
        _ = try DeviceStore.restore(snapshot: snapshot, to: restoredPath, options: StoreOptions(clock: ManualClock(testStart)))
        let version = try DatabaseQueue(path: restoredPath).read { db in
            try Int.fetchOne(db, sql: "SELECT value FROM store_meta WHERE key = 'format_version'")
        }
        #expect(version == 5)
        let restored = try DeviceStore(at: .file(restoredPath), options: StoreOptions(clock: ManualClock(testStart)))
        #expect(try restored.popularityMode() == .exact && restored.privacyLedger().isEmpty)
        #expect(try restored.projectionDigest() == restored.rebuiltProjectionDigest())
        try restored.recordPopularityMode(.ldp(twoADay))
        try restored.recordEngaged(ref: soupURL)
        #expect(try kinds(restored).last == "report")
    }
}
