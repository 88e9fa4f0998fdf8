import Foundation
import IndexModel
import SyncWire

/// One row of the cloud log as stored, with every field checked: what
/// `verifyLog`, a rebuild, `scanLog` and ingest's equivocation check decode,
/// whichever backend read it. A store is outside bytes like a frame: a row
/// someone edited is a `corruptLog` error naming the row and the field.
package struct StoredLogRow: Sendable {
    package let app: AppID
    /// The row's place in its app's chain, from 1.
    package let seq: Int64
    package let device: DeviceID
    package let epoch: Epoch
    package let firstSeq: OutboxSeq
    package let lastSeq: OutboxSeq
    package let acceptedFrom: OutboxSeq
    package let codec: Int64
    package let uncompressedLength: Int
    package let digest: [UInt8]
    package let payload: [UInt8]
    package let receivedAt: Timestamp

    /// Checks the values a backend read from a row: seqs and epoch are
    /// positions, the seqs a range of at most `WireLimits.maximumMessages`
    /// with `firstSeq ≤ acceptedFrom ≤ lastSeq`, and the uncompressed length
    /// at most `WireLimits.maximumPayloadBytes`.
    package init(app: AppID, seq: Int64, device: DeviceID, epoch: Int64, firstSeq: Int64, lastSeq: Int64, acceptedFrom: Int64, codec: Int64,
                 uncompressedLength: Int64, digest: [UInt8], payload: [UInt8], receivedAt: Int64) throws(CloudError) {
        func position(_ value: Int64, _ name: String) throws(CloudError) -> UInt64 {
            do {
                return try Stored.position(value, name)
            } catch {
                throw CloudError(.corruptLog, "app \(app) log seq \(seq): \(error.message)")
            }
        }
        self.app = app
        self.seq = seq
        self.device = device
        self.epoch = Epoch(try position(epoch, "epoch"))
        self.firstSeq = OutboxSeq(try position(firstSeq, "first_seq"))
        self.lastSeq = OutboxSeq(try position(lastSeq, "last_seq"))
        self.acceptedFrom = OutboxSeq(try position(acceptedFrom, "accepted_from"))
        guard self.firstSeq >= .first, self.firstSeq <= self.acceptedFrom, self.acceptedFrom <= self.lastSeq,
              self.firstSeq.count(through: self.lastSeq) <= WireLimits.maximumMessages else {
            throw CloudError(.corruptLog, """
                app \(app) log seq \(seq): seqs \(self.firstSeq)...\(self.lastSeq) accepted from \(self.acceptedFrom) are not a range of at most \
                \(WireLimits.maximumMessages) messages
                """)
        }
        self.codec = codec
        guard (0...Int64(WireLimits.maximumPayloadBytes)).contains(uncompressedLength) else {
            throw CloudError(.corruptLog, "app \(app) log seq \(seq): uncompressed_length \(uncompressedLength) is outside 0...\(WireLimits.maximumPayloadBytes)")
        }
        self.uncompressedLength = Int(uncompressedLength)
        self.digest = digest
        self.payload = payload
        self.receivedAt = Timestamp(millisecondsSince1970: receivedAt)
    }

    /// How many messages the row's frame carried.
    package var count: Int { firstSeq.count(through: lastSeq) }

    /// Of the row's `messages()`, those that were new when its frame was
    /// accepted: from `acceptedFrom` on.
    package func newMessages(of messages: [OutboxMessage]) -> ArraySlice<OutboxMessage> {
        messages[firstSeq.count(before: acceptedFrom)...]
    }

    /// The frame's payload uncompressed and checked against the digest (a
    /// purged row's residue as it is).
    package func plainPayload() throws(CloudError) -> [UInt8] {
        do {
            return try CloudLog.plain(codec: codec, uncompressedLength: uncompressedLength, payload: payload, digest: digest)
        } catch let error as CloudError {
            throw CloudError(.corruptLog, "app \(app) log seq \(seq): \(error.message)")
        } catch {
            throw CloudError(.corruptLog, "app \(app) log seq \(seq): \(error)")
        }
    }

    /// The frame's messages from `firstSeq`, checked against the digest.
    package func messages() throws(CloudError) -> [OutboxMessage] {
        do {
            return try CloudLog.messages(codec: codec, uncompressedLength: uncompressedLength, payload: payload,
                                         digest: digest, count: count)
        } catch let error as CloudError {
            throw CloudError(.corruptLog, "app \(app) log seq \(seq): \(error.message)")
        } catch {
            throw CloudError(.corruptLog, "app \(app) log seq \(seq): \(error)")
        }
    }
}
