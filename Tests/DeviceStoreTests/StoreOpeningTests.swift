@testable import DeviceStore
import Foundation
import GRDB
import GRDBSQLite
import IndexModel
import IndexQuery
import SyncWire
import Testing

@Suite struct StoreOpeningTests {
    @Test func readOnlyOpenOfAMissingFileFailsAndCreatesNothing() throws {
        let path = try temporaryDirectory().appendingPathComponent("missing.sqlite").path
        #expect {
            _ = try DeviceStore(at: .file(path), options: StoreOptions(readOnly: true))
        } throws: { error in
            (error as? DeviceStoreError)?.code == .storeNotFound
        }
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    /// Stores and snapshots hold the device key: they, and the WAL beside a
    /// store, are created readable by their owner only.
    @Test func storesSnapshotsAndRestoresAreCreatedOwnerOnly() throws {
        let directory = try temporaryDirectory()
        let path = directory.appendingPathComponent("owner.sqlite").path
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart), random: SeededRandom(seed: 3)))
        try store.setDeviceKey([UInt8](repeating: 7, count: 32))
        try store.index(named: "notes").indexSearchableItems([item("1", title: "a note")])
        let snapshot = directory.appendingPathComponent("owner.snap").path
        try store.snapshot(to: snapshot)
        let restored = directory.appendingPathComponent("restored.sqlite").path
        _ = try DeviceStore.restore(snapshot: snapshot, to: restored, options: StoreOptions(clock: ManualClock(testStart)))
        for file in [path, path + "-wal", snapshot, restored] {
            let mode = try #require(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int)
            #expect(mode & 0o077 == 0, "\(file) has mode \(String(mode, radix: 8))")
        }
    }

    /// A read-only look at a store whose writer died may need a private copy
    /// (when SQLite cannot make the WAL index a reader needs), and that copy,
    /// which holds the device key, is gone from disk as soon as it is open.
    @Test func theInspectionCopyOfAStoreIsLeftNowhereOnDisk() throws {
        let directory = try temporaryDirectory()
        let path = directory.appendingPathComponent("live.sqlite").path
        let writer = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart), random: SeededRandom(seed: 4)))
        try writer.setDeviceKey([UInt8](repeating: 9, count: 32))
        try writer.index(named: "notes").indexSearchableItems([item("1", title: "kept in the WAL")])
        // What a killed writer leaves: the database and its WAL, no index.
        let dead = directory.appendingPathComponent("dead.sqlite").path
        try FileManager.default.copyItem(atPath: path, toPath: dead)
        try FileManager.default.copyItem(atPath: path + "-wal", toPath: dead + "-wal")
        let scratch = FileManager.default.temporaryDirectory.path
        let prefix = "sightline-inspect-\(ProcessInfo.processInfo.processIdentifier)-"
        let before = try FileManager.default.contentsOfDirectory(atPath: scratch).filter { $0.hasPrefix(prefix) }
        // Run as root, the tests cannot deny SQLite the WAL index that makes
        // a read-only open fall back to the copy; they make the copy directly.
        var configuration = Configuration()
        configuration.readonly = true
        let copy = try DeviceStore.inspectionCopy(of: dead, configuration: configuration)
        #expect(try copy.read { db in try Data.fetchOne(db, sql: "SELECT value FROM sync_state WHERE key = 'device_key'") } == Data(repeating: 9, count: 32))
        let after = try FileManager.default.contentsOfDirectory(atPath: scratch).filter { $0.hasPrefix(prefix) }
        #expect(after == before, "an inspection copy is left in \(scratch)")
        #expect(try copy.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM event_journal") } ?? 0 > 0,
                "the copy reads on with no name on disk")
    }

    @Test func aFileThatIsNotSQLiteIsRefused() throws {
        let path = try temporaryDirectory().appendingPathComponent("junk.sqlite").path
        try Data(repeating: 0x41, count: 8192).write(to: URL(fileURLWithPath: path))
        for readOnly in [true, false] {
            #expect {
                _ = try DeviceStore(at: .file(path), options: StoreOptions(readOnly: readOnly))
            } throws: { error in
                (error as? DeviceStoreError)?.code == .notADeviceStore || (error as? DeviceStoreError)?.code == .database
            }
        }
    }

    @Test func anotherSQLiteDatabaseIsRefusedAndLeftAlone() throws {
        let path = try temporaryDirectory().appendingPathComponent("other.sqlite").path
        try DatabaseQueue(path: path).write { db in try db.execute(sql: "CREATE TABLE t (x)") }
        #expect {
            _ = try DeviceStore(at: .file(path))
        } throws: { error in
            (error as? DeviceStoreError)?.code == .notADeviceStore
        }
        let tables = try DatabaseQueue(path: path).read { db in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master") }
        #expect(tables == ["t"])
    }

    /// New in-memory stores copy one empty store's pages: each must still be
    /// a whole store of its own, with its own identity, that a file store
    /// made by running the schema matches table for table.
    @Test func newInMemoryStoresAreWholeIndependentAndTheirOwn() throws {
        let first = try makeStore(seed: 1)
        let second = try makeStore(seed: 2)
        #expect(first.deviceID != second.deviceID)
        try first.index(named: "photos").indexSearchableItems([item("1", title: "Sunrise")])
        #expect(try first.identifiers(in: "photos") == ["1"])
        #expect(try second.identifiers(in: "photos").isEmpty)
        #expect(try second.verifyJournal().head == .none)
        let path = try temporaryDirectory().appendingPathComponent("schema.sqlite").path
        _ = try DeviceStore(at: .file(path))
        let schema = "SELECT type, name, sql FROM sqlite_master ORDER BY name"
        let fileSchema = try DatabaseQueue(path: path).read { db in try Row.fetchAll(db, sql: schema) }
        let snapshot = try temporaryDirectory().appendingPathComponent("second.slsnap").path
        try second.snapshot(to: snapshot)
        let restored = try temporaryDirectory().appendingPathComponent("restored.sqlite").path
        _ = try DeviceStore.restore(snapshot: snapshot, to: restored)
        let memorySchema = try DatabaseQueue(path: restored).read { db in try Row.fetchAll(db, sql: schema) }
        #expect(memorySchema == fileSchema)
    }

    @Test func reopeningKeepsTheDeviceIdentityAndJournal() throws {
        let path = try temporaryDirectory().appendingPathComponent("d.sqlite").path
        let first = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart), random: SeededRandom(seed: 5)))
        try first.index(named: "photos").indexSearchableItems([item("1")])
        let head = try first.journalHead()
        let second = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart), random: SeededRandom(seed: 6)))
        #expect(second.deviceID == first.deviceID)
        #expect(try second.journalHead().hash == head.hash)
        try second.index(named: "photos").indexSearchableItems([item("2")])
        #expect(try second.verifyJournal().isValid)
    }

    /// A store as format version 2 left it: the same tables plus the two FTS5
    /// tables over the items' and activities' text, filled.
    private func versionTwoStore() throws -> (path: String, head: ChainHash) {
        let path = try temporaryDirectory().appendingPathComponent("v2.sqlite").path
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart), random: SeededRandom(seed: 7)))
        try store.index(named: "notes").indexSearchableItems([item("1", title: "private lunch plans"), item("2", title: "walk")])
        let head = try store.journalHead().hash
        try chainAsBeforeFormat5(path)
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: """
                CREATE VIRTUAL TABLE items_fts USING fts5 (
                    title, display_name, content_description, keywords,
                    content = 'items', content_rowid = 'rowid', tokenize = 'unicode61 remove_diacritics 2');
                CREATE VIRTUAL TABLE activities_fts USING fts5 (
                    title, keywords, content_description,
                    content = 'activities', content_rowid = 'rowid', tokenize = 'unicode61 remove_diacritics 2');
                INSERT INTO items_fts (items_fts) VALUES ('rebuild');
                DROP TABLE popularity_mode;
                DROP TABLE privacy_budget;
                UPDATE store_meta SET value = 2 WHERE key = 'format_version';
                """)
        }
        return (path, head)
    }

    private func tablesAndVersion(_ path: String) throws -> (fullText: [String], version: Int?) {
        try DatabaseQueue(path: path).read { db in
            (try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE name LIKE '%fts%' ORDER BY name"),
             try Int.fetchOne(db, sql: "SELECT value FROM store_meta WHERE key = 'format_version'"))
        }
    }

    @Test func aWritableOpenOfAVersionTwoStoreDropsItsFullTextTables() throws {
        let (path, head) = try versionTwoStore()
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart), random: SeededRandom(seed: 8)))
        let after = try tablesAndVersion(path)
        #expect(after.fullText.isEmpty)
        #expect(after.version == 5)
        #expect(try store.journalHead().hash == head, "the journal is chained anew as a store of this build chains it")
        #expect(try store.resultTitles("lunch") == ["private lunch plans"])
        try store.index(named: "notes").indexSearchableItems([item("3", title: "lunch again")])
        #expect(try store.verifyJournal().isValid)
        #expect(try store.projectionDigest() == store.rebuiltProjectionDigest())
    }

    @Test func aReadOnlyOpenOfAVersionTwoStoreReadsItAndChangesNothing() throws {
        let (path, _) = try versionTwoStore()
        let head = try DeviceStore(at: .file(path), options: StoreOptions(readOnly: true)).journalHead().hash
        let before = try tablesAndVersion(path)
        #expect(before.fullText.contains("items_fts") && before.version == 2)
        let store = try DeviceStore(at: .file(path), options: StoreOptions(readOnly: true))
        #expect(try store.journalHead().hash == head)
        #expect(try store.verifyJournal().isValid)
        #expect(try store.projectionDigest() == store.rebuiltProjectionDigest())
        let after = try tablesAndVersion(path)
        #expect(after.fullText == before.fullText && after.version == 2)
    }

    @Test func aStoreOfAnUnknownFormatVersionIsRefusedNamingTheVersionsRead() throws {
        let path = try temporaryDirectory().appendingPathComponent("v9.sqlite").path
        _ = try DeviceStore(at: .file(path))
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "UPDATE store_meta SET value = 9 WHERE key = 'format_version'")
        }
        for readOnly in [true, false] {
            #expect {
                _ = try DeviceStore(at: .file(path), options: StoreOptions(readOnly: readOnly))
            } throws: { error in
                guard let error = error as? DeviceStoreError else { return false }
                return error.code == .notADeviceStore && error.message.contains("format version 9")
                    && error.message.contains("versions 2 to 5")
            }
        }
    }
}

