import IndexModel
import Testing

/// The error reading `bytes` with `read` throws, or nil when it succeeds.
private func readError<T>(_ bytes: [UInt8], _ read: (inout BinaryReader) throws -> T) -> CodecError? {
    var reader = BinaryReader(bytes)
    do {
        _ = try read(&reader)
        return nil
    } catch let error as CodecError {
        return error
    } catch {
        Issue.record("unexpected error \(error)")
        return nil
    }
}

@Test func minimalVarintsAreRead() throws {
    var reader = BinaryReader([0x00, 0x7F, 0x80, 0x01, 0xAC, 0x02, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01])
    #expect(try reader.uvarint() == 0)
    #expect(try reader.uvarint() == 127)
    #expect(try reader.uvarint() == 128)
    #expect(try reader.uvarint() == 300)
    #expect(try reader.uvarint() == UInt64.max)
    #expect(reader.isAtEnd)
}

@Test func nonMinimalVarintsAreRefused() {
    #expect(readError([0x80, 0x00]) { try $0.uvarint() }?.code == .overlongVarint)
    #expect(readError([0xFF, 0x80, 0x00]) { try $0.uvarint() }?.code == .overlongVarint)
    #expect(readError(Array(repeating: 0xFF, count: 9) + [0x02]) { try $0.uvarint() }?.code == .overlongVarint)
    #expect(readError(Array(repeating: 0x80, count: 10) + [0x00]) { try $0.uvarint() }?.code == .overlongVarint)
    #expect(readError([0x80]) { try $0.uvarint() }?.code == .truncated)
    #expect(readError([]) { try $0.uvarint() }?.code == .truncated)
}

@Test func truncatedFixedWidthAndLengthsAreRefused() {
    #expect(readError([1, 2, 3, 4, 5, 6, 7]) { try $0.double() }?.code == .truncated)
    #expect(readError([3, 0x61, 0x62]) { try $0.string() }?.code == .truncated)
    #expect(readError([3, 1, 2]) { try $0.data() }?.code == .truncated)
    #expect(readError([0x80, 0x80, 0x80, 0x80, 0x08]) { try $0.data() }?.code == .limitExceeded)
    #expect(readError([5]) { try $0.length(maximum: 4) }?.code == .limitExceeded)
}

@Test func booleansAndPresenceBytesAreZeroOrOne() throws {
    var reader = BinaryReader([0, 1, 0, 1, 1, 0x61])
    #expect(try reader.bool() == false)
    #expect(try reader.bool() == true)
    #expect(try reader.optional { (reader: inout BinaryReader) throws(CodecError) in try reader.string() } == nil)
    #expect(try reader.optional { (reader: inout BinaryReader) throws(CodecError) in try reader.string() } == "a")
    #expect(readError([2]) { try $0.bool() }?.code == .nonCanonical)
    #expect(readError([2]) { try $0.optional { (reader: inout BinaryReader) throws(CodecError) in try reader.byte() } }?.code
        == .nonCanonical)
}

@Test func errorsCarryTheOffsetOfTheElement() {
    var reader = BinaryReader([0x01, 0x02, 0x80, 0x00])
    _ = try? reader.byte()
    _ = try? reader.byte()
    do {
        _ = try reader.uvarint()
        Issue.record("an overlong varint was read")
    } catch {
        #expect(error.offset == 2)
        #expect(error.description == "varint has a redundant zero byte (at byte 2)")
    }
}
