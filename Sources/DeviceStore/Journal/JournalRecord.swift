import Crypto
import Foundation
import IndexModel

/// One row of the event journal as stored: the event's position, the call that
/// appended it, its time, its encoded payload, and the hash chain links.
///
/// A purged row (`purgedPayloadHash` set) holds the event's residue in
/// `payload`: the same event with its content taken out
/// (`JournalEvent.purgedResidue`). The chain covers the SHA-256 of the payload
/// the row was appended with, which the row keeps.
public struct JournalRecord: Hashable, Sendable {
    public let seq: Seq
    public let epoch: Epoch
    public let call: CallID
    public let kind: UInt8
    public let time: Timestamp
    public let payload: [UInt8]
    public let previousHash: ChainHash
    public let hash: ChainHash
    /// The SHA-256 of the payload the row was appended with, when that payload was purged.
    public let purgedPayloadHash: ChainHash?

    public init(seq: Seq, epoch: Epoch, call: CallID, kind: UInt8, time: Timestamp, payload: [UInt8],
                previousHash: ChainHash, hash: ChainHash, purgedPayloadHash: ChainHash? = nil) {
        self.seq = seq
        self.epoch = epoch
        self.call = call
        self.kind = kind
        self.time = time
        self.payload = payload
        self.previousHash = previousHash
        self.hash = hash
        self.purgedPayloadHash = purgedPayloadHash
    }

    public var isPurged: Bool { purgedPayloadHash != nil }

    /// The row's hash as `chain` computes it from the row's other columns.
    func recomputedHash(_ chain: JournalChain) -> ChainHash {
        switch chain {
        case .overPayloads:
            return ChainHash.overPayload(previous: previousHash, epoch: epoch, seq: seq, call: call, time: time, payload: payload)
        case .overPayloadHashes:
            return ChainHash.of(previous: previousHash, epoch: epoch, seq: seq, call: call, time: time, kind: kind,
                                payloadHash: purgedPayloadHash ?? ChainHash.ofPayload(payload))
        }
    }

    /// Decodes the payload, checking that the kind column agrees with it.
    public func event() throws(DeviceStoreError) -> JournalEvent {
        let event: JournalEvent
        do {
            event = try EventCodec.decode(payload)
        } catch {
            throw DeviceStoreError(.corruptJournal, "seq \(seq): payload does not decode: \(error)", seq: seq)
        }
        // A purged recording keeps its row's kind; its payload is the residue's.
        let residueOfItsKind = isPurged && kind == EventKind.activityRecorded.rawValue && event.kind == .activityPurged
        guard event.kind.rawValue == kind || residueOfItsKind else {
            throw DeviceStoreError(.corruptJournal,
                                   "seq \(seq): kind column says \(kind) but the payload is \(event.kind.name)", seq: seq)
        }
        return event
    }
}

/// How a store chains its journal rows (`Journal/FORMAT.md`, "Journal hash chain").
public enum JournalChain: Sendable {
    /// Store formats 1 to 4: each row's hash covers its payload.
    case overPayloads
    /// Store format 5 on: each row's hash covers its kind and the SHA-256 of
    /// its payload, so a row whose payload was purged still verifies.
    case overPayloadHashes
}

/// A SHA-256 link of the journal's hash chain.
public struct ChainHash: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init?(_ bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        self.bytes = bytes
    }

    /// The link before the first row.
    public static let genesis = ChainHash(unchecked: [UInt8](repeating: 0, count: 32))

    init(unchecked bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The hash of a row (`Journal/FORMAT.md`, "Journal hash chain"):
    /// SHA-256 over the previous hash, then epoch, seq, call and time as
    /// 8-byte big-endian integers, the kind byte, and the SHA-256 of the
    /// payload (`ofPayload`). Chaining the payload's hash rather than the
    /// payload lets a purged row, which keeps only that hash, still verify.
    public static func of(previous: ChainHash, epoch: Epoch, seq: Seq, call: CallID, time: Timestamp, kind: UInt8,
                          payloadHash: ChainHash) -> ChainHash {
        hashed(previous: previous, epoch: epoch, seq: seq, call: call, time: time) { append in
            withUnsafeBytes(of: kind, append)
            payloadHash.bytes.withUnsafeBytes(append)
        }
    }

    /// The SHA-256 of a row's payload, as the chain takes it.
    public static func ofPayload(_ payload: [UInt8]) -> ChainHash {
        let digest = payload.withUnsafeBytes { SHA256.hash(data: $0) }
        return ChainHash(unchecked: digest.withUnsafeBytes { Array($0) })
    }

    /// The hash of a row of a store of format 1 to 4, which chained the
    /// payload itself after the time: what a migration to format 5 checks
    /// before it chains the rows again, and what a read-only open of such a
    /// store verifies.
    public static func overPayload(previous: ChainHash, epoch: Epoch, seq: Seq, call: CallID, time: Timestamp,
                                   payload: [UInt8]) -> ChainHash {
        hashed(previous: previous, epoch: epoch, seq: seq, call: call, time: time, extra: payload.count) { append in
            payload.withUnsafeBytes(append)
        }
    }

    /// SHA-256 over the previous hash, the four position words, then what
    /// `rest` appends: at most `extra` bytes (the kind and a payload hash by default).
    private static func hashed(previous: ChainHash, epoch: Epoch, seq: Seq, call: CallID, time: Timestamp, extra: Int = 33,
                               _ rest: ((UnsafeRawBufferPointer) -> Void) -> Void) -> ChainHash {
        // This runs once per journaled event and once per row a verification
        // reads, so the input is laid out in one temporary buffer (on the
        // stack when small) and hashed in one call: every `update` of
        // swift-crypto's `SHA256` adds bookkeeping of its own, and
        // `Array(digest)` would copy the digest byte by byte.
        let words = (epoch.rawValue.bigEndian, seq.rawValue.bigEndian, call.rawValue.bigEndian,
                     UInt64(bitPattern: time.millisecondsSince1970).bigEndian)
        let wordBytes = MemoryLayout.size(ofValue: words)
        let capacity = previous.bytes.count + wordBytes + extra
        let digest = withUnsafeTemporaryAllocation(byteCount: capacity, alignment: 8) { input in
            var offset = 0
            func append(_ bytes: UnsafeRawBufferPointer) {
                UnsafeMutableRawBufferPointer(rebasing: input[offset..<offset + bytes.count]).copyMemory(from: bytes)
                offset += bytes.count
            }
            previous.bytes.withUnsafeBytes(append)
            withUnsafeBytes(of: words, append)
            rest(append)
            return SHA256.hash(data: UnsafeRawBufferPointer(rebasing: input[0..<offset]))
        }
        return ChainHash(unchecked: digest.withUnsafeBytes { Array($0) })
    }

    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var characters = [UInt8]()
        characters.reserveCapacity(64)
        for byte in bytes {
            characters.append(digits[Int(byte >> 4)])
            characters.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: characters, as: UTF8.self)
    }

    public var description: String { hex }
}