/// A store file is outside bytes: a value someone wrote into it that this
/// build never writes is a `corruptStore` error naming it, never a trap.
@Suite struct EditedStoreTests {
    @Test(arguments: [
        ("INSERT OR REPLACE INTO sync_state (key, value) VALUES ('acknowledged_epoch', 1), ('acknowledged_seq', -5)", "acknowledged"),
        ("INSERT OR REPLACE INTO sync_state (key, value) VALUES ('durable_epoch', -1), ('durable_seq', 1)", "durable"),
        ("UPDATE store_meta SET value = -1 WHERE key = 'epoch'", "store_meta.epoch"),
        ("UPDATE outbox SET epoch = -7", "outbox"),
        ("UPDATE outbox SET seq = 9007199254740993 WHERE seq = (SELECT max(seq) FROM outbox)", "outbox"),
    ])
    func aNegativeOrHugeStoredPositionIsACorruptStoreError(edit: String, named: String) throws {
        let path = try temporaryDirectory().appendingPathComponent("edited.sqlite").path
        do {
            let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart), random: SeededRandom(seed: 5)))
            try store.record(UserActivity(activityType: "t", title: "Edited", webpageURL: "https://example.com/e",
                                          eligibleForSearch: true, eligibleForPublicIndexing: true))
            try store.recordEngaged(ref: "https://example.com/e")
        }
        try DatabaseQueue(path: path).write { db in try db.execute(sql: edit) }
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart), readOnly: true))
        let reads: [() throws -> Void] = [
            { _ = try store.syncStatus() },
            { _ = try store.journalHead() },
            { _ = try store.outboxEntries() },
        ]
        var refused = 0
        for read in reads {
            do {
                try read()
            } catch let error as DeviceStoreError {
                #expect(error.code == .corruptStore && error.message.contains(named), "\(error)")
                refused += 1
            }
        }
        #expect(refused >= 1, "no read noticed \(edit)")
    }

    /// The privacy projection reads no public row for an activity the
    /// activities table did not hold: a public row an edit left without its
    /// activity is named when the activity is recorded again, and the call
    /// changes nothing.
    @Test func aPublicRowWithoutItsActivityIsACorruptStoreErrorAndTheCallChangesNothing() throws {
        let path = try temporaryDirectory().appendingPathComponent("edited.sqlite").path
        let activity = UserActivity(activityType: "t", title: "Edited", webpageURL: "https://example.com/e",
                                    eligibleForSearch: true, eligibleForPublicIndexing: true)
        do {
            let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart), random: SeededRandom(seed: 5)))
            try store.record(activity)
        }
        try DatabaseQueue(path: path).write { db in try db.execute(sql: "DELETE FROM activities") }
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart), random: SeededRandom(seed: 5)))
        let head = try store.journalHead()
        do {
            try store.record(activity)
            Issue.record("recording the activity again succeeded over an orphaned public row")
        } catch {
            #expect(error.code == .corruptStore, "\(error)")
            #expect(error.message.contains("public_activities holds activity \(activity.key)"), "\(error)")
        }
        let after = try store.journalHead()
        #expect(after.seq == head.seq && after.hash == head.hash)
        #expect(try store.projectionCounts().activities == 0)
    }
}

