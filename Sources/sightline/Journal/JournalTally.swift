import DeviceStore
import IndexModel

/// What `journal stats` and `snapshot inspect` count of a device journal,
/// one record at a time.
struct JournalTally {
    var events = 0
    var calls = Set<UInt64>()
    var epochs = Set<Epoch>()
    var first: Timestamp?
    var last: Timestamp?
    var lastHash: ChainHash?
    var purged = 0
    var byKind: [String: Int] = [:]

    mutating func add(_ record: JournalRecord) {
        events += 1
        calls.insert(record.call.rawValue)
        epochs.insert(record.epoch)
        if first == nil { first = record.time }
        last = record.time
        lastHash = record.hash
        if record.isPurged { purged += 1 }
        byKind[(try? record.event().kind.name) ?? "undecodable", default: 0] += 1
    }

    /// The events by kind, in kind order.
    var byKindJSON: JSONObject {
        var kinds = JSONObject()
        for (kind, count) in byKind.sorted(by: { $0.key < $1.key }) { kinds[kind] = .integer(Int64(count)) }
        return kinds
    }

    var epochsJSON: JSONValue { .array(epochs.sorted().map { .integer(Int64(clamping: $0.rawValue)) }) }
}
