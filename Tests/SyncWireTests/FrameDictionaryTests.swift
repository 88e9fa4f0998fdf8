import ByteCoding
import IndexModel
import Testing
@testable import SyncWire

private let key: [UInt8] = Array(repeating: 5, count: 32)

private func hash(_ index: Int) -> PublicHash {
    PublicHash.of(app: AppID("app"), activityType: "com.example.read", identity: "url:https://example.com/\(index)")
}

/// Signals for the hashes `indexes`, each once, from seq `from`.
private func signals(_ indexes: [Int], from seq: UInt64 = 1) -> [OutboxRecord] {
    indexes.enumerated().map { offset, index in
        OutboxRecord(position: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(seq + UInt64(offset))),
                     message: .signal(hash(index), Popularity(views: 1)))
    }
}

private func payload(_ records: [OutboxRecord]) -> [UInt8] {
    FramePayload.encode(records.map(\.encoded))
}

private func listed(_ dictionary: FrameDictionary) -> [PublicHash] {
    stride(from: 0, to: dictionary.bytes.count, by: 32).compactMap { PublicHash(Array(dictionary.bytes[$0..<($0 + 32)])) }
}

@Suite struct FrameDictionaryTests {
    @Test func theHashesAFrameListsMoveToTheEndInItsOrder() throws {
        let first = try FrameDictionary.empty.following(payload(signals([1, 2, 3])))
        #expect(listed(first) == [hash(1), hash(2), hash(3)])
        let second = try first.following(payload(signals([4, 2])))
        #expect(listed(second) == [hash(1), hash(3), hash(4), hash(2)])
        #expect(second.digest != first.digest)
    }

    @Test func aDictionaryKeepsTheNewest1024Hashes() throws {
        let dictionary = try FrameDictionary.empty.following(payload(signals(Array(0..<1_500))))
        #expect(dictionary.hashCount == FrameDictionary.maximumHashes && FrameDictionary.maximumHashes == 1_024)
        #expect(listed(dictionary).first == hash(476) && listed(dictionary).last == hash(1_499))
        #expect(dictionary.bytes.count == Deflate.maximumDictionaryBytes)
    }

    /// The frames' payloads oldest first, and the dictionary a device holds
    /// after each, from the empty one.
    private func history(_ frames: [[Int]]) throws -> (payloads: [[UInt8]], dictionaries: [FrameDictionary]) {
        var dictionaries: [FrameDictionary] = []
        var seq: UInt64 = 1
        let payloads = frames.map { indexes in
            defer { seq += UInt64(indexes.count) }
            return payload(signals(indexes, from: seq))
        }
        for each in payloads { dictionaries.append(try (dictionaries.last ?? .empty).following(each)) }
        return (payloads, dictionaries)
    }

