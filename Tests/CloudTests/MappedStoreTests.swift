import CloudCore
@testable import CloudSQLite
import DeviceStore
import Foundation
import GRDB
import IndexModel
import Testing

/// A store read through a memory map (`CloudOptions.mapBytes`, the
/// simulator's cloud) keeps a small page cache, so reads past it come from
/// the map and the write-ahead log: it must end exactly as a store read
/// through its cache, and open again the same.
@Suite struct MappedStoreTests {
    /// Devices that vote on recipes of their own and engage with them,
    /// synced in rounds: enough rows that splits renumber pages through the
    /// lock-byte page (six times in each store here), after which a commit
    /// drops what the cache holds past the file's end.
    private func run(_ harness: SyncHarness, devices: Int, rounds: Int) throws {
        let stores = try (0..<devices).map { _ in try harness.addDevice() }
        for round in 0..<rounds {
            for (number, store) in stores.enumerated() {
                let url = "https://www.yummly.com/recipe/mapped-\(number)-\(round)"
                try store.record(publicRecipe(url: url, id: "r\(round)"))
                try store.recordEngaged(ref: url)
                try store.recordShown(ref: recipeURL)
                try harness.sync(store)
            }
            harness.clock.advance(byMilliseconds: 60_000)
        }
    }

    private func mapSize(_ cloud: CloudIndex) throws -> Int {
        try cloud.queue.read { db in try Int.fetchOne(db, sql: "PRAGMA mmap_size") ?? 0 }
    }

    @Test func aStoreReadThroughAMapEndsAndOpensAgainAsOneReadThroughItsCache() throws {
        let directory = try temporaryDirectory("sightline-mapped")
        defer { try? FileManager.default.removeItem(at: directory) }
        let mappedPath = directory.appendingPathComponent("mapped.sqlite").path
        let cachedPath = directory.appendingPathComponent("cached.sqlite").path
        let digest: String
        do {
            let mapped = try SyncHarness(location: .file(mappedPath), mapBytes: 1 << 30)
            let cached = try SyncHarness(location: .file(cachedPath))
            try run(mapped, devices: 40, rounds: 6)
            try run(cached, devices: 40, rounds: 6)
            #expect(try mapSize(mapped.sqlite) == 1 << 30)
            #expect(try mapSize(cached.sqlite) == 0)
            digest = try mapped.cloud.projectionDigest()
            #expect(try cached.cloud.projectionDigest() == digest)
            #expect(try mapped.cloud.rebuiltProjectionDigest() == digest)
            #expect(try mapped.cloud.verifyLog().isValid)
            #expect(try mapped.cloud.logHeads() == cached.cloud.logHeads())
        }
        let reopened = try CloudIndex(at: .file(mappedPath), options: CloudOptions(mapBytes: 1 << 30))
        #expect(try reopened.projectionDigest() == digest)
        #expect(try reopened.verifyLog().isValid)
    }
}
