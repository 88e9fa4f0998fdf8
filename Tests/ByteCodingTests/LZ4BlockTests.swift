import ByteCoding
import PropertyBased
import Testing

/// Bytes as a sleeping store's image looks before it is compressed: short
/// runs of repeated and of varied bytes, of any length.
private let imageLike = Generator<[UInt8], Shrink.None<[UInt8]>>(run: { rng in
    var bytes: [UInt8] = []
    for _ in 0..<Int.random(in: 0...16, using: &rng) {
        if Bool.random(using: &rng) {
            bytes += [UInt8](repeating: UInt8.random(in: 0...255, using: &rng), count: Int.random(in: 1...600, using: &rng))
        } else {
            for _ in 0..<Int.random(in: 0...300, using: &rng) { bytes.append(UInt8.random(in: 0...255, using: &rng)) }
        }
    }
    return bytes
})

@Suite struct LZ4BlockTests {
    @Test(arguments: [0, 1, 15, 1_000, 65_536, 300_001])
    func decompressingGivesBackWhatWasCompressedWithinItsLimit(size: Int) throws {
        let plain = (0..<size).map { UInt8(truncatingIfNeeded: $0 % 251 == 0 ? $0 / 7 : $0 % 13) }
        let block = LZ4Block.compress(plain)
        #expect(try LZ4Block.decompress(block, limit: size) == plain)
        #expect(try LZ4Block.decompress(block, limit: size + 10_000) == plain)
        if size >= 1_000 { #expect(block.count < size / 2, "repetitive bytes compress") }
    }

    @Test func anyBytesComeBackExactly() async {
        await propertyCheck(count: 1000, input: imageLike) { bytes in
            #expect((try? LZ4Block.decompress(LZ4Block.compress(bytes), limit: bytes.count)) == bytes)
        }
    }

    @Test func aBlockThatHoldsMoreThanTheLimitIsRefusedNotCut() throws {
        let plain = [UInt8](repeating: 9, count: 5_000)
        let block = LZ4Block.compress(plain)
        #expect(throws: LZ4BlockError.self) { try LZ4Block.decompress(block, limit: 4_999) }
        #expect(throws: LZ4BlockError.self) { try LZ4Block.decompress(block, limit: -1) }
        #expect(throws: LZ4BlockError.self) { try LZ4Block.decompress([], limit: 10) }
    }

    /// A block read back from a file someone else may have changed: cut
    /// short, with a byte changed, or any bytes at all, it is refused or
    /// read within its limit, and never trapped on.
    @Test func aChangedOrCutBlockIsRefusedOrReadWithinItsLimit() async {
        await propertyCheck(count: 500, input: imageLike) { bytes in
            let block = LZ4Block.compress(bytes)
            var changed = block
            let at = bytes.count % block.count
            changed[at] ^= UInt8(truncatingIfNeeded: bytes.count | 1)
            for candidate in [changed, Array(block.dropLast(1)), Array(block.prefix(block.count / 2)), bytes] where !candidate.isEmpty {
                if let read = try? LZ4Block.decompress(candidate, limit: bytes.count) {
                    #expect(read.count <= bytes.count)
                }
            }
        }
        // A literal length that runs past the block's end, and a match
        // offset of 0 (before the output's start).
        #expect(throws: LZ4BlockError.self) { try LZ4Block.decompress([0xF0, 0xFF, 0xFF, 0x01], limit: 1_000) }
        #expect(throws: LZ4BlockError.self) { try LZ4Block.decompress([0x14, 0x41, 0x00, 0x00, 0x00], limit: 1_000) }
    }
}
