import Foundation
import GRDB
import IndexModel
import SyncWire

/// The limits of what a cloud store holds, and the checked reading of its
/// rows. A store file is outside bytes like a frame: anyone who can write the
/// file can put a REAL, a NULL, a negative number or a string where a count
/// belongs, and nothing read from it may trap. Every number is read with
/// GRDB's throwing decoding or the checks below, and a value out of range is a
/// `corruptStore` (or, in the cloud log, `corruptLog`) error naming the table
/// and column (`docs/SECURITY.md`).
enum Stored {
    /// The largest count a projection holds (views, shown, engaged, votes):
    /// 2^53 − 1. Sums saturate here instead of overflowing, and a count stays
    /// exact as an `Int64`, a `Double` and a JSON number.
    static let maximumCount = Int64(PopularityRule.maximumCount)

    /// `value` as an epoch or seq: 0 through `WireLimits.maximumPosition`.
    static func position(_ value: Int64, _ what: @autoclosure () -> String) throws(CloudError) -> UInt64 {
        guard value >= 0, UInt64(value) <= WireLimits.maximumPosition else {
            throw CloudError(.corruptStore, "\(what()) is \(value), not a position between 0 and \(WireLimits.maximumPosition)")
        }
        return UInt64(value)
    }

    /// `value` as a count: 0 through `maximumCount`.
    static func count(_ value: Int64, _ what: @autoclosure () -> String) throws(CloudError) -> Int64 {
        guard (0...maximumCount).contains(value) else {
            throw CloudError(.corruptStore, "\(what()) is \(value), not a count between 0 and \(maximumCount)")
        }
        return value
    }

    /// Column `index` of `row`, decoded with GRDB's throwing decoding (which
    /// refuses a NULL where a value is required, or a REAL that is not a whole
    /// number where an integer is).
    static func column<Value: DatabaseValueConvertible>(_ row: Row, _ index: Int, _ what: @autoclosure () -> String,
                                                        as type: Value.Type = Value.self) throws(CloudError) -> Value {
        do {
            return try row.decode(Value.self, atIndex: index)
        } catch {
            throw CloudError(.corruptStore, "\(what()) cannot be read as \(Value.self): \(row[index] as DatabaseValue)")
        }
    }
}

/// One row of the cloud log as stored, read with every field checked: what
/// `verifyLog`, a rebuild, `scanLog` and ingest's equivocation check decode.
struct StoredLogRow {
    let seq: Int64
    let device: DeviceID
    let epoch: Epoch
    let firstSeq: OutboxSeq
    let lastSeq: OutboxSeq
    let acceptedFrom: OutboxSeq
    let codec: Int64
    let uncompressedLength: Int
    let digest: [UInt8]
    let payload: [UInt8]
    let receivedAt: Timestamp

    /// The columns `init(_:)` reads, in its order; a query may add more after them.
    static let columns = """
        seq, device, epoch, first_seq, last_seq, accepted_from, codec, uncompressed_length, digest, payload, received_at
        """

    /// Reads a row selected with `columns` first; throws `corruptLog` naming
    /// the row and the field when a value is missing, of the wrong type or out
    /// of range.
    init(_ row: Row) throws(CloudError) {
        let seq: Int64
        do {
            seq = try row.decode(Int64.self, atIndex: 0)
        } catch {
            throw CloudError(.corruptLog, "a cloud log row has no integer seq")
        }
        func field<Value: DatabaseValueConvertible>(_ index: Int, _ name: String) throws(CloudError) -> Value {
            do {
                return try Stored.column(row, index, name)
            } catch {
                throw CloudError(.corruptLog, "log seq \(seq): \(error.message)")
            }
        }
        func position(_ index: Int, _ name: String) throws(CloudError) -> UInt64 {
            do {
                return try Stored.position(field(index, name), name)
            } catch {
                throw CloudError(.corruptLog, error.code == .corruptLog ? error.message : "log seq \(seq): \(error.message)")
            }
        }
        self.seq = seq
        device = try field(1, "device")
        epoch = Epoch(try position(2, "epoch"))
        firstSeq = OutboxSeq(try position(3, "first_seq"))
        lastSeq = OutboxSeq(try position(4, "last_seq"))
        acceptedFrom = OutboxSeq(try position(5, "accepted_from"))
        guard firstSeq >= .first, firstSeq <= acceptedFrom, acceptedFrom <= lastSeq,
              firstSeq.count(through: lastSeq) <= WireLimits.maximumMessages else {
            throw CloudError(.corruptLog, """
                log seq \(seq): seqs \(firstSeq)...\(lastSeq) accepted from \(acceptedFrom) are not a range of at most \
                \(WireLimits.maximumMessages) messages
                """)
        }
        codec = try field(6, "codec")
        let length: Int64 = try field(7, "uncompressed_length")
        guard (0...Int64(WireLimits.maximumPayloadBytes)).contains(length) else {
            throw CloudError(.corruptLog, "log seq \(seq): uncompressed_length \(length) is outside 0...\(WireLimits.maximumPayloadBytes)")
        }
        uncompressedLength = Int(length)
        digest = [UInt8](try field(8, "digest") as Data)
        payload = [UInt8](try field(9, "payload") as Data)
        receivedAt = Timestamp(millisecondsSince1970: try field(10, "received_at"))
    }

    /// How many messages the row's frame carried.
    var count: Int { firstSeq.count(through: lastSeq) }

    /// Of the row's `messages()`, those that were new when its frame was
    /// accepted: from `acceptedFrom` on.
    func newMessages(of messages: [OutboxMessage]) -> ArraySlice<OutboxMessage> {
        messages[firstSeq.count(before: acceptedFrom)...]
    }

    /// The frame's messages from `firstSeq`, checked against the digest.
    func messages() throws(CloudError) -> [OutboxMessage] {
        do {
            return try CloudLog.messages(codec: codec, uncompressedLength: uncompressedLength, payload: payload,
                                         digest: digest, count: count)
        } catch let error as CloudError {
            throw CloudError(.corruptLog, "log seq \(seq): \(error.message)")
        } catch {
            throw CloudError(.corruptLog, "log seq \(seq): \(error)")
        }
    }
}
