import CloudCore
import CloudSQLite
import Foundation
import GRDB
import IndexModel
@testable import Simulation
import Testing

/// A simulated cloud comes up on its extracted backup while a copy of it is
/// checked on the restore thread; the checks still say what they would have
/// said before it came up.
@Suite struct PendingCloudRestoreTests {
    private func backup(in directory: URL) throws -> String {
        let path = directory.appendingPathComponent("cloud.sqlite").path
        let snapshot = directory.appendingPathComponent("cloud-1.slsnap").path
        let cloud = try CloudIndex(at: .file(path), options: CloudOptions(threshold: 2))
        try cloud.registerApp(AppID("app"), enrolmentSecret: "a secret of sixteen bytes or more")
        try cloud.snapshot(to: snapshot)
        return snapshot
    }

    private func scratch() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sightline-pending-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// A restore of `snapshot` into `directory`, extracted and copied as on a call lane.
    private func extracted(_ snapshot: String, in directory: URL) -> PendingCloudRestore {
        let pending = PendingCloudRestore(chosen: 0, snapshot: snapshot, staging: directory.appendingPathComponent("staged").path,
                                          checked: directory.appendingPathComponent("checked").path)
        pending.extract(copyingForChecks: true)
        return pending
    }

    @Test func aSoundBackupIsExtractedAndItsCheckedCopyRemovedOnceChecked() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let snapshot = try backup(in: directory)
        let pending = extracted(snapshot, in: directory)
        #expect(pending.extractionFailure == nil)
        #expect(FileManager.default.contentsEqual(atPath: pending.staging, andPath: pending.checked))
        pending.verify()
        #expect(pending.verificationFailure == nil)
        #expect(!FileManager.default.fileExists(atPath: pending.checked))
        #expect(FileManager.default.fileExists(atPath: pending.staging), "the checks took the store the cloud serves")
    }

    @Test func aBackupThatFailsItsChecksAfterExtractionSaysWhyAndLeavesNoCopy() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let snapshot = try backup(in: directory)
        let pending = extracted(snapshot, in: directory)
        try #require(pending.extractionFailure == nil)
        // A projection row no log row implies, in the copy the checks read.
        try DatabaseQueue(path: pending.checked).write { db in
            try db.execute(sql: "INSERT INTO app_state (app, wanted_seq) VALUES ('made-up', 1)")
        }
        pending.verify()
        #expect(pending.verificationFailure?.message == "the snapshot's projections differ from a replay of its cloud log")
        #expect(!FileManager.default.fileExists(atPath: pending.checked))
    }

    @Test func aBackupThatCannotBeExtractedFailsBeforeTheCloudComesUp() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let snapshot = try backup(in: directory)
        var raw = try #require(FileManager.default.contents(atPath: snapshot))
        raw[raw.count - 10] ^= 0x40
        try raw.write(to: URL(fileURLWithPath: snapshot))
        let pending = extracted(snapshot, in: directory)
        #expect(pending.extractionFailure != nil)
        #expect(!FileManager.default.fileExists(atPath: pending.staging))
        #expect(!FileManager.default.fileExists(atPath: pending.checked))
    }
}
