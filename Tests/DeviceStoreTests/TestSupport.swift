import DeviceStore
import Foundation
import GRDB
import IndexModel
import ScratchDirectory
import Testing

let testStart = ISO8601.parse("2026-11-22T00:00:00Z")!

/// The calls a store makes in round `round` of a test that drives two
/// stores alike: a note, a public activity, its engagement, an edit and a
/// delete. `owner` tells apart the notes of stores that must differ.
func roundCalls(_ round: Int, owner: String = "") -> [AppOperation] {
    let url = "https://example.com/\(owner.isEmpty ? "" : owner.replacingOccurrences(of: " ", with: "-") + "/")recipe/\(round)"
    let title = owner.isEmpty ? "Note \(round)" : "Note \(round) of \(owner)"
    return [
        .index(index: "notes", items: [item("n\(round)", domain: "notes.f\(round % 3)", title: title)]),
        .activity(UserActivity(activityType: "com.example.recipe", title: "Recipe \(round)", webpageURL: url,
                               eligibleForSearch: true, eligibleForPublicIndexing: true, persistentIdentifier: "r\(round)")),
        .engage(ref: url),
        .shown(ref: url),
        .update(index: "notes", updates: [ItemUpdate(uniqueIdentifier: "n\(round)",
                                                     attributes: AttributeChanges([.title: .string("\(title) edited")]))]),
        .delete(index: "notes", identifiers: ["n\(max(0, round - 2))"]),
    ]
}

/// What a user and the sync would see of a store.
func observableState(_ store: DeviceStore) throws -> [String] {
    [try store.projectionDigest(), "\(try store.outboxEntries())", "\(try store.syncStatus())",
     "\(try store.resultTitles("note"))", "\(try store.verifyJournal().head)", store.deviceID.rawValue]
}

/// An in-memory store on a manual clock with a seeded random source.
func makeStore(seed: UInt64 = 1, clock: ManualClock = ManualClock(testStart)) throws -> DeviceStore {
    try DeviceStore(at: .memory, options: StoreOptions(clock: clock, random: SeededRandom(seed: seed)))
}

func item(_ identifier: String, domain: String? = nil, title: String? = nil, description: String? = nil,
          keywords: [String]? = nil, url: String? = nil, expires: Timestamp? = nil) -> SearchableItem {
    var attributes = AttributeSet()
    attributes.title = title
    attributes.contentDescription = description
    attributes.keywords = keywords
    attributes.contentURL = url
    return SearchableItem(uniqueIdentifier: identifier, domainIdentifier: domain, attributes: attributes,
                          expirationDate: expires)
}

/// Every byte of the store file at `path` and its WAL.
func fileBytes(_ path: String) throws -> Data {
    var bytes = Data()
    for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: path + suffix) {
        bytes += try Data(contentsOf: URL(fileURLWithPath: path + suffix))
    }
    return bytes
}

/// A fresh directory under the system's temporary directory, removed when the tests end.
func temporaryDirectory() throws -> URL {
    try ScratchDirectory.make("sightline-tests")
}

extension DeviceStore {
    func identifiers(in index: String) throws -> [String] {
        try items(in: index).map(\.uniqueIdentifier)
    }

    func resultTitles(_ text: String) throws -> [String?] {
        try search(text).map(\.title)
    }
}

/// Rewrites the store at `path` as format 4 and older kept its journal:
/// chained over payloads, without the purge column. (The older formats'
/// other tables are each test's own to take away.)
func chainAsBeforeFormat5(_ path: String) throws {
    try DatabaseQueue(path: path).write { db in
        var previous = ChainHash.genesis
        let rows = try Row.fetchAll(db, sql: "SELECT seq, epoch, call, time, payload FROM event_journal ORDER BY seq")
        for row in rows {
            let seq: Int64 = row[0]
            let epoch: Int64 = row[1]
            let call: Int64 = row[2]
            let time: Int64 = row[3]
            let payload: Data = row[4]
            let hash = ChainHash.overPayload(previous: previous, epoch: Epoch(UInt64(epoch)), seq: Seq(UInt64(seq)),
                                             call: CallID(UInt64(call)), time: Timestamp(millisecondsSince1970: time),
                                             payload: [UInt8](payload))
            try db.execute(sql: "UPDATE event_journal SET prev_hash = ?, hash = ? WHERE seq = ?",
                           arguments: [Data(previous.bytes), Data(hash.bytes), seq])
            previous = hash
        }
        try db.execute(sql: "ALTER TABLE event_journal DROP COLUMN purged_payload_hash")
        try db.execute(sql: "UPDATE store_meta SET value = 4 WHERE key = 'format_version'")
    }
}

/// The `DeviceStoreError` that `body` throws; an issue is recorded when it
/// throws nothing or another error.
func storeError(sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) -> DeviceStoreError? {
    do {
        try body()
    } catch let error as DeviceStoreError {
        return error
    } catch {
        Issue.record("expected a DeviceStoreError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
    Issue.record("expected a DeviceStoreError, but nothing was thrown", sourceLocation: sourceLocation)
    return nil
}
