import ByteCoding
import Crypto
import IndexModel

/// The public hashes a device's acknowledged frames listed, the most recently
/// listed last: the preset deflate dictionary its next frame is deflated
/// against (`Journal/FORMAT.md`, "Frame dictionaries"). A busy device lists
/// mostly the same popular hashes frame after frame, and 32 random bytes do
/// not deflate; against the dictionary, a hash listed before costs a
/// back-reference of about three bytes instead.
///
/// Device and cloud each make it the same way, from the frames the cloud
/// acknowledged: `following(_:)` the empty dictionary for a device's first
/// frame, then for each acknowledged frame after (the device store hands it
/// from one sync run to the next, in memory). A frame names the
/// dictionary it was deflated against by its `digest`, so the cloud inflates
/// it only with those exact bytes, or answers `WireError.Code.unknownBase`.
public struct FrameDictionary: Hashable, Sendable {
    /// Hashes kept: as many as deflate's 32 KiB window reaches back over.
    public static let maximumHashes = Deflate.maximumDictionaryBytes / PublicHash.byteCount

    /// The hashes, 32 bytes each, oldest first.
    public let bytes: [UInt8]
    /// The first `digestBytes` of SHA-256 of `bytes`: the name a frame
    /// deflated against it carries.
    public let digest: [UInt8]
    /// 8 bytes: a cloud compares a name with the two dictionaries it holds
    /// for the sending device, so 2^-64 is the chance that two differ and
    /// share it; and then the frame does not inflate to its digest, which
    /// the cloud answers `unknownBase` too. A device that syncs often sends
    /// frames of a few messages, for which the whole SHA-256 would be a
    /// tenth of the frame.
    public static let digestBytes = 8

    /// The dictionary of a device that has no frame acknowledged yet (or
    /// that starts over): its frames are deflated alone.
    public static let empty = FrameDictionary(bytes: [])

    private init(bytes: [UInt8]) {
        self.bytes = bytes
        digest = Array(SHA256.hash(data: bytes).prefix(FrameDictionary.digestBytes))
    }

    public var isEmpty: Bool { bytes.isEmpty }
    public var hashCount: Int { bytes.count / PublicHash.byteCount }

    /// The dictionary once the frame whose uncompressed payload is `payload`
    /// is acknowledged: the frame's listed hashes, in their order, move to
    /// the end, and the oldest beyond `maximumHashes` go. Throws when the
    /// payload does not start with a hash list (`FramePayload`).
    public func following(_ payload: [UInt8]) throws(CodecError) -> FrameDictionary {
        let listed = try FramePayload.listedHashes(payload).map(Listed.init)
        let moved = Set(listed)
        var kept: [Listed] = []
        kept.reserveCapacity(hashCount + listed.count)
        for start in stride(from: 0, to: bytes.count, by: PublicHash.byteCount) {
            let hash = Listed(bytes: bytes[start..<(start + PublicHash.byteCount)])
            if !moved.contains(hash) { kept.append(hash) }
        }
        kept.append(contentsOf: listed)
        var next: [UInt8] = []
        next.reserveCapacity(min(kept.count, FrameDictionary.maximumHashes) * PublicHash.byteCount)
        for hash in kept.suffix(FrameDictionary.maximumHashes) { next.append(contentsOf: hash.bytes) }
        return FrameDictionary(bytes: next)
    }

    /// The dictionary named `digest` that a device may hold after the
    /// frames whose uncompressed payloads are `newestFirst` (its newest
    /// logged frames, newest first), or nil. The device made it from some
    /// run of them ending at the newest frame, or at the one before when
    /// the newest's ack was lost, and starting from the empty dictionary at
    /// some frame (its store or its last reset) or far enough back that
    /// 1,024 hashes were listed since. Walking back from the end, a hash
    /// keeps its place at its latest listing, so each start is one more
    /// frame's hashes put in front of the last start's dictionary: at most
    /// two digests a frame, each of at most 32 KiB, none for a frame that
    /// lists no new hash, and none once 1,024 hashes are reached. A payload
    /// that lists no hash table ends the walk.
    public static func recover(digest: [UInt8], fromNewestFirst newestFirst: [[UInt8]]) -> FrameDictionary? {
        for end in 0..<min(2, newestFirst.count) {
            var seen = Set<Listed>()
            // Newest first: reversed, the dictionary's order.
            var hashes: [Listed] = []
            for (index, payload) in newestFirst[end...].enumerated() {
                guard let listed = try? FramePayload.listedHashes(payload) else { break }
                let before = hashes.count
                for hash in listed.reversed().map(Listed.init) where hashes.count < maximumHashes && seen.insert(hash).inserted {
                    hashes.append(hash)
                }
                // A frame that lists no new hash starts the same dictionary as the one after it.
                if index > 0 && hashes.count == before { continue }
                var bytes: [UInt8] = []
                bytes.reserveCapacity(hashes.count * PublicHash.byteCount)
                for hash in hashes.reversed() { bytes.append(contentsOf: hash.bytes) }
                let candidate = FrameDictionary(bytes: bytes)
                if !candidate.isEmpty && candidate.digest == digest { return candidate }
                if hashes.count == maximumHashes { break }
            }
        }
        return nil
    }

    /// A listed hash as a slice of its payload, hashed by its first eight
    /// bytes (as `PublicHash` is) and compared whole.
    private struct Listed: Hashable {
        let bytes: ArraySlice<UInt8>

        func hash(into hasher: inout Hasher) {
            var prefix: UInt64 = 0
            for byte in bytes.prefix(8) { prefix = prefix << 8 | UInt64(byte) }
            hasher.combine(prefix)
        }
    }
}
