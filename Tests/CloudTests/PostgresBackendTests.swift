import CloudCore
import CloudPostgres
import CloudSQLite
import DeviceStore
import Foundation
import IndexModel
import PostgresTestSupport
import SyncWire
import Testing

/// What only the PostgreSQL backend has: a database several servers share,
/// a schema with a version, and rows someone may edit by hand.
@Suite struct PostgresBackendTests {
    private func cloud(_ database: TestDatabase, threshold: Int? = 3, clock: ManualClock = ManualClock(harnessStart),
                       seed: UInt64 = 99) throws(CloudError) -> PostgresCloud {
        try PostgresCloud(at: database.location, password: database.password,
                          options: PostgresCloudOptions(store: CloudOptions(clock: clock, random: SeededRandom(seed: seed),
                                                                            threshold: threshold), poolSize: 2))
    }

    /// Runs `body` in a session on the store's schema, as an operator with psql would.
    private func edit(_ database: TestDatabase, _ sql: String) throws {
        let pool = PostgresPool(location: database.location, password: database.password, size: 1, searchPath: "sightline")
        defer { pool.close() }
        try pool.withSession { try $0.executeScript(sql) }
    }

    /// One sync session of `store`, each frame to the cloud `route` picks
    /// for it (its index in the session), and the frames `route` names twice
    /// to both: what devices see when their requests are spread over servers.
    private func sync(_ store: DeviceStore, clock: ManualClock, _ deliver: (Int, [UInt8]) -> [UInt8]) throws {
        var run = try store.beginSync()
        var action = try store.perform(run.next(now: clock.now()), in: &run, now: clock.now())
        var frames = 0
        while case .send(let frame) = action {
            let reply = deliver(frames, frame.encoded)
            frames += 1
            action = try store.perform(run.received(reply, now: clock.now()), in: &run, now: clock.now())
        }
    }

