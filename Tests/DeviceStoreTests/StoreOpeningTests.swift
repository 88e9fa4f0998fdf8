import DeviceStore
import Foundation
import GRDB
import IndexModel
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
}
