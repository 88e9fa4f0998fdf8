import CLZ4

/// LZ4's block format (no frame, no checksum) through the system liblz4:
/// for bytes this process compresses often and reads back itself, where
/// speed counts for more than size. On a sleeping store's image (about
/// 10 KB of SQLite pages with their runs of zeros left out) it takes a
/// tenth of the time of deflate at zlib's fastest level, for output about
/// 15% larger. What leaves the process (frames, snapshots) is deflated.
///
/// A block does not say how long it was: the reader gives a limit, which
/// the caller knows (the size it compressed), and gets back every byte,
/// or an error for a block that is corrupt or would pass the limit.
public enum LZ4Block {
    /// Compresses `input` whole, at LZ4's default speed.
    public static func compress(_ input: [UInt8]) -> [UInt8] {
        // Stores are at most a page buffer's 512 MiB, far below LZ4's
        // largest input (about 2 GB), for which the bound would be 0.
        precondition(input.count <= Int(LZ4_MAX_INPUT_SIZE), "\(input.count) bytes is more than an LZ4 block holds")
        let bound = Int(LZ4_compressBound(Int32(input.count)))
        return input.withUnsafeBufferPointer { source in
            [UInt8](unsafeUninitializedCapacity: max(1, bound)) { target, produced in
                produced = source.withMemoryRebound(to: CChar.self) { from in
                    target.withMemoryRebound(to: CChar.self) { to in
                        Int(LZ4_compress_default(from.baseAddress, to.baseAddress, Int32(from.count), Int32(to.count)))
                    }
                }
                // The bound is room for any input, so nothing can be left over.
                precondition(produced > 0 || input.isEmpty, "LZ4 did not finish in its bound")
            }
        }
    }

    /// The bytes `input` holds, at most `limit` of them. A block is read
    /// only within its own bytes and the output's room, whatever they hold.
    public static func decompress(_ input: [UInt8], limit: Int) throws(LZ4BlockError) -> [UInt8] {
        let limit = max(0, limit)
        guard input.count <= Int(Int32.max) else { throw .corrupt("a block of \(input.count) bytes is more than LZ4 reads") }
        if input.isEmpty { throw .corrupt("an empty block") }
        // A block expands at most 255 times (a match of 255 bytes per byte),
        // so a short block with a large limit gets no more room than it could fill.
        let room = min(limit, Int(Int32.max), input.count * maximumExpansion + 16)
        var failure: Int32 = 0
        let output = input.withUnsafeBufferPointer { source in
            [UInt8](unsafeUninitializedCapacity: max(1, room)) { target, produced in
                let result = source.withMemoryRebound(to: CChar.self) { from in
                    target.withMemoryRebound(to: CChar.self) { to in
                        LZ4_decompress_safe(from.baseAddress, to.baseAddress, Int32(from.count), Int32(room))
                    }
                }
                if result < 0 { failure = result }
                produced = max(0, Int(result))
            }
        }
        guard failure == 0 else {
            throw .corrupt("a block of \(input.count) bytes is not LZ4, or holds more than \(room) bytes")
        }
        return output
    }

    /// The most bytes one byte of a block stands for.
    static let maximumExpansion = 255
}

/// Why `LZ4Block.decompress` refused a block.
public enum LZ4BlockError: Error, Equatable, CustomStringConvertible {
    case corrupt(String)

    public var description: String {
        switch self {
        case .corrupt(let detail): "corrupt LZ4 block: \(detail)"
        }
    }
}
