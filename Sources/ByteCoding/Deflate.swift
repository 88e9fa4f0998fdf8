import CZlib

/// Raw deflate (RFC 1951, no zlib or gzip wrapper) through the system zlib.
/// Frames carry their own length and digest, so the wrapper's checksum would
/// only repeat them.
public enum Deflate {
    /// Compresses `input` whole. `level` is zlib's 0–9; frames use 6.
    /// A `dictionary` (a preset dictionary, RFC 1951's "previous data": only
    /// its last 32 KiB count) lets the input refer back into bytes the
    /// inflater already holds; `decompress` must be given the same bytes.
    public static func compress(_ input: [UInt8], level: Int32 = 6, dictionary: [UInt8] = []) -> [UInt8] {
        var stream = z_stream()
        let reach = min(dictionary.count, maximumDictionaryBytes)
        let (windowBits, memoryLevel) = parameters(forInputBytes: reach + input.count)
        let status = deflateInit2_(&stream, level, Z_DEFLATED, -windowBits, memoryLevel, Z_DEFAULT_STRATEGY,
                                   ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        precondition(status == Z_OK, "deflateInit2 failed (\(status)): zlib is out of memory")
        defer { deflateEnd(&stream) }
        if reach > 0 {
            let set = dictionary.withUnsafeBufferPointer { bytes in
                deflateSetDictionary(&stream, bytes.baseAddress! + (bytes.count - reach), uInt(reach))
            }
            precondition(set == Z_OK, "deflateSetDictionary failed (\(set)) on a fresh stream")
        }
        let bound = Int(deflateBound(&stream, uLong(input.count)))
        return input.withUnsafeBufferPointer { source in
            // zlib writes every byte it counts, so the bound need not be cleared first.
            [UInt8](unsafeUninitializedCapacity: bound) { target, produced in
                stream.next_in = UnsafeMutablePointer(mutating: source.baseAddress)
                stream.avail_in = uInt(source.count)
                stream.next_out = target.baseAddress
                stream.avail_out = uInt(target.count)
                let result = deflate(&stream, Z_FINISH)
                // deflateBound guarantees room for the whole stream in one call.
                precondition(result == Z_STREAM_END, "deflate did not finish in its bound (\(result))")
                produced = target.count - Int(stream.avail_out)
            }
        }
    }

    /// The window (zlib's windowBits, 9–15) and memory level for deflating
    /// `count` bytes. The window is the smallest that reaches back over the
    /// whole input (deflate keeps 262 bytes of lookahead), so a short input
    /// finds every match a 32 KiB window would; the memory level then sizes
    /// the hash table and the symbol buffer to the window, so the input is
    /// one block. zlib's defaults (15, 8) allocate about 256 KiB and clear
    /// 64 KiB of it for every stream, which cost more than compressing a
    /// sync frame of a few hundred bytes. From `largeInputBytes` on (a
    /// snapshot's chunks), the memory level is zlib's largest, 9: a hash
    /// table of 64 Ki heads finds matches with shorter chains, and blocks
    /// twice as long build fewer Huffman trees, so a store's 4 MiB chunks
    /// deflate faster at level 1, and a little smaller. Any raw
    /// inflater with a 32 KiB window reads the result.
    static func parameters(forInputBytes count: Int) -> (windowBits: Int32, memoryLevel: Int32) {
        var windowBits: Int32 = 9
        while windowBits < 15 && (1 << windowBits) < count + 262 { windowBits += 1 }
        return (windowBits, count >= largeInputBytes ? 9 : min(8, windowBits - 6))
    }

    /// Inputs this large get zlib's largest memory level.
    static let largeInputBytes = 1 << 20

    /// The most of a preset dictionary deflate can refer back into: its window.
    public static let maximumDictionaryBytes = 1 << 15

    /// Inflates `input`, refusing to produce more than `limit` bytes: the limit
    /// is enforced while inflating, so a deflate bomb costs at most `limit`
    /// bytes of memory before it is refused. The stream must end exactly at the
    /// end of `input`. `dictionary` is the one `compress` was given; a stream
    /// deflated against other bytes inflates to other bytes, or fails.
    public static func decompress(_ input: [UInt8], limit: Int, dictionary: [UInt8] = []) throws(DeflateError) -> [UInt8] {
        var stream = z_stream()
        let status = inflateInit2_(&stream, -15, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        guard status == Z_OK else { throw .corrupt("inflateInit2 failed (\(status))") }
        defer { inflateEnd(&stream) }
        let reach = min(dictionary.count, maximumDictionaryBytes)
        if reach > 0 {
            let set = dictionary.withUnsafeBufferPointer { bytes in
                inflateSetDictionary(&stream, bytes.baseAddress! + (bytes.count - reach), uInt(reach))
            }
            guard set == Z_OK else { throw .corrupt("inflateSetDictionary failed (\(set))") }
        }
        // zlib writes straight into the result: callers know about how much
        // comes out (the limit is a frame's declared length, a snapshot's
        // chunk size), so it starts that large, with one byte more to see a
        // stream that goes past the limit, and doubles if it must. Deflate
        // expands at most about 1,032 times, so a short input that declares
        // a large length gets no more than it could fill.
        let firstBytes = min(limit, Deflate.firstOutputBytes, input.count * Deflate.maximumExpansion + 64)
        var output = [UInt8](repeating: 0, count: firstBytes + 1)
        var produced = 0
        let failure: DeflateError? = input.withUnsafeBufferPointer { source in
            stream.next_in = UnsafeMutablePointer(mutating: source.baseAddress)
            stream.avail_in = uInt(source.count)
            while true {
                if produced == output.count {
                    guard produced <= limit else { return .tooLarge(limit: limit) }
                    output.append(contentsOf: repeatElement(0, count: min(limit + 1, 2 * output.count) - output.count))
                }
                let code: Int32 = output.withUnsafeMutableBufferPointer { target in
                    let room = min(target.count - produced, Int(UInt32.max))
                    stream.next_out = target.baseAddress! + produced
                    stream.avail_out = uInt(room)
                    // Z_FINISH: a stream that ends within this output
                    // needs no 32 KiB sliding window (zlib allocates and
                    // fills one otherwise); one that does not goes on as
                    // with Z_NO_FLUSH.
                    let code = inflate(&stream, Z_FINISH)
                    produced += room - Int(stream.avail_out)
                    return code
                }
                if produced > limit { return .tooLarge(limit: limit) }
                switch code {
                case Z_STREAM_END:
                    return stream.avail_in == 0 ? nil : .corrupt("\(stream.avail_in) bytes follow the end of the deflate stream")
                case Z_OK:
                    continue
                case Z_BUF_ERROR where produced == output.count:
                    // No room left (zlib may hold output of input it has
                    // taken): the next turn grows the output or refuses it.
                    continue
                case Z_BUF_ERROR where stream.avail_in == 0:
                    return .corrupt("the deflate stream is truncated")
                default:
                    let reason = stream.msg.map { String(cString: $0) } ?? "zlib error \(code)"
                    return .corrupt("invalid deflate data: \(reason)")
                }
            }
        }
        if let failure { throw failure }
        output.removeSubrange(produced...)
        return output
    }

    /// The most a decompression sets aside before it sees how much comes out.
    static let firstOutputBytes = 16 << 20
    /// Deflate's largest ratio of output to input: a 258-byte match per
    /// two bits of a fixed-Huffman block is 1,032 bytes a byte.
    static let maximumExpansion = 1_032
}

/// Why `Deflate.decompress` refused its input: the bytes are not exactly one
/// raw deflate stream, or zlib could not start (`corrupt`, with the reason); or
/// they inflate to more than the caller's limit (`tooLarge`), found while
/// inflating, so the refusal costs at most the limit in memory.
public enum DeflateError: Error, Hashable, Sendable, CustomStringConvertible {
    case corrupt(String)
    case tooLarge(limit: Int)

    public var description: String {
        switch self {
        case .corrupt(let reason): reason
        case .tooLarge(let limit): "inflates to more than \(limit) bytes"
        }
    }
}
