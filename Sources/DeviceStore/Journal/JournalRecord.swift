import Crypto
import Foundation
import IndexModel

/// One row of the event journal as stored: the event's position, the call that
/// appended it, its time, its encoded payload, and the hash chain links.
public struct JournalRecord: Hashable, Sendable {
    public let seq: Seq
    public let epoch: Epoch
    public let call: CallID
    public let kind: UInt8
    public let time: Timestamp
    public let payload: [UInt8]
    public let previousHash: ChainHash
    public let hash: ChainHash

    public init(seq: Seq, epoch: Epoch, call: CallID, kind: UInt8, time: Timestamp, payload: [UInt8],
                previousHash: ChainHash, hash: ChainHash) {
        self.seq = seq
        self.epoch = epoch
        self.call = call
        self.kind = kind
        self.time = time
        self.payload = payload
        self.previousHash = previousHash
        self.hash = hash
    }

    /// Decodes the payload, checking that the kind column agrees with it.
    public func event() throws(DeviceStoreError) -> JournalEvent {
        let event: JournalEvent
        do {
            event = try EventCodec.decode(payload)
        } catch {
            throw DeviceStoreError(.corruptJournal, "seq \(seq): payload does not decode: \(error)", seq: seq)
        }
        guard event.kind.rawValue == kind else {
            throw DeviceStoreError(.corruptJournal,
                                   "seq \(seq): kind column says \(kind) but the payload is \(event.kind.name)", seq: seq)
        }
        return event
    }
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

    /// The hash of a row: SHA-256 over the previous hash, then epoch, seq, call and
    /// time as 8-byte big-endian integers, then the payload (`Journal/FORMAT.md`).
    public static func of(previous: ChainHash, epoch: Epoch, seq: Seq, call: CallID, time: Timestamp,
                          payload: [UInt8]) -> ChainHash {
        // This runs once per journaled event and once per row a verification
        // reads, so the input is laid out in one temporary buffer (on the
        // stack when small) and hashed in one call: every `update` of
        // swift-crypto's `SHA256` adds bookkeeping of its own, and
        // `Array(digest)` would copy the digest byte by byte.
        let words = (epoch.rawValue.bigEndian, seq.rawValue.bigEndian, call.rawValue.bigEndian,
                     UInt64(bitPattern: time.millisecondsSince1970).bigEndian)
        let wordBytes = MemoryLayout.size(ofValue: words)
        let count = previous.bytes.count + wordBytes + payload.count
        let digest = withUnsafeTemporaryAllocation(byteCount: count, alignment: 8) { input in
            var offset = 0
            func append(_ bytes: UnsafeRawBufferPointer) {
                UnsafeMutableRawBufferPointer(rebasing: input[offset..<offset + bytes.count]).copyMemory(from: bytes)
                offset += bytes.count
            }
            previous.bytes.withUnsafeBytes(append)
            withUnsafeBytes(of: words, append)
            payload.withUnsafeBytes(append)
            return SHA256.hash(data: UnsafeRawBufferPointer(input))
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
