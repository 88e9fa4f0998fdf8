// Fuzz target device-store-file: the input is a store file, opened read-only
// and verified as `sightline journal verify --db FILE` does: a device store's
// journal chain and events (purged rows included, which it also reads as a
// purge and a restore do), then its projections against a rebuild; a cloud
// store's log and its projections against a replay of it.
//
// Every failure must be a typed error (the APIs' typed throws hold that); no
// file may trap.
import CloudIndex
import DeviceStore
import Foundation
import IndexModel

enum Target {
    static let clock = ManualClock(Stores.start)

    static func run(_ bytes: [UInt8]) {
        let path = scratchDirectory + "/store.sqlite"
        removeStoreFiles(path)
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
            fatalError("fuzz: cannot write \(path)")
        }
        if CloudIndex.isCloudStore(at: path) {
            guard let cloud = try? CloudIndex(at: .file(path), options: CloudOptions(clock: clock, readOnly: true)),
                  let verification = try? cloud.verifyLog(), verification.isValid else { return }
            _ = try? cloud.projectionDigest()
            _ = try? cloud.rebuiltProjectionDigest()
        } else {
            guard let store = try? DeviceStore(at: .file(path), options: StoreOptions(clock: clock, readOnly: true)) else { return }
            // What a purge and a restore read of purged rows, whether or not the journal verifies.
            _ = try? store.purge(dryRun: true)
            _ = try? store.purgedPayloadHashes()
            guard let verification = try? store.verifyJournal(), verification.isValid else { return }
            _ = try? store.projectionDigest()
            _ = try? store.rebuiltProjectionDigest()
        }
    }

    /// An empty device store, one with a few calls, one with purged rows, and a cloud store with a few frames.
    static func seeds() throws -> [(String, [UInt8])] {
        let path = scratchDirectory + "/seed.sqlite"
        var seeds: [(String, [UInt8])] = []
        for (name, operations) in [("device-empty", 0), ("device-small", 12)] {
            try Stores.deviceStore(at: path, operations: operations)
            try Stores.compact(path)
            seeds.append((name, try Stores.contents(path)))
        }
        try Stores.purgedDeviceStore(at: path)
        try Stores.compact(path)
        seeds.append(("device-purged", try Stores.contents(path)))
        try Stores.cloudStore(at: path)
        try Stores.compact(path)
        seeds.append(("cloud-small", try Stores.contents(path)))
        return seeds
    }
}
