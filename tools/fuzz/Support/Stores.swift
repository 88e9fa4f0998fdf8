// Store files for the targets that link the store modules (device-store-file,
// snapshot-restore, ingest): made by the project's own code, as a device and
// the cloud make them. Compiled into those targets' binaries by tools/fuzz/run.
import CloudCore
import CloudSQLite
import DeviceStore
import Foundation
import GRDB
import IndexModel
import SyncWire
import Workloads

enum Stores {
    static let start = Timestamp(millisecondsSince1970: 1_795_000_000_000)
    static let app = StoreOptions.defaultApp
    static let enrolmentSecret = "fuzz-enrolment-secret"

    /// A device store file at `path` written by `operations` calls of the
    /// synthetic workload and one public activity. Seeds get `compact(_:)`.
    static func deviceStore(at path: String, operations: Int) throws {
        removeStoreFiles(path)
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(start), random: SeededRandom(seed: 1),
                                                                          durability: .normal))
        var options = SyntheticWorkload.Options()
        options.itemsPerIndex = 3
        var workload = SyntheticWorkload(seed: 2, options: options)
        for _ in 0..<operations { _ = try? store.perform(workload.nextOperation()) }
        if operations > 0 {
            _ = try store.record(UserActivity(activityType: "com.example.read", title: "A page", keywords: ["page"],
                                              webpageURL: "https://example.com/a", eligibleForSearch: true,
                                              eligibleForPublicIndexing: true))
            try store.recordEngaged(ref: "https://example.com/a")
            _ = try store.refreshSearchIndex()
        }
    }

    /// A device store file at `path` whose journal has purged rows: two
    /// notes indexed, the first updated and deleted, a private activity
    /// shown, engaged with and deleted, a backup snapshot beside it, then a
    /// purge (`DeviceStore.purge`), which leaves the activity's residue and
    /// pseudonyms.
    static func purgedDeviceStore(at path: String) throws {
        removeStoreFiles(path)
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(start), random: SeededRandom(seed: 4),
                                                                          durability: .normal))
        let notes = store.index(named: "notes")
        _ = try notes.indexSearchableItems([SearchableItem(uniqueIdentifier: "n1", attributes: AttributeSet([.title: .string("private")])),
                                            SearchableItem(uniqueIdentifier: "n2", attributes: AttributeSet([.title: .string("kept")]))])
        var change = AttributeChanges()
        change[.title] = .some(.string("private, revised"))
        _ = try notes.updateSearchableItems([ItemUpdate(uniqueIdentifier: "n1", attributes: change)])
        _ = try notes.deleteSearchableItems(withIdentifiers: ["n1"])
        _ = try store.record(UserActivity(activityType: "com.example.visit", title: "private visit", keywords: ["visit"],
                                          userInfo: ["who": "someone"], webpageURL: "https://example.com/private",
                                          eligibleForSearch: true, relatedUniqueIdentifier: "n2"))
        try store.recordShown(ref: "https://example.com/private")
        try store.recordEngaged(ref: "https://example.com/private")
        _ = try store.perform(.deleteAllActivities)
        let backup = path + ".backup"
        try store.snapshot(to: backup)
        removeStoreFiles(backup)
        _ = try store.purge()
    }

    /// A cloud store file at `path` with two enrolled devices and a few frames
    /// of votes, a signal, content and a private report, its app's popularity
    /// ldp (so `apps.popularity`, `sketch_cells` and `report_allowances` have
    /// rows).
    static func cloudStore(at path: String) throws {
        removeStoreFiles(path)
        let cloud = try CloudIndex(at: .file(path), options: CloudOptions(clock: ManualClock(start), random: SeededRandom(seed: 3),
                                                                          threshold: 2, durability: .normal))
        try cloud.registerApp(app, enrolmentSecret: enrolmentSecret)
        let settings = try PrivatePopularity(epsilonThousandths: 2_000, dailyBudgetThousandths: 8_000, hashes: 4, buckets: 8)
        try cloud.setPopularity(.ldp(settings), app: app)
        let content = PublicContent(activityType: "com.example.read", title: "A page", keywords: ["page"],
                                    contentDescription: nil, webpageURL: "https://example.com/a")
        let hash = PublicHash.of(app: app, content: content)!
        for device in [DeviceID("phone-1"), DeviceID("phone-2")] {
            let key = try cloud.enrol(app: app, device: device, enrolmentSecret: enrolmentSecret)
            let token = VoteToken([UInt8](repeating: UInt8(device.rawValue.utf8.last!), count: VoteToken.byteCount))!
            let report = PrivateReport(settings: settings, function: 1, row: device == DeviceID("phone-1") ? 3 : 5, positive: true)
            let messages: [OutboxMessage] = [.vote(hash, token), .signal(hash, Popularity(views: 2, shown: 3, engaged: 1)),
                                             .content(hash, content), .report(report)]
            let records = zip(sequence(first: OutboxSeq.first) { $0.next }, messages).map {
                OutboxRecord(position: OutboxPosition(epoch: .first, seq: $0), message: $1)
            }
            _ = cloud.ingest(UploadFrame(app: app, device: device, records: records, key: key).encoded)
        }
    }

    /// Rewrites the file at `path` with 1 KiB pages and a rollback journal, so
    /// a seed is small and a read-only open needs no WAL beside it.
    static func compact(_ path: String) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA journal_mode = DELETE")
            try db.execute(sql: "PRAGMA page_size = 1024")
            try db.execute(sql: "VACUUM")
        }
        try queue.close()
    }

    static func contents(_ path: String) throws -> [UInt8] {
        try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
    }
}
