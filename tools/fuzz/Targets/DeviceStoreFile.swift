// Fuzz target device-store-file: the input is a store file, opened read-only
// and verified as `sightline journal verify --db FILE` does: a device store's
// journal chain and events (purged rows included, which it also reads as a
// purge and a restore do), its projections against a rebuild, and every
// reader of its projections and search index (search, query, items,
// activities, votes, outbox); then opened for writing, its search index
// brought up to the journal and one call folded into it, as the next search
// and the next call do. A cloud store: its log and its projections against a
// replay of it.
//
// Every failure must be a typed error (the APIs' typed throws hold that); no
// file may trap.
import CloudCore
import CloudSQLite
import DeviceStore
import Foundation
import IndexModel
import IndexQuery

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
            do {
                guard let store = try? DeviceStore(at: .file(path), options: StoreOptions(clock: clock, readOnly: true)) else { return }
                // What a purge and a restore read of purged rows, whether or not the journal verifies.
                _ = try? store.purge(dryRun: true)
                _ = try? store.purgedPayloadHashes()
                read(store)
                if let verification = try? store.verifyJournal(), verification.isValid {
                    _ = try? store.projectionDigest()
                    _ = try? store.rebuiltProjectionDigest()
                }
            }
            // What a search and the next call do with the file, which fold it into the search index.
            guard let store = try? DeviceStore(at: .file(path), options: StoreOptions(clock: clock)) else { return }
            _ = try? store.refreshSearchIndex()
            read(store)
            _ = try? store.index(named: "notes").indexSearchableItems([
                SearchableItem(uniqueIdentifier: "fuzz", attributes: AttributeSet([.title: .string("a page of notes")])),
            ])
            _ = try? store.search("page no")
        }
    }

    /// Every reader of the projections and the search index a user reaches from the command line.
    static func read(_ store: DeviceStore) {
        for text in ["a", "page", "private kept", "visit "] { _ = try? store.search(text, explain: true) }
        if let query = try? QueryParser.parse("title == \"*\" || contentDescription == \"p*\"cd") { _ = try? store.query(query) }
        for index in (try? store.indexNames()) ?? [] { _ = try? store.items(in: index) }
        _ = try? store.activities()
        _ = try? store.liveVotes()
        _ = try? store.engagement(ref: "https://example.com/a")
        _ = try? store.pendingReindexRequests()
        _ = try? store.outboxEntries()
        _ = try? store.privacyLedger()
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