    /// Two servers on one database take the frames of twelve devices at
    /// once, each device's frames alternating between them and every third
    /// frame sent to both: each stream stays exactly-once, the log's order
    /// is the order the folds saw (the projections equal a replay), and the
    /// counts and public index are a SQLite cloud's fed the same devices.
    @Test func twoServersOnOneDatabaseCountWhatOneSQLiteCloudCounts() throws {
        let database = try TestDatabase()
        let clock = ManualClock(harnessStart)
        let servers = [try cloud(database, clock: clock), try cloud(database, clock: clock)]
        try servers[0].registerApp(app, enrolmentSecret: enrolmentSecret)
        let sqlite = try CloudIndex(at: .memory, options: CloudOptions(clock: clock, random: SeededRandom(seed: 99), threshold: 3))
        try sqlite.registerApp(app, enrolmentSecret: enrolmentSecret)
        func fleet(_ cloud: any CloudStore) throws -> [DeviceStore] {
            try (1...12).map { (seed: UInt64) in
                let store = try DeviceStore(at: .memory, options: StoreOptions(clock: clock, random: SeededRandom(seed: seed)))
                try store.setDeviceKey(cloud.enrol(app: app, device: store.deviceID, enrolmentSecret: enrolmentSecret))
                try store.record(publicRecipe())
                try store.recordEngaged(ref: recipeURL)
                try store.record(publicRecipe(url: recipeURL + "-\(seed % 3)", id: "r\(seed % 3)"))
                for _ in 0..<Int(seed % 4) { try store.recordShown(ref: recipeURL) }
                return store
            }
        }
        let shared = try fleet(servers[0])
        let alone = try fleet(sqlite)
        let failures = LockedList()
        for round in 0..<3 {
            DispatchQueue.concurrentPerform(iterations: shared.count) { number in
                do {
                    try sync(shared[number], clock: clock) { index, frame in
                        let server = servers[(number + index + round) % 2]
                        if index % 3 == 0 { _ = servers[(number + index + round + 1) % 2].ingest(frame) }
                        return server.ingest(frame).reply
                    }
                    try shared[number].recordEngaged(ref: recipeURL)
                } catch {
                    failures.append("device \(number): \(error)")
                }
            }
            for store in alone {
                try sync(store, clock: clock) { _, frame in sqlite.ingest(frame).reply }
                try store.recordEngaged(ref: recipeURL)
            }
        }
        // Who hears a content request when depends on the order of the
        // frames, so the answers sent differ; two more rounds send them all.
        for _ in 0..<2 {
            for (number, store) in shared.enumerated() {
                try sync(store, clock: clock) { index, frame in servers[(number + index) % 2].ingest(frame).reply }
            }
            for store in alone { try sync(store, clock: clock) { _, frame in sqlite.ingest(frame).reply } }
        }
        #expect(failures.items.isEmpty, "\(failures.items)")
        for store in shared + alone { #expect(try store.syncStatus().pending == 0) }
        let entries = try servers[1].entries(app: app)
        let expected = try sqlite.entries(app: app)
        #expect(entries.map(\.popularity) == expected.map(\.popularity) && entries.map(\.liveVotes) == expected.map(\.liveVotes))
        #expect(entries.map(\.voters) == expected.map(\.voters) && entries.map(\.content) == expected.map(\.content))
        #expect(try servers[0].publicIndex(app: app).count == 1, "the shared recipe reached K and its content was agreed")
        #expect(try servers[0].projectionDigest() == servers[1].rebuiltProjectionDigest())
        #expect(try servers[1].verifyLog().isValid)
    }

    /// A device whose frames alternate between two servers names, in each
    /// frame after its first, a dictionary the other server made: the
    /// server makes it from the device's log rows, so no frame comes twice.
    @Test func aDeviceAlternatingBetweenTwoServersSendsEachFrameOnce() throws {
        let database = try TestDatabase()
        let clock = ManualClock(harnessStart)
        let servers = [try cloud(database, clock: clock), try cloud(database, clock: clock)]
        try servers[0].registerApp(app, enrolmentSecret: enrolmentSecret)
        let store = try DeviceStore(at: .memory, options: StoreOptions(clock: clock, random: SeededRandom(seed: 1)))
        try store.setDeviceKey(servers[0].enrol(app: app, device: store.deviceID, enrolmentSecret: enrolmentSecret))
        let urls = (0..<3).map { "https://www.yummly.com/recipe/alternating-\($0)" }
        for (index, url) in urls.enumerated() { try store.record(publicRecipe(url: url, id: "r\(index)")) }
        for _ in 0..<3 { for url in urls { try store.recordEngaged(ref: url) } }
        var run = try store.beginSync(configuration: UploaderConfiguration(maximumMessages: 2))
        var action = try store.perform(run.next(now: clock.now()), in: &run, now: clock.now())
        var frames: [UploadFrame] = []
        var outcomes: [IngestResult.Outcome] = []
        while case .send(let frame) = action {
            let result = servers[frames.count % 2].ingest(frame.encoded)
            frames.append(frame)
            outcomes.append(result.outcome)
            action = try store.perform(run.received(result.reply, now: clock.now()), in: &run, now: clock.now())
        }
        guard case .finished(let report) = action else { throw HarnessError("the run did not finish: \(action)") }
        #expect(frames.count == 6 && frames.dropFirst().allSatisfy { $0.base != nil })
        #expect(outcomes.allSatisfy { if case .accepted = $0 { true } else { false } }, "\(outcomes)")
        #expect(report.dictionaryResets == 0 && report.status?.pending == 0)
        let recovered = servers.map(\.frameDictionaries.recoveries.recovered)
        #expect(recovered == [2, 3], "each based frame went to the server that did not take the one before")
        #expect(try servers[0].projectionDigest() == servers[1].rebuiltProjectionDigest())
    }

    /// A server that opens the store with another K folds the log again; a
    /// server still holding the old K finds the new one under the app's lock
    /// and folds with it.
    @Test func aServerThatHeldTheOldThresholdFoldsWithTheNewOne() throws {
        let database = try TestDatabase()
        let old = try cloud(database, threshold: 3)
        try old.registerApp(app, enrolmentSecret: enrolmentSecret)
        let stores = try (1...2).map { (seed: UInt64) in
            let store = try DeviceStore(at: .memory, options: StoreOptions(clock: ManualClock(harnessStart), random: SeededRandom(seed: seed)))
            try store.setDeviceKey(old.enrol(app: app, device: store.deviceID, enrolmentSecret: enrolmentSecret))
            try vote([store])
            return store
        }
        _ = old.ingest(try #require(try stores[0].pendingFrame(now: harnessStart)).encoded)
        let new = try cloud(database, threshold: 2)
        #expect(new.threshold == 2 && old.threshold == 3)
        #expect(old.ingest(try #require(try stores[1].pendingFrame(now: harnessStart)).encoded).outcome == .accepted(messages: 2))
        #expect(old.threshold == 2, "the old server did not learn the new K")
        #expect(try old.entry(app: app, hash: recipeHash())?.isWanted == true, "two votes did not reach the new K of 2")
        #expect(try old.projectionDigest() == new.rebuiltProjectionDigest())
    }

    @Test func aStoreOfANewerFormatVersionIsRefusedSayingSo() throws {
        let database = try TestDatabase()
        _ = try cloud(database)
        try edit(database, "UPDATE cloud_meta SET value = '11' WHERE key = 'format_version'")
        let refusal = try #require(throws: CloudError.self) { try cloud(database) }
        #expect(refusal.code == .notACloudStore && refusal.message.contains("format version 11, newer than this build's 10"), "\(refusal)")
    }

    /// Version 8 added the crawled pages and version 9 private popularity:
    /// a store of version 7 gains their tables and column when a server
    /// opens it, and a read-only command says to do so.
    @Test func aStoreOfFormatVersionSevenGainsThePagesAndTheSketchWhenOpenedForWriting() throws {
        let database = try TestDatabase()
        _ = try cloud(database)
        try edit(database, """
            DROP TABLE pages; DROP TABLE sketch_cells; DROP TABLE report_allowances; ALTER TABLE apps DROP COLUMN popularity;
            UPDATE cloud_meta SET value = '7' WHERE key = 'format_version'
            """)
        let refusal = try #require(throws: CloudError.self) {
            try PostgresCloud(at: database.location, password: database.password,
                              options: PostgresCloudOptions(store: CloudOptions(readOnly: true), poolSize: 1))
        }
        #expect(refusal.message.contains("format version 7") && refusal.message.contains("cloud rebuild"), "\(refusal)")
        let opened = try cloud(database)
        #expect(try opened.stats().pages == 0 && opened.stats().reports == 0)
        try opened.registerApp(app, enrolmentSecret: enrolmentSecret)
        try opened.recordPages([CrawledPage(url: recipeURL, title: "Chips")], app: app)
        #expect(try cloud(database).crawledPages(app: app).map(\.title) == ["Chips"])
        #expect(try opened.popularity(app: app) == .exact)
    }

    /// A store of version 8 gains the popularity column and the sketch's
    /// tables, and its apps count exactly.
    @Test func aStoreOfFormatVersionEightGainsPrivatePopularityWhenOpenedForWriting() throws {
        let database = try TestDatabase()
        let first = try cloud(database)
        try first.registerApp(app, enrolmentSecret: enrolmentSecret)
        try edit(database, """
            DROP TABLE sketch_cells; DROP TABLE report_allowances; ALTER TABLE apps DROP COLUMN popularity;
            UPDATE cloud_meta SET value = '8' WHERE key = 'format_version'
            """)
        let opened = try cloud(database)
        #expect(try opened.popularity(app: app) == .exact && opened.stats().reports == 0)
        let settings = try PrivatePopularity(epsilonThousandths: 4_000, dailyBudgetThousandths: 8_000, hashes: 16, buckets: 256)
        try opened.setPopularity(.ldp(settings), app: app)
        #expect(try cloud(database).popularity(app: app) == .ldp(settings))
    }

    /// A count or a log field someone wrote into the database out of range
    /// is a typed error naming the column when it is read, never a trap.
    @Test(arguments: [
        ("UPDATE hashes SET views = -1", "hashes.views"),
        ("UPDATE hashes SET live_votes = 9007199254740992", "hashes.live_votes"),
        ("UPDATE cloud_log SET epoch = -1", "epoch"),
        ("UPDATE cloud_meta SET value = 'many' WHERE key = 'threshold'", "cloud_meta.threshold"),
    ])
    func anEditedRowIsAnErrorNamingItsColumn(edit statement: String, column: String) throws {
        let database = try TestDatabase()
        do {
            let harness = try PostgresHarness(database: database)
            try harness.vote()
        }
        try edit(database, statement)
        let failure: CloudError
        do throws(CloudError) {
            let cloud = try cloud(database, threshold: nil)
            _ = try cloud.entries(app: app)
            let verification = try cloud.verifyLog()
            if let problem = verification.firstProblem { throw CloudError(.corruptLog, problem) }
            _ = try cloud.rebuiltProjectionDigest()
            Issue.record("\(statement) was read without an error")
            return
        } catch {
            failure = error
        }
        #expect(failure.message.contains(column), "\(failure)")
    }

    /// `cloud restore --to-time` into PostgreSQL: the checked snapshot is
    /// cut before its rows are copied, and the database holds what a SQLite
    /// restore of the same cut holds.
    @Test func aRestoreCutBackToAnInstantHoldsTheSameOnPostgreSQLAsOnSQLite() throws {
        let database = try TestDatabase()
        let directory = try temporaryDirectory("sightline-pg-cut")
        defer { try? FileManager.default.removeItem(at: directory) }
        let snapshot = directory.appendingPathComponent("cloud.slsnap").path
        let clock = ManualClock(harnessStart)
        let source = try CloudIndex(at: .file(directory.appendingPathComponent("cloud.sqlite").path),
                                    options: CloudOptions(clock: clock, threshold: 2))
        try source.registerApp(app, enrolmentSecret: enrolmentSecret)
        for number in 0..<3 {
            let store = try DeviceStore(at: .memory, options: StoreOptions(clock: clock, random: SeededRandom(seed: UInt64(number + 1))))
            try store.setDeviceKey(source.enrol(app: app, device: store.deviceID, enrolmentSecret: enrolmentSecret))
            try vote([store])
            if number == 2 { clock.advance(byMilliseconds: 1_000) }
            let frame = try #require(try store.pendingFrame(now: clock.now()))
            #expect(source.ingest(frame.encoded).outcome == .accepted(messages: frame.count))
        }
        try source.snapshot(to: snapshot)
        let instant = harnessStart
        try PostgresCloud.restore(snapshot: snapshot, to: database.location, password: database.password, through: instant)
        let onSQLite = try CloudIndex.restore(snapshot: snapshot, to: directory.appendingPathComponent("cut.sqlite").path,
                                              through: instant)
        let cut = try #require(onSQLite.cut)
        #expect(cut.rowsKept == 2 && cut.rowsRemoved == 1)
        let restored = try cloud(database, threshold: nil)
        #expect(try restored.logHeads() == cut.heads)
        let cutStore = try CloudIndex(at: .file(directory.appendingPathComponent("cut.sqlite").path))
        #expect(try restored.projectionDigest() == cutStore.projectionDigest())
        #expect(try restored.entry(app: app, hash: recipeHash())?.liveVotes == 2)
    }

    /// A restore goes only into a database without a cloud store.
    @Test func aRestoreIntoADatabaseThatHoldsAStoreIsRefusedAndChangesNothing() throws {
        let database = try TestDatabase()
        let directory = try temporaryDirectory("sightline-pg-restore")
        defer { try? FileManager.default.removeItem(at: directory) }
        let snapshot = directory.appendingPathComponent("cloud.slsnap").path
        let harness = try PostgresHarness(database: database)
        try harness.vote()
        try harness.cloud.snapshot(to: snapshot)
        let before = try harness.cloud.projectionDigest()
        let refusal = try #require(throws: CloudError.self) {
            try PostgresCloud.restore(snapshot: snapshot, to: database.location, password: database.password)
        }
        #expect(refusal.message.contains("already holds a cloud store"), "\(refusal)")
        #expect(try harness.cloud.projectionDigest() == before)
    }
}

/// A PostgreSQL cloud with one device that voted for the recipe.
private struct PostgresHarness {
    let cloud: PostgresCloud
    let store: DeviceStore

    init(database: TestDatabase) throws {
        cloud = try PostgresCloud(at: database.location, password: database.password,
                                  options: PostgresCloudOptions(store: CloudOptions(clock: ManualClock(harnessStart),
                                                                                    random: SeededRandom(seed: 1), threshold: 1)))
        try cloud.registerApp(app, enrolmentSecret: enrolmentSecret)
        store = try DeviceStore(at: .memory, options: StoreOptions(clock: ManualClock(harnessStart), random: SeededRandom(seed: 5)))
        try store.setDeviceKey(cloud.enrol(app: app, device: store.deviceID, enrolmentSecret: enrolmentSecret))
    }

    func vote() throws {
        try CloudTests.vote([store])
        let frame = try #require(try store.pendingFrame(now: harnessStart))
        #expect(cloud.ingest(frame.encoded).outcome == .accepted(messages: 2))
    }
}

/// A list several threads append to.
final class LockedList: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [String] = []

    func append(_ item: String) { lock.withLock { list.append(item) } }
    var items: [String] { lock.withLock { list } }
}
