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

    /// A reader that checks one device at a time (the simulator's end
    /// checks) reads the log device by device: every row once, each
    /// device's rows together and in epoch and outbox order, across more
    /// rows than a PostgreSQL page holds, and no further than it asks.
    @Test(arguments: Backend.allCases) func theLogReadDeviceByDeviceHoldsEveryRowOnceEachDevicesTogether(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        let stores = try (0..<6).map { _ in try harness.addDevice() }
        try vote(stores)
        // A frame a device a round, the devices' frames interleaved in the log.
        for _ in 0..<50 {
            for store in stores {
                try store.recordShown(ref: recipeURL)
                _ = try harness.sync(store)
            }
        }
        var inLogOrder: [Int64] = []
        try harness.cloud.scanLog(app: app, from: 1) { record in
            inLogOrder.append(record.seq)
            return true
        }
        var byDevice: [CloudLogRecord] = []
        try harness.cloud.scanLogByDevice(app: app) { record in
            byDevice.append(record)
            return true
        }
        #expect(inLogOrder.count > 300)
        #expect(byDevice.map(\.seq).sorted() == inLogOrder)
        var finished: Set<DeviceID> = []
        for (before, record) in zip(byDevice, byDevice.dropFirst()) {
            if record.device == before.device {
                #expect((before.epoch, before.lastSeq, before.seq) < (record.epoch, record.lastSeq, record.seq))
            } else {
                #expect(finished.insert(before.device).inserted, "\(before.device)'s rows are not together")
            }
        }
        #expect(!finished.contains(byDevice.last!.device) && finished.count == stores.count - 1)
        var first: [Int64] = []
        try harness.cloud.scanLogByDevice(app: app) { record in
            first.append(record.seq)
            return first.count < 3
        }
        #expect(first == byDevice.prefix(3).map(\.seq))
    }

    /// Each app's head is its log's last row, for every app with a log, in
    /// the apps' order; an app with no row has none.
    @Test(arguments: Backend.allCases) func eachAppsLogHeadIsItsLastRow(backend: Backend) throws {
        let harness = try SyncHarness(backend: backend)
        let apps = [app, AppID("com.example.b"), AppID("com.example.c"), AppID("com.example.quiet")]
        for other in apps.dropFirst() { try harness.cloud.registerApp(other, enrolmentSecret: enrolmentSecret) }
        var rows: [AppID: Int64] = [:]
        for (number, owner) in [apps[2], apps[0], apps[1], apps[2], apps[0]].enumerated() {
            let store = try harness.addDevice(seed: UInt64(number + 1), app: owner)
            for round in 0..<(number + 1) {
                try store.record(UserActivity(activityType: "com.example.read", title: "Read \(round)",
                                              webpageURL: "https://example.com/\(number)/\(round)", eligibleForSearch: true,
                                              eligibleForPublicIndexing: true, persistentIdentifier: "a\(round)"))
                try store.recordEngaged(ref: "https://example.com/\(number)/\(round)")
                for result in try harness.sync(store) {
                    if case .accepted = result.outcome { rows[owner, default: 0] += 1 }
                }
            }
        }
        let heads = try harness.cloud.logHeads()
        #expect(heads.map(\.app) == apps.filter { rows[$0] != nil }.sorted { $0.rawValue < $1.rawValue })
        for head in heads {
            #expect(head.rows == rows[head.app], "\(head.app)")
            #expect(head.hash.count == 32)
        }
        #expect(Set(heads.map(\.hash)).count == heads.count)
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