/// A column holding a value of a type this build never writes there (SQLite
/// keeps whatever an edit puts in a column of a rowid table) is a
/// `corruptStore` error naming the column when a search, a query, a read or a
/// snapshot reads it, never a trap.
@Suite struct WrongTypeInAnEditedStoreTests {
    @Test(arguments: [
        ("UPDATE items SET attributes = 1.5", "items.attributes"),
        ("UPDATE items SET expires = 'soon'", "items.expires"),
        ("UPDATE items SET item_id = X'FF00FE'", "items.item_id"),
        ("UPDATE items SET index_name = X'FF00FE'", "items.index_name"),
        ("UPDATE items SET domain = X'FF00FE'", "items.domain"),
        ("UPDATE activities SET view_count = 'many'", "activities.view_count"),
        ("UPDATE activities SET activity_key = X'FF00FE'", "activities.activity_key"),
        ("UPDATE engagement SET ref = NULL", "engagement.ref"),
        ("UPDATE engagement SET shown = 'often'", "engagement.shown"),
        ("UPDATE client_states SET state = -1", "client_states.state"),
        ("UPDATE client_states SET index_name = NULL", "client_states.index_name"),
        ("UPDATE event_journal SET hash = 1.5 WHERE seq = (SELECT max(seq) FROM event_journal)", "hash of journal seq"),
        ("UPDATE event_journal SET hash = X'0102' WHERE seq = (SELECT max(seq) FROM event_journal)", "hash of journal seq"),
    ])
    func aValueOfTheWrongTypeIsACorruptStoreErrorNamingItsColumn(edit: String, named: String) throws {
        let directory = try temporaryDirectory()
        let path = directory.appendingPathComponent("edited.sqlite").path
        do {
            let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart), random: SeededRandom(seed: 5)))
            var attributes = AttributeSet()
            attributes.title = "Harbour lights"
            attributes.contentURL = "https://example.com/h"
            var batch = store.index(named: "t").beginBatch()
            batch.indexSearchableItems([SearchableItem(uniqueIdentifier: "h", domainIdentifier: "d", attributes: attributes)])
            try store.index(named: "t").endBatch(batch, clientState: [1, 2, 3])
            try store.record(UserActivity(activityType: "t", title: "Harbour walk", webpageURL: "https://example.com/w",
                                          eligibleForSearch: true, eligibleForPublicIndexing: true))
            try store.recordEngaged(ref: "https://example.com/h")
        }
        try DatabaseQueue(path: path).write { db in try db.execute(sql: edit) }
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
        let reads: [() throws -> Void] = [
            { _ = try store.search("harbour") },
            { _ = try store.query(try QueryParser.parse("title == \"*\"")) },
            { _ = try store.items(in: "t") },
            { _ = try store.activities() },
            { _ = try store.engagement(ref: "https://example.com/h") },
            { _ = try store.snapshot(to: directory.appendingPathComponent("backup.slsnap").path) },
        ]
        var refused = 0
        for read in reads {
            do {
                try read()
            } catch let error as DeviceStoreError {
                #expect(error.code == .corruptStore || error.code == .corruptJournal, "\(error)")
                #expect(error.message.contains(named), "\(error)")
                refused += 1
            }
        }
        #expect(refused >= 1, "no read noticed \(edit)")
    }
}

