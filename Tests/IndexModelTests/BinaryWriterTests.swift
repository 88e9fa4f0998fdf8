import IndexModel
import PropertyBased
import Testing

private func written(_ write: (inout BinaryWriter) -> Void) -> [UInt8] {
    var writer = BinaryWriter()
    write(&writer)
    return writer.bytes
}

@Test func uvarintsAreLEB128() {
    let cases: [(UInt64, [UInt8])] = [
        (0, [0x00]), (1, [0x01]), (127, [0x7F]), (128, [0x80, 0x01]), (300, [0xAC, 0x02]),
        (16_383, [0xFF, 0x7F]), (16_384, [0x80, 0x80, 0x01]),
        (UInt64(Int64.max), [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F]),
        (UInt64.max, [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]),
    ]
    for (value, bytes) in cases {
        #expect(written { $0.uvarint(value) } == bytes, "\(value)")
    }
}

@Test func svarintsAreZigzagMapped() {
    let cases: [(Int64, [UInt8])] = [
        (0, [0x00]), (-1, [0x01]), (1, [0x02]), (-2, [0x03]), (-64, [0x7F]), (64, [0x80, 0x01]),
        (Int64.max, [0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]),
        (Int64.min, [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]),
    ]
    for (value, bytes) in cases {
        #expect(written { $0.svarint(value) } == bytes, "\(value)")
    }
}

@Test func fixedWidthValuesAreLittleEndian() {
    #expect(written { $0.double(0.5) } == [0, 0, 0, 0, 0, 0, 0xE0, 0x3F])
    #expect(written { $0.double(-0.0) } == [0, 0, 0, 0, 0, 0, 0, 0x80])
    #expect(written { $0.fixed64(0x0102_0304_0506_0708) } == [8, 7, 6, 5, 4, 3, 2, 1])
    #expect(written { $0.bigEndian64(0x0102_0304_0506_0708) } == [1, 2, 3, 4, 5, 6, 7, 8])
}

@Test func stringsAndBytesAreLengthPrefixed() {
    #expect(written { $0.string("") } == [0])
    #expect(written { $0.string("é") } == [2, 0xC3, 0xA9])
    #expect(written { $0.string("e\u{301}") } == [3, 0x65, 0xCC, 0x81], "strings are not normalized")
    #expect(written { $0.string(String(repeating: "a", count: 200)) }.prefix(2) == [0xC8, 0x01])
    #expect(written { $0.data([9, 8]) } == [2, 9, 8])
    #expect(written { $0.bool(true); $0.bool(false) } == [1, 0])
    #expect(written { $0.optional(Optional<String>.none) { $0.string($1) } } == [0])
    #expect(written { $0.optional("a") { $0.string($1) } } == [1, 1, 0x61])
}

private let anyUInt64 = Generator<UInt64, Shrink.None<UInt64>>(run: { rng in
    // Spread over every bit width, not just the (mostly 10-byte) uniform values.
    UInt64.random(in: 0...UInt64.max, using: &rng) >> UInt64.random(in: 0...63, using: &rng)
})

@Test func varintsReadBackThroughTheReader() async {
    await propertyCheck(count: 2000, input: anyUInt64) { value throws in
        var writer = BinaryWriter()
        writer.uvarint(value)
        writer.svarint(Int64(bitPattern: value))
        var reader = BinaryReader(writer.bytes)
        #expect(try reader.uvarint() == value)
        #expect(try reader.svarint() == Int64(bitPattern: value))
        #expect(reader.isAtEnd)
    }
}
