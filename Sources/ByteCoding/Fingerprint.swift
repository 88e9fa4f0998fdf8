import CZlib

/// A 64-bit fingerprint of bytes held in this process: zlib's CRC-32 and
/// Adler-32 of them side by side. It tells whether bytes are the ones they
/// were without keeping a copy (a sleeping store's pages, `hibernate()`).
/// CRC-32 alone misses no change confined to 32 consecutive bits; unrelated
/// inputs of the same length share a fingerprint with a chance of about
/// 2⁻⁶⁴. It is no defence against an adversary, who can make both sums
/// collide at will: use it on the process's own bytes only.
public enum Fingerprint {
    public static func of(_ bytes: [UInt8]) -> UInt64 {
        bytes.withUnsafeBufferPointer { buffer in
            var crc = crc32(0, nil, 0), adler = adler32(0, nil, 0)
            var start = buffer.baseAddress, left = buffer.count
            // zlib's length is a uInt; a longer input goes in slices.
            while left > 0, let slice = start {
                let take = min(left, Int(UInt32.max))
                crc = crc32(crc, slice, uInt(take))
                adler = adler32(adler, slice, uInt(take))
                start = slice + take
                left -= take
            }
            return UInt64(crc & 0xFFFF_FFFF) << 32 | UInt64(adler & 0xFFFF_FFFF)
        }
    }
}
