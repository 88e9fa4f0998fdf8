@testable import ByteCoding
import Testing

/// Bytes that compress somewhat but not trivially: a repeating ramp with noise.
private func sample(_ count: Int) -> [UInt8] {
    var state: UInt32 = 12345
    return (0..<count).map { index in
        state = state &* 1_103_515_245 &+ 12345
        return index % 7 == 0 ? UInt8(truncatingIfNeeded: state >> 16) : UInt8(truncatingIfNeeded: index)
    }
}

/// Bytes that do not compress.
private func noise(_ count: Int) -> [UInt8] {
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    return (0..<count).map { _ in
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return UInt8(truncatingIfNeeded: state >> 33)
    }
}

@Suite struct DeflateTests {
    @Test(arguments: [0, 1, 1000, 65_536, 300_001])
    func inflatingGivesBackWhatWasDeflatedWhenTheLimitIsExact(size: Int) throws {
        let plain = sample(size)
        #expect(try Deflate.decompress(Deflate.compress(plain), limit: size) == plain)
        #expect(try Deflate.decompress(Deflate.compress(plain), limit: size + 10_000) == plain)
    }

    @Test func theWindowReachesBackOverTheWholeInputUpTo32KiB() {
        #expect(Deflate.parameters(forInputBytes: 0) == (9, 3))
        #expect(Deflate.parameters(forInputBytes: 250) == (9, 3))
        #expect(Deflate.parameters(forInputBytes: 251) == (10, 4))
        #expect(Deflate.parameters(forInputBytes: 3_834) == (12, 6))
        #expect(Deflate.parameters(forInputBytes: 3_835) == (13, 7))
        #expect(Deflate.parameters(forInputBytes: 32_506) == (15, 8))
        #expect(Deflate.parameters(forInputBytes: 1_048_575) == (15, 8))
    }

    @Test func aSnapshotChunkGetsTheLargestMemoryLevelAndStillRoundTrips() throws {
        #expect(Deflate.parameters(forInputBytes: 1_048_576) == (15, 9))
        #expect(Deflate.parameters(forInputBytes: 10_000_000) == (15, 9))
        let plain = sample(1_048_576 + 4_099)
        #expect(try Deflate.decompress(Deflate.compress(plain, level: 1), limit: plain.count) == plain)
    }

    /// Each size on either side of a window boundary: a repeat as far back as
    /// the input goes must still be found and inflate to the same bytes.
    @Test(arguments: [250, 251, 762, 763, 16_122, 16_123, 32_506, 32_507])
    func inputsAtTheWindowBoundariesRoundTrip(size: Int) throws {
        let half = noise(size / 2)
        let plain = half + half + noise(size % 2)
        let compressed = Deflate.compress(plain)
        // Noise does not compress: only the repeat of the first half does.
        #expect(compressed.count < plain.count * 3 / 4)
        #expect(try Deflate.decompress(compressed, limit: plain.count) == plain)
    }

    @Test(arguments: [100, 4_000, 40_000])
    func aPresetDictionaryLetsRepeatsOfItShrinkAndRoundTrips(size: Int) throws {
        let dictionary = noise(size)
        // The dictionary's last bytes again (only its last 32 KiB count), in
        // another order, as a frame lists hashes a previous frame listed.
        let tail = Array(dictionary.suffix(16_000))
        let plain = Array(tail.suffix(tail.count / 2)) + Array(tail.prefix(tail.count / 2)) + noise(37)
        let alone = Deflate.compress(plain)
        let against = Deflate.compress(plain, dictionary: dictionary)
        #expect(against.count < alone.count / 2)
        #expect(try Deflate.decompress(against, limit: plain.count, dictionary: dictionary) == plain)
    }

    @Test func aStreamDeflatedAgainstADictionaryDoesNotInflateToItsBytesWithoutIt() {
        let dictionary = noise(2_000)
        let plain = dictionary + dictionary
        let against = Deflate.compress(plain, dictionary: dictionary)
        let withNone = try? Deflate.decompress(against, limit: plain.count)
        let withOther = try? Deflate.decompress(against, limit: plain.count, dictionary: noise(1_999))
        #expect(withNone != plain)
        #expect(withOther != plain)
    }

    @Test func outputBeyondTheFirstAllocationGrowsUntilTheLimit() throws {
        // Past the first allocation, the output doubles; zeros keep the
        // compressed form small.
        let size = Deflate.firstOutputBytes * 2 + 12_345
        let plain = [UInt8](repeating: 0, count: size)
        let compressed = Deflate.compress(plain, level: 1)
        #expect(try Deflate.decompress(compressed, limit: size) == plain)
        let error = try #require(throws: DeflateError.self) {
            try Deflate.decompress(compressed, limit: size - 1)
        }
        #expect(error == .tooLarge(limit: size - 1))
    }

    @Test func oneByteOverTheLimitIsRefused() throws {
        let plain = sample(5000)
        let error = try #require(throws: DeflateError.self) {
            try Deflate.decompress(Deflate.compress(plain), limit: 4999)
        }
        #expect(error == .tooLarge(limit: 4999))
    }

    @Test func aTruncatedStreamIsCorrupt() throws {
        let compressed = Deflate.compress(sample(50_000))
        let error = try #require(throws: DeflateError.self) {
            try Deflate.decompress(Array(compressed.dropLast(10)), limit: 50_000)
        }
        #expect(error.description.contains("truncated"))
    }

    @Test func bytesAfterTheEndOfTheStreamAreCorrupt() throws {
        let compressed = Deflate.compress(sample(2000)) + [1, 2, 3]
        let error = try #require(throws: DeflateError.self) {
            try Deflate.decompress(compressed, limit: 2000)
        }
        #expect(error == .corrupt("3 bytes follow the end of the deflate stream"))
    }

    @Test func bytesThatAreNotDeflateAreCorrupt() throws {
        let error = try #require(throws: DeflateError.self) {
            try Deflate.decompress([0xFF, 0xFF, 0xFF, 0xFF, 0xFF], limit: 100)
        }
        #expect(error.description.hasPrefix("invalid deflate data"))
    }
}

@Suite struct HexTests {
    @Test func bytesRoundTripThroughLowercaseDigitsAndEitherCaseDecodes() {
        let bytes: [UInt8] = [0x00, 0x0f, 0xa5, 0xff]
        #expect(Hex.encode(bytes) == "000fa5ff")
        #expect(Hex.decode("000fa5ff") == bytes && Hex.decode("000FA5FF") == bytes)
    }

    @Test func anOddLengthOrAnotherCharacterIsNoHex() {
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("zz") == nil)
        #expect(Hex.decode("") == [])
    }
}

@Suite struct FingerprintTests {
    @Test func equalBytesShareAFingerprintAndOneChangedByteOrLengthDoesNot() {
        var bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let first = Fingerprint.of(bytes)
        #expect(Fingerprint.of(bytes) == first)
        for index in [0, 4_095, 99_999] {
            var changed = bytes
            changed[index] ^= 0x01
            #expect(Fingerprint.of(changed) != first, "a flipped bit at \(index)")
        }
        bytes.append(0)
        #expect(Fingerprint.of(bytes) != first, "a zero byte appended")
    }

    @Test func theFingerprintIsCRC32BesideAdler32() {
        // "123456789": CRC-32 0xCBF43926, Adler-32 0x091E01DE (their check values).
        #expect(Fingerprint.of(Array("123456789".utf8)) == 0xCBF4_3926_091E_01DE)
        #expect(Fingerprint.of([]) == 0x0000_0000_0000_0001)
    }
}