/// A sync run sends the outbox's bytes as they are; an outbox message an
/// edit has made into something that is not a message stops the run with an
/// error naming its position, before anything is sent.
@Test(arguments: ["X'FF00FE'", "'text'", "X''"])
func anOutboxMessageThatIsNotAMessageStopsASyncRunNamingItsPosition(edit: String) async throws {
    struct Unreachable: Transport {
        func exchange(_ frame: [UInt8]) async throws(TransportError) -> [UInt8] {
            Issue.record("a frame was sent")
            throw TransportError("this test sends nothing")
        }
    }
    let path = try temporaryDirectory().appendingPathComponent("edited.sqlite").path
    do {
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart), random: SeededRandom(seed: 5)))
        try store.setDeviceKey([UInt8](repeating: 7, count: 32))
        try store.record(UserActivity(activityType: "t", title: "Edited", webpageURL: "https://example.com/e",
                                      eligibleForSearch: true, eligibleForPublicIndexing: true))
        try store.recordEngaged(ref: "https://example.com/e")
    }
    try await DatabaseQueue(path: path).write { db in
        try db.execute(sql: "UPDATE outbox SET message = \(edit) WHERE seq = (SELECT max(seq) FROM outbox)")
    }
    let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
    let error = await #expect(throws: DeviceStoreError.self) {
        _ = try await SyncClient(store: store, transport: Unreachable(), sleep: { _ in }).run()
    }
    #expect(error?.code == .corruptJournal && error?.message.contains("outbox message 1:") == true, "\(String(describing: error))")
}

