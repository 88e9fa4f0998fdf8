/// Bytes with their long runs of zeros left out, and back: what a small
/// SQLite store's pages become before they are compressed, since most of
/// each page is free space of zeros (and more so as their difference from
/// a new store's pages). A compressor walks a run of zeros a match at a
/// time and its reader writes it back; here a run is two varints, and
/// expanding it writes nothing, as the output starts zeroed.
///
/// The encoding is a sequence of records, each a literal length (LEB128),
/// that many bytes, and the length of the run of zeros after them (LEB128);
/// the last record's run may be 0. A run is left out only when it holds 8
/// zero bytes that start a whole number of words after the literal began,
/// so every run of 15 or more goes, and no record is longer than what it
/// stands for: the encoding is at most `overhead` bytes longer than the input.
public enum ZeroRuns {
    /// The most the encoding of any input is longer than the input.
    public static let overhead = 20

    /// `input` with its runs of zeros left out.
    public static func encode(_ input: [UInt8]) -> [UInt8] {
        input.withUnsafeBufferPointer { source in
            let count = source.count
            return [UInt8](unsafeUninitializedCapacity: count + overhead) { target, produced in
                guard let from = source.baseAddress, let to = target.baseAddress else {
                    produced = 0
                    return
                }
                let words = UnsafeRawPointer(from)
                var written = 0
                var literalStart = 0
                var at = 0
                while at + 8 <= count {
                    if words.loadUnaligned(fromByteOffset: at, as: UInt64.self) != 0 {
                        at += 8
                        continue
                    }
                    // A zero word: the run reaches back into the literal's
                    // last zeros and on past the word.
                    var start = at
                    while start > literalStart && from[start - 1] == 0 { start -= 1 }
                    var end = at + 8
                    while end + 8 <= count && words.loadUnaligned(fromByteOffset: end, as: UInt64.self) == 0 { end += 8 }
                    while end < count && from[end] == 0 { end += 1 }
                    written = record(from + literalStart, literal: start - literalStart, zeros: end - start, into: to, at: written)
                    literalStart = end
                    at = end
                }
                if literalStart < count || written == 0 {
                    written = record(from + literalStart, literal: count - literalStart, zeros: 0, into: to, at: written)
                }
                produced = written
            }
        }
    }

    /// The `count` bytes that `encoded` stands for; nil when it does not
    /// stand for exactly `count` bytes (a length past its end or past
    /// `count`, a varint that does not end, or bytes left over).
    public static func decode(_ encoded: [UInt8], count: Int) -> [UInt8]? {
        guard count >= 0 else { return nil }
        var output = [UInt8](repeating: 0, count: count)
        let complete = encoded.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target in
                var reading = 0
                var place = 0
                while reading < source.count {
                    guard let literal = varint(source, at: &reading), literal <= source.count - reading,
                          literal <= count - place else { return false }
                    if literal > 0 {
                        target.baseAddress!.advanced(by: place).update(from: source.baseAddress!.advanced(by: reading), count: literal)
                    }
                    reading += literal
                    place += literal
                    guard let zeros = varint(source, at: &reading), zeros <= count - place else { return false }
                    place += zeros
                }
                return place == count
            }
        }
        return complete ? output : nil
    }

    /// Writes a record at `at` and returns where the next goes.
    private static func record(_ literalBytes: UnsafePointer<UInt8>, literal: Int, zeros: Int,
                               into target: UnsafeMutablePointer<UInt8>, at: Int) -> Int {
        var place = writeVarint(literal, into: target, at: at)
        if literal > 0 { (target + place).update(from: literalBytes, count: literal) }
        place += literal
        return writeVarint(zeros, into: target, at: place)
    }

    private static func writeVarint(_ value: Int, into target: UnsafeMutablePointer<UInt8>, at: Int) -> Int {
        var value = UInt64(value)
        var place = at
        while value >= 0x80 {
            target[place] = UInt8(truncatingIfNeeded: value) | 0x80
            value >>= 7
            place += 1
        }
        target[place] = UInt8(value)
        return place + 1
    }

    /// A LEB128 value of at most 8 bytes (56 bits), or nil.
    private static func varint(_ source: UnsafeBufferPointer<UInt8>, at reading: inout Int) -> Int? {
        var value = 0
        var shift = 0
        while reading < source.count && shift < 56 {
            let byte = source[reading]
            reading += 1
            value |= Int(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
        return nil
    }
}