    /// A cloud that does not hold a device's dictionary makes it again from
    /// the device's newest frames: after the newest, or after the one before
    /// (its ack was lost), and from wherever the device started.
    @Test func aDictionaryIsRecoveredFromTheNewestFramesWhereverTheDeviceStartedIt() throws {
        let (payloads, dictionaries) = try history([[1, 2, 3], [4, 2], [5], [3, 6, 1], [2]])
        let newestFirst = Array(payloads.reversed())
        #expect(FrameDictionary.recover(digest: dictionaries[4].digest, fromNewestFirst: newestFirst) == dictionaries[4])
        #expect(FrameDictionary.recover(digest: dictionaries[3].digest, fromNewestFirst: newestFirst) == dictionaries[3])
        #expect(FrameDictionary.recover(digest: dictionaries[2].digest, fromNewestFirst: newestFirst) == nil,
                "two frames back: a device holds at most one frame unacknowledged")
        // The device started over (a restart, or a reset) at the fourth frame.
        let restarted = try FrameDictionary.empty.following(payloads[3]).following(payloads[4])
        #expect(restarted != dictionaries[4])
        #expect(FrameDictionary.recover(digest: restarted.digest, fromNewestFirst: newestFirst) == restarted)
        let unlisted = try FrameDictionary.empty.following(payload(signals([9])))
        #expect(FrameDictionary.recover(digest: unlisted.digest, fromNewestFirst: newestFirst) == nil, "a hash no frame listed")
        #expect(FrameDictionary.recover(digest: dictionaries[0].digest, fromNewestFirst: []) == nil)
    }

    /// Once 1,024 hashes are listed, older frames cannot change the
    /// dictionary; a payload that lists no hash table ends the walk.
    @Test func aRecoveryStopsAt1024HashesAndAtAPayloadWithoutAHashTable() throws {
        let (payloads, dictionaries) = try history([[2_000], Array(0..<700), Array(700..<1_100), [5]])
        let newestFirst = Array(payloads.reversed())
        #expect(dictionaries[3].hashCount == FrameDictionary.maximumHashes)
        #expect(FrameDictionary.recover(digest: dictionaries[3].digest, fromNewestFirst: newestFirst) == dictionaries[3])
        let damaged = [newestFirst[0], [0x80]] + newestFirst.dropFirst(2)
        #expect(FrameDictionary.recover(digest: dictionaries[3].digest, fromNewestFirst: damaged) == nil)
        #expect(FrameDictionary.recover(digest: try FrameDictionary.empty.following(payloads[3]).digest, fromNewestFirst: damaged) != nil)
    }

    @Test func aPayloadThatDoesNotStartWithItsHashesIsRefused() {
        #expect(throws: CodecError.self) { try FrameDictionary.empty.following([3] + [UInt8](repeating: 1, count: 64)) }
        #expect(throws: CodecError.self) { try FrameDictionary.empty.following([0x80]) }
    }

    /// The second frame lists the hashes of the first again, which deflate
    /// cannot shrink alone; against the first's dictionary they cost a
    /// back-reference each.
    @Test func aFrameDeflatedAgainstADictionaryIsSmallerAndInflatesOnlyAgainstIt() throws {
        let hashes = Array(0..<300)
        let dictionary = try FrameDictionary.empty.following(payload(signals(hashes)))
        let records = signals(hashes.reversed(), from: 301)
        let alone = UploadFrame(app: AppID("app"), device: DeviceID("d1"), records: records, key: key)
        let based = UploadFrame(app: AppID("app"), device: DeviceID("d1"), records: records, key: key, dictionary: dictionary)
        #expect(based.payload.count * 3 < alone.payload.count, "\(based.payload.count) against \(alone.payload.count) bytes")
        let parsed = try UploadFrame.parse(based.encoded)
        #expect(parsed.base == dictionary.digest && parsed.isSigned(by: key))
        #expect(try parsed.messages(dictionary: dictionary).map(\.encoded) == records.map(\.encoded))
        let none = try #require(throws: WireError.self) { try parsed.messages() }
        #expect(none.code == .unknownBase)
        let other = try FrameDictionary.empty.following(payload(signals([7])))
        #expect(throws: WireError.self) { try parsed.messages(dictionary: other) }
    }

    @Test func asTheLogKeepsItAFrameReadsWithoutItsDictionary() throws {
        let dictionary = try FrameDictionary.empty.following(payload(signals([1, 2])))
        let records = signals([2, 1, 3], from: 3)
        let based = try UploadFrame.parse(UploadFrame(app: AppID("app"), device: DeviceID("d1"), records: records, key: key,
                                                      dictionary: dictionary).encoded)
        let logged = based.asLogged(try based.plainPayload(dictionary: dictionary))
        #expect(logged.base == nil && logged.codec == .stored && logged.digest == based.digest && logged.signature == based.signature)
        #expect(try logged.messages().map(\.encoded) == records.map(\.encoded))
    }

    @Test func aDictionaryNamedOnAStoredPayloadIsMalformed() throws {
        let frame = UploadFrame(app: AppID("app"), device: DeviceID("d1"), records: signals([1]), key: key, codec: .stored)
        var bytes = frame.encoded
        // The header ends flags, codec, length, digest, payload length.
        let flagsAt = frame.header.count - 1 - 32 - 1 - 1 - 1
        #expect(bytes[flagsAt] == 0 && bytes[flagsAt + 1] == UploadFrame.Codec.stored.rawValue)
        bytes[flagsAt] = UploadFrame.Flags.based
        let error = try #require(throws: WireError.self) { try UploadFrame.parse(bytes) }
        #expect(error.code == .malformed && error.message.contains("not deflated"), "\(error)")
    }
}