/// Found by the snapshot-restore fuzz target: the store inside
/// `tools/fuzz/failures/snapshot-restore/restored-schema-row-without-type`
/// (its bytes after the first) has a schema table row without a type, on
/// which GRDB traps when a restore opens it for writing, so the file is
/// refused first with `corruptStore`.
@Test func aSchemaRowWithoutATypeIsACorruptStoreErrorNotATrap() throws {
    var root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    while !FileManager.default.fileExists(atPath: root.appendingPathComponent("Package.swift").path) {
        root = root.deletingLastPathComponent()
    }
    let input = try Data(contentsOf: root.appendingPathComponent("tools/fuzz/failures/snapshot-restore/restored-schema-row-without-type"))
    let path = try temporaryDirectory().appendingPathComponent("store.sqlite").path
    try input.dropFirst().write(to: URL(fileURLWithPath: path))
    // Read-only, SQLite answers without the row; opening must not trap.
    _ = try? DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart), readOnly: true))
    let error = try #require(throws: DeviceStoreError.self) {
        try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
    }
    #expect(error.code == .corruptStore && error.message.contains("sqlite_master"), "\(error)")
}

/// A store that let its prepared statements go prepares them again: its
/// calls, searches and sync state come out as a store's that kept them.
@Suite struct ReleasedStatementsTests {
    private func calls(_ store: DeviceStore, from first: Int) throws {
        for number in first..<(first + 5) {
            try store.index(named: "notes").indexSearchableItems([item("n\(number)", title: "Potato note \(number)")])
            try store.record(UserActivity(activityType: "com.example.read", title: "Potato recipe \(number)",
                                          webpageURL: "https://example.com/\(number)", eligibleForSearch: true,
                                          eligibleForPublicIndexing: true))
            try store.recordEngaged(ref: "https://example.com/\(number)")
        }
    }

