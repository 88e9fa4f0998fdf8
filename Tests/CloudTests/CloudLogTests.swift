import CloudCore
import CloudSQLite
import DeviceStore
import Foundation
import GRDB
import IndexModel
import IndexQuery
import Snapshot
import SyncWire
import Testing

@Suite struct CloudLogTests {
    @Test(arguments: Backend.allCases) func aRebuildFromTheCloudLogEqualsTheIncrementalState(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        let stores = try (0..<4).map { _ in try harness.addDevice() }
        try vote(stores)
        for (index, store) in stores.enumerated() {
            try store.record(publicRecipe(url: "https://example.com/\(index % 2)", id: "x\(index)"))
            try store.recordEngaged(ref: "https://example.com/\(index % 2)")
            try store.recordShown(ref: recipeURL)
        }
        try harness.syncAll()
        try stores[1].perform(.deleteAllActivities)
        try harness.syncAll()
        let incremental = try harness.cloud.projectionDigest()
        #expect(try harness.cloud.rebuiltProjectionDigest() == incremental)
        try harness.cloud.rebuildProjections()
        #expect(try harness.cloud.projectionDigest() == incremental)
        let verification = try harness.cloud.verifyLog()
        let rows = try harness.cloud.stats().logRows
        #expect(verification.isValid && verification.verifiedRows == rows)
    }

    @Test func anAlteredLogRowIsFoundByVerification() throws {
        let directory = try temporaryDirectory("sightline-cloud")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("cloud.sqlite").path
        do {
            let harness = try SyncHarness(location: .file(path))
            let store = try harness.addDevice()
            try vote([store])
            try harness.sync(store)
            try store.recordShown(ref: recipeURL)
            try harness.sync(store)
        }
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "UPDATE cloud_log SET received_at = received_at + 1 WHERE seq = 1")
        }
        let cloud = try CloudIndex(at: .file(path), options: CloudOptions(threshold: 3))
        let verification = try cloud.verifyLog()
        #expect(verification.firstProblem == "app \(app) log seq 1: stored hash does not match the row's content (row altered)")
    }
}
