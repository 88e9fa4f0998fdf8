import ByteCoding
import PropertyBased
import Testing

/// Bytes as a small store's pages look: runs of zeros of every length
/// between runs of other bytes, some of them zeros too.
private let pageLike = Generator<[UInt8], Shrink.None<[UInt8]>>(run: { rng in
    var bytes: [UInt8] = []
    for _ in 0..<Int.random(in: 0...12, using: &rng) {
        let zeros = [0, 1, 7, 8, 9, 15, 16, 17, 300, 4_096].randomElement(using: &rng)! + Int.random(in: 0...3, using: &rng)
        bytes += [UInt8](repeating: 0, count: zeros)
        for _ in 0..<Int.random(in: 0...40, using: &rng) {
            bytes.append(Bool.random(using: &rng) ? 0 : UInt8.random(in: 1...255, using: &rng))
        }
    }
    return bytes
})

@Suite struct ZeroRunsTests {
    @Test func anyBytesComeBackExactlyAndTheEncodingIsNeverMuchLonger() async {
        await propertyCheck(count: 2000, input: pageLike) { bytes in
            let encoded = ZeroRuns.encode(bytes)
            #expect(encoded.count <= bytes.count + ZeroRuns.overhead)
            #expect(ZeroRuns.decode(encoded, count: bytes.count) == bytes)
        }
    }

    @Test func pagesOfMostlyZerosShrinkToTheirOtherBytes() {
        var page = [UInt8](repeating: 0, count: 65_536)
        for offset in stride(from: 0, to: page.count, by: 1_024) { page[offset] = 13; page[offset + 1_023] = 7 }
        let encoded = ZeroRuns.encode(page)
        // Each page's two bytes and its run, a few bytes of lengths apiece.
        #expect(encoded.count < 64 * 8)
        #expect(ZeroRuns.decode(encoded, count: page.count) == page)
    }

    @Test(arguments: [0, 1, 7, 8, 9, 100_000])
    func allZerosAndNoZerosRoundTrip(count: Int) {
        let zeros = [UInt8](repeating: 0, count: count)
        let ones = [UInt8](repeating: 1, count: count)
        #expect(ZeroRuns.decode(ZeroRuns.encode(zeros), count: count) == zeros)
        #expect(ZeroRuns.decode(ZeroRuns.encode(ones), count: count) == ones)
        #expect(ZeroRuns.encode(ones).count <= count + ZeroRuns.overhead)
    }

    /// Decoding meets bytes another process could have changed: every
    /// encoding cut short, lengthened or given the wrong size is refused,
    /// never trapped on or stretched past its size.
    @Test func anEncodingThatDoesNotStandForExactlyTheSizeIsRefused() async {
        await propertyCheck(count: 500, input: pageLike) { bytes in
            let encoded = ZeroRuns.encode(bytes)
            #expect(ZeroRuns.decode(encoded, count: bytes.count + 1) == nil)
            if !bytes.isEmpty { #expect(ZeroRuns.decode(encoded, count: bytes.count - 1) == nil) }
            #expect(ZeroRuns.decode(encoded + [0x05], count: bytes.count) == nil)
            for cut in [1, 2, 5] where encoded.count >= cut {
                let shorter = Array(encoded.dropLast(cut))
                if let decoded = ZeroRuns.decode(shorter, count: bytes.count) {
                    // A cut can only drop the last run's length when it was 0.
                    #expect(decoded == bytes)
                }
            }
        }
        #expect(ZeroRuns.decode([0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F], count: 10) == nil)
        #expect(ZeroRuns.decode([0x80], count: 0) == nil)
        #expect(ZeroRuns.decode([0x00, 0x80, 0x80, 0x01], count: 5) == nil)
        #expect(ZeroRuns.decode([0x00, 0x05], count: -1) == nil)
    }
}