    @Test(arguments: [false, true])
    func aStoreThatLetItsStatementsGoWorksAsOneThatKeptThem(onFile: Bool) throws {
        let directory = try temporaryDirectory()
        func open(_ name: String) throws -> DeviceStore {
            let location: StoreLocation = onFile ? .file(directory.appendingPathComponent(name).path) : .memory
            return try DeviceStore(at: location, options: StoreOptions(clock: ManualClock(testStart), random: SeededRandom(seed: 3)))
        }
        let kept = try open("kept.sqlite"), released = try open("released.sqlite")
        for store in [kept, released] {
            try calls(store, from: 0)
            _ = try store.search("potato")
        }
        released.releaseStatements()
        for store in [kept, released] { try calls(store, from: 5) }
        #expect(try released.resultTitles("potato") == kept.resultTitles("potato"))
        #expect(try released.resultTitles("potato").count == 20)
        #expect(try released.projectionDigest() == kept.projectionDigest())
        #expect(try released.syncStatus() == kept.syncStatus())
        #expect(try released.verifyJournal().firstProblem == nil)
    }
}

/// A store keeps the statements of its calls' path for its connection's
/// life, and compiles those of rarer events for each use: a simulation
/// keeps thousands of stores, and each kept statement costs every one of
/// them 1 to 2 KiB for its life.
@Suite struct KeptStatementsTests {
    /// Fragments of the SQL of rare events' statements.
    static let rare = [
        "related_deleted = 1",              // a strongly related item's deletion
        "SELECT related_deleted FROM",      // ... reaching a public activity
        "SET live = 0",
        "DELETE FROM public_votes",         // a withdrawal
        "domain >= ?",                      // deletions by domain
        "WHERE index_name = ? ORDER BY",    // deletion of all items
        "FROM activities WHERE activity_key = ?)",  // deletion of activities by identifier
        "INSERT INTO store_meta",           // the store's creation
        "VALUES ('device_key', ?)",         // its enrolment
        "pragma_table_info",                // the journal's columns
        "engaged = engaged - ?",            // a purge's engagement counts
        "shown <= 0",
        "SELECT EXISTS (SELECT 1 FROM items WHERE item_id = ?)",
    ]

    private func liveSQL(_ store: DeviceStore) throws -> [String] {
        try store.onConnection { queue in queue.inDatabase { db in
            var texts: [String] = []
            var statement = sqlite3_next_stmt(db.sqliteConnection, nil)
            while let current = statement {
                texts.append(sqlite3_sql(current).map { String(cString: $0) } ?? "")
                statement = sqlite3_next_stmt(db.sqliteConnection, current)
            }
            return texts
        } }
    }

    @Test func aStoreKeepsNoStatementOfARareEventAfterIt() throws {
        let clock = ManualClock(testStart)
        let store = try makeStore(clock: clock)
        let notes = store.index(named: "notes")
        for number in 0..<6 {
            _ = try notes.indexSearchableItems([item("n\(number)", domain: "d\(number % 2)", title: "Potato note \(number)")])
            _ = try store.record(UserActivity(activityType: "com.example.read", title: "Potato recipe \(number)",
                                              webpageURL: "https://example.com/\(number)", eligibleForSearch: true,
                                              eligibleForPublicIndexing: true, relatedUniqueIdentifier: "n\(number)",
                                              persistentIdentifier: "a\(number)"))
            try store.recordShown(ref: "https://example.com/\(number)")
            try store.recordEngaged(ref: "https://example.com/\(number)")
        }
        _ = try store.search("potato")
        let kept = try liveSQL(store)
        _ = try notes.deleteSearchableItems(withIdentifiers: ["n0"])
        _ = try notes.deleteSearchableItems(withDomainIdentifiers: ["d1"])
        _ = try store.perform(.deleteActivities(identifiers: ["a2"]))
        _ = try notes.deleteAllSearchableItems()
        _ = try store.purge()
        _ = try store.scanJournal { _ in true }
        try store.setDeviceKey([UInt8](repeating: 1, count: 32))
        _ = try store.search("potato")
        let after = try liveSQL(store)
        for fragment in KeptStatementsTests.rare {
            #expect(!after.contains { $0.contains(fragment) }, "a statement with \"\(fragment)\" is still kept")
        }
        // The rare events ran their statements: one activity went, and the
        // others lost their strongly related items.
        let activities = try store.activities()
        #expect(activities.count == 5)
        #expect(activities.filter { !$0.relatedItemDeleted }.isEmpty, "\(activities)")
        #expect(!kept.isEmpty)
    }
}
