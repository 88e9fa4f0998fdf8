import CloudCore
import IndexModel
import IndexQuery
import SyncWire

/// One message of the cloud log as `journal grep` asks about it: the row's
/// fields (app, row, device, epoch, time), the message's position and kind,
/// and the fields `journal export` prints for it.
///
/// | name | value |
/// |---|---|
/// | app, device | the row's app and device |
/// | row | the row's place in its app's log (a number) |
/// | epoch, seq | the message's position (numbers) |
/// | time | when the cloud accepted the frame (a date) |
/// | kind | vote, withdraw, signal, content, page, report, reindexAsk, contentPurged, contentWithheld |
/// | hash | the public hash, 64 hex digits |
/// | new | whether the message was new when its frame came (false: held already, not folded again) |
/// | token, views, shown, engaged, type, title, keywords, description, url, … | the message's own fields |
struct CloudMessageSubject: QuerySubject {
    let record: CloudLogRecord
    let seq: OutboxSeq
    let message: OutboxMessage
    /// The message's fields as `journal export` prints them.
    let fields: JSONObject

    static let rowFieldNames = ["app", "row", "device", "epoch", "seq", "time", "kind", "hash", "new"]
    /// Every name a message may carry, of every kind.
    static let messageFieldNames = [
        "token", "views", "shown", "engaged", "type", "title", "keywords", "description", "url", "image", "deepLink",
        "appStoreID", "pageType", "rating", "ratingCount", "price", "epsilon", "hashes", "buckets", "function", "positive",
        "after", "purgedContentDigest",
    ]

    init(record: CloudLogRecord, seq: OutboxSeq, message: OutboxMessage) {
        self.record = record
        self.seq = seq
        self.message = message
        if case .object(let object) = message.jsonValue { fields = object } else { fields = [:] }
    }

    var isNew: Bool { seq >= record.acceptedFrom }

    func value(of attribute: String) -> AttributeValue? {
        switch attribute {
        case "app": return .string(record.app.rawValue)
        case "row": return .number(Double(record.seq))
        case "device": return .string(record.device.rawValue)
        case "epoch": return .number(Double(record.epoch.rawValue))
        case "seq": return .number(Double(seq.rawValue))
        case "time": return .date(record.receivedAt)
        case "new": return .bool(isNew)
        default: return fields[attribute].flatMap(Self.attributeValue)
        }
    }

    func values(includingContent: Bool) -> [AttributeValue] {
        fields.members.filter { $0.key != "kind" && $0.key != "hash" && $0.key != "token" }.compactMap { Self.attributeValue($0.value) }
    }

    private static func attributeValue(_ value: JSONValue) -> AttributeValue? {
        switch value {
        case .string(let text): .string(text)
        case .integer(let number): .number(Double(number))
        case .double(let number): .number(number)
        case .bool(let flag): .bool(flag)
        case .array(let values): .strings(values.compactMap(\.stringValue))
        default: nil
        }
    }

    var jsonValue: JSONValue {
        var object = fields
        object["app"] = .string(record.app.rawValue)
        object["row"] = .integer(record.seq)
        object["device"] = .string(record.device.rawValue)
        object["epoch"] = .integer(Int64(clamping: record.epoch.rawValue))
        object["seq"] = .integer(Int64(clamping: seq.rawValue))
        object["time"] = .string(record.receivedAt.description)
        object["new"] = .bool(isNew)
        return .object(object)
    }

    var line: String {
        "app \(TextRule.printable(record.app.rawValue))  row \(record.seq)  device \(TextRule.printable(record.device.rawValue))  "
            + "\(record.epoch):\(seq)  \(record.receivedAt)  \(message.kindName)" + (message.hash.map { "  \($0.hex)" } ?? "")
            + (isNew ? "" : "  (held already)")
    }
}
