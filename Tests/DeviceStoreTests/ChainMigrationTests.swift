import DeviceStore
import Foundation
import GRDB
import IndexModel
import Testing

/// `Journal/fixtures/device-v4.*`, written by the format-4 build
/// (`make-device.sh 4`): six events, the last the deletion of a note. Format
/// 5 chains the journal over payload hashes, so opening such a store for
/// writing checks its old chain and chains it anew.
@Suite struct ChainMigrationTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Journal/fixtures")

    private func fixtureCopy(_ name: String, in directory: URL) throws -> String {
        let path = directory.appendingPathComponent(name).path
        try FileManager.default.copyItem(atPath: Self.fixtures.appendingPathComponent(name).path, toPath: path)
        return path
    }

    private func formatVersion(_ path: String) throws -> Int? {
        try DatabaseQueue(path: path).read { db in
            try Int.fetchOne(db, sql: "SELECT value FROM store_meta WHERE key = 'format_version'")
        }
    }

    @Test func aFormat4StoreVerifiesReadOnlyAndIsChainedAnewWhenOpenedForWriting() throws {
        let path = try fixtureCopy("device-v4.sqlite", in: try temporaryDirectory())
        let old = try DeviceStore(at: .file(path), options: StoreOptions(readOnly: true))
        let before = try old.verifyJournal()
        #expect(before.isValid && before.verifiedRows == 6, "\(String(describing: before.firstProblem))")
        #expect(try old.projectionDigest() == old.rebuiltProjectionDigest())
        #expect(try formatVersion(path) == 4)

        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
        #expect(try formatVersion(path) == 5)
        let after = try store.verifyJournal()
        #expect(after.isValid && after.verifiedRows == 6, "\(String(describing: after.firstProblem))")
        #expect(after.headHash != before.headHash, "the chain covers payload hashes now")
        #expect(try store.projectionDigest() == store.rebuiltProjectionDigest())
        #expect(try store.resultTitles("meeting") == ["meeting notes"])
        try store.index(named: "notes").indexSearchableItems([item("n3", title: "after the migration")])
        #expect(try store.verifyJournal().verifiedRows == 7)
    }

    @Test func aFormat4StoreWhoseJournalWasAlteredIsNotChainedAnew() throws {
        let path = try fixtureCopy("device-v4.sqlite", in: try temporaryDirectory())
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "UPDATE event_journal SET time = time + 1 WHERE seq = 3")
        }
        #expect {
            _ = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
        } throws: { error in
            guard let error = error as? DeviceStoreError else { return false }
            return error.code == .corruptJournal && error.seq == Seq(3) && error.message.contains("cannot be chained anew")
        }
        #expect(try formatVersion(path) == 4, "the open changed nothing")
        let problem = try DeviceStore(at: .file(path), options: StoreOptions(readOnly: true)).verifyJournal().firstProblem
        #expect(problem?.seq == Seq(3))
    }

    @Test func aSnapshotOfAFormat4StoreRestoresVerifiedAsFormat5() throws {
        let directory = try temporaryDirectory()
        let snapshot = try fixtureCopy("device-v4.slsnap", in: directory)
        let path = directory.appendingPathComponent("restored.sqlite").path
        let report = try DeviceStore.restore(snapshot: snapshot, to: path, options: StoreOptions(clock: ManualClock(testStart)))
        #expect(report.manifest.headSeq == Seq(6))
        #expect(try formatVersion(path) == 5)
        let restored = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart)))
        let verification = try restored.verifyJournal()
        #expect(verification.isValid && verification.head > Seq(6), "the restore and its reindex requests follow the six events")
        #expect(try restored.projectionDigest() == restored.rebuiltProjectionDigest())
        #expect(try restored.resultTitles("meeting") == ["meeting notes"])
    }

    @Test func aSnapshotOfAnAlteredFormat4StoreIsRefusedBeforeItsChainIsMadeAnew() throws {
        let directory = try temporaryDirectory()
        let store = try fixtureCopy("device-v4.sqlite", in: directory)
        try DatabaseQueue(path: store).write { db in
            try db.execute(sql: "UPDATE event_journal SET call = call + 1 WHERE seq = 2")
        }
        let snapshot = directory.appendingPathComponent("altered.slsnap").path
        try DeviceStore(at: .file(store), options: StoreOptions(readOnly: true)).snapshot(to: snapshot)
        let path = directory.appendingPathComponent("restored.sqlite").path
        #expect {
            _ = try DeviceStore.restore(snapshot: snapshot, to: path, options: StoreOptions(clock: ManualClock(testStart)))
        } throws: { error in
            guard let error = error as? DeviceStoreError else { return false }
            return error.code == .snapshot && error.message.contains("does not verify") && error.message.contains("seq 2")
        }
        #expect(!FileManager.default.fileExists(atPath: path))
    }
}
