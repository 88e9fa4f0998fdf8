import IndexModel

/// A frame's payload: the frame's distinct public hashes once, then each
/// message with its hash given as an index into them, except a report, which
/// has none, nor a reindex ask (`Journal/FORMAT.md`, "Frame payload"). Most messages of a busy device are signals for a few
/// popular hashes, so this carries each 32-byte hash once per frame instead of
/// once per message, and decoding shares one copy of each hash.
public enum FramePayload {
    /// The payload for messages given in their standalone encoding (tag, hash,
    /// fields), as the outbox stores them.
    public static func encode(_ standalone: [[UInt8]]) -> [UInt8] {
        var indexes: [ArraySlice<UInt8>: Int] = [:]
        var hashes: [ArraySlice<UInt8>] = []
        var body = BinaryWriter(capacity: standalone.count * 8)
        for message in standalone {
            if let tag = message.first, OutboxMessage.isHashless(tag) {
                body.raw(message)
                continue
            }
            precondition(message.count > PublicHash.byteCount, "an outbox message is a tag, a hash and fields")
            let hash = message[1...PublicHash.byteCount]
            let index: Int
            if let known = indexes[hash] {
                index = known
            } else {
                index = hashes.count
                indexes[hash] = index
                hashes.append(hash)
            }
            body.byte(message[0])
            body.uvarint(UInt64(index))
            body.raw(message[(PublicHash.byteCount + 1)...])
        }
        var writer = BinaryWriter(capacity: 10 + hashes.count * PublicHash.byteCount + body.bytes.count)
        writer.uvarint(UInt64(hashes.count))
        for hash in hashes { writer.raw(hash) }
        writer.raw(body.bytes)
        return writer.bytes
    }

    /// The hashes the payload lists, in their order, as slices of it; throws
    /// when it does not start with a count of hashes and that many hashes.
    public static func listedHashes(_ payload: [UInt8]) throws(CodecError) -> [ArraySlice<UInt8>] {
        try table(payload).hashes
    }

    /// The listed hashes and the offset where the messages begin; at most
    /// `limit` hashes, refused before any is read.
    private static func table(_ payload: [UInt8], limit: Int = .max) throws(CodecError) -> (hashes: [ArraySlice<UInt8>], end: Int) {
        var reader = BinaryReader(payload)
        let count = try reader.uvarint()
        guard count <= UInt64(limit) else {
            throw CodecError(.limitExceeded, at: 0, "\(count) hashes for \(limit) messages")
        }
        guard count <= UInt64(reader.remaining / PublicHash.byteCount) else {
            throw CodecError(.truncated, at: 0, "the payload lists \(count) hashes but holds \(reader.remaining) bytes after the count")
        }
        let start = reader.offset
        let hashes = (0..<Int(count)).map { index in
            payload[(start + index * PublicHash.byteCount)..<(start + (index + 1) * PublicHash.byteCount)]
        }
        return (hashes, start + hashes.count * PublicHash.byteCount)
    }

    /// Exactly `count` messages, or the first reason the payload is not the
    /// canonical payload of `count` messages: the hashes must be distinct, in
    /// the order of their first use, and each used.
    /// `purged` allows the residues a purge of the cloud log leaves
    /// (`OutboxMessage.contentPurged`); a frame never carries one.
    public static func decode(_ payload: [UInt8], count: Int, purged: Bool = false) throws(CodecError) -> [OutboxMessage] {
        let (listed, tableEnd) = try table(payload, limit: count)
        var hashes: [PublicHash] = []
        hashes.reserveCapacity(listed.count)
        var seen = Set<PublicHash>()
        for slice in listed {
            let hash = PublicHash(unchecked: Array(slice))
            guard seen.insert(hash).inserted else {
                throw CodecError(.nonCanonical, at: slice.startIndex, "a hash is listed twice in the frame")
            }
            hashes.append(hash)
        }
        var reader = BinaryReader(payload, offset: tableEnd)
        var messages: [OutboxMessage] = []
        messages.reserveCapacity(count)
        var used = 0
        while !reader.isAtEnd {
            guard messages.count < count else {
                throw CodecError(.trailingBytes, at: reader.offset, "the payload holds more than \(count) messages")
            }
            let tag = try reader.byte()
            if OutboxMessage.isHashless(tag) {
                messages.append(try OutboxMessage.decodeHashless(tag: tag, from: &reader))
                continue
            }
            let indexAt = reader.offset
            let index = try reader.uvarint()
            guard index < UInt64(hashes.count), index <= UInt64(used) else {
                throw CodecError(.nonCanonical, at: indexAt, "hash index \(index) is not the next new hash or an earlier one")
            }
            if index == UInt64(used) { used += 1 }
            messages.append(try OutboxMessage.decodeBody(tag: tag, hash: hashes[Int(index)], from: &reader, purged: purged))
        }
        guard messages.count == count else {
            throw CodecError(.truncated, at: reader.offset, "the payload holds \(messages.count) messages, not \(count)")
        }
        guard used == hashes.count else {
            throw CodecError(.nonCanonical, at: 0, "\(hashes.count - used) listed hashes are never used")
        }
        return messages
    }
}
