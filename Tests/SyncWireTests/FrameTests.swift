import ByteCoding
import IndexModel
import Testing
@testable import SyncWire

private let key: [UInt8] = Array(repeating: 7, count: 32)
private let otherKey: [UInt8] = Array(repeating: 8, count: 32)

private func hash(_ name: String) -> PublicHash {
    PublicHash.of(app: AppID("app"), activityType: "com.example.read", identity: "url:https://example.com/" + name)
}

private func sampleMessages(_ count: Int) -> [OutboxMessage] {
    (0..<count).map { index in
        let token = VoteToken(secret: key, hash: hash("\(index % 7)"))
        switch index % 4 {
        case 0: return .vote(hash("\(index % 7)"), token)
        case 1: return .signal(hash("\(index % 7)"), Popularity(views: UInt64(index), shown: 2, engaged: 1))
        case 2: return .withdraw(hash("\(index % 7)"), token)
        default:
            return .content(hash("\(index % 7)"), PublicContent(activityType: "com.example.read", title: "Título \(index)",
                                                               keywords: ["a", "b"], contentDescription: nil,
                                                               webpageURL: "https://example.com/\(index % 7)"))
        }
    }
}

private func records(_ messages: [OutboxMessage], epoch: UInt64 = 1, from seq: UInt64 = 1) -> [OutboxRecord] {
    messages.enumerated().map {
        OutboxRecord(position: OutboxPosition(epoch: Epoch(epoch), seq: OutboxSeq(seq + UInt64($0.offset))), message: $0.element)
    }
}

@Suite struct FrameTests {
    @Test func aSignedFrameReadsBackToTheSameMessages() throws {
        let messages = sampleMessages(40)
        let frame = UploadFrame(app: AppID("app"), device: DeviceID("d1"), records: records(messages, epoch: 2, from: 11), key: key)
        let parsed = try UploadFrame.parse(frame.encoded)
        #expect(parsed.isSigned(by: key))
        #expect(!parsed.isSigned(by: otherKey))
        #expect(parsed.app == AppID("app") && parsed.device == DeviceID("d1"))
        #expect(parsed.first == OutboxPosition(epoch: Epoch(2), seq: OutboxSeq(11)) && parsed.last == OutboxPosition(epoch: Epoch(2), seq: OutboxSeq(50)))
        #expect(try parsed.messages() == messages)
        #expect(parsed.payload.count < parsed.uncompressedLength, "the payload is deflated")
    }

    /// 10,000 identical signals deflate to about a three-hundredth of
    /// their size, past the 200:1 a receiver holds a deflated payload to: the
    /// frame goes stored, and is read, instead of being refused for good.
    @Test func aPayloadThatDeflatesPastTheRatioBoundIsSentStored() throws {
        let messages = Array(repeating: OutboxMessage.signal(hash("a"), Popularity(engaged: 1)), count: 10_000)
        let frame = UploadFrame(app: AppID("app"), device: DeviceID("d1"), records: records(messages), key: key)
        #expect(frame.codec == .stored)
        let parsed = try UploadFrame.parse(frame.encoded)
        #expect(parsed.isSigned(by: key) && parsed.codec == .stored)
        #expect(try parsed.messages() == messages)
        let varied = UploadFrame(app: AppID("app"), device: DeviceID("d1"), records: records(sampleMessages(40)), key: key)
        #expect(varied.codec == .deflate, "a payload within the bound stays deflated")
    }

    @Test func theDeviceNameIsReadFromTheHeaderAlone() {
        let frame = UploadFrame(app: AppID("app"), device: DeviceID("d1"), records: records(sampleMessages(3)), key: key)
        #expect(UploadFrame.deviceName(in: frame.encoded) == DeviceID("d1"))
        #expect(UploadFrame.deviceName(in: Array(frame.encoded.prefix(14))) == DeviceID("d1"), "the payload is not needed")
        #expect(UploadFrame.deviceName(in: Array("not a frame".utf8)) == nil)
    }

    @Test func aFlippedHeaderBitBreaksTheSignature() throws {
        var bytes = UploadFrame(app: AppID("app"), device: DeviceID("d1"), records: records(sampleMessages(3)), key: key).encoded
        // The device name's first byte: still a well-formed frame, but not the one signed.
        let at = 4 + 2 + 1 + 3 + 1
        bytes[at] ^= 0x01
        let parsed = try UploadFrame.parse(bytes)
        #expect(!parsed.isSigned(by: key))
    }

    @Test func aFlippedPayloadBitIsRefusedAfterTheSignatureCheck() throws {
        var bytes = UploadFrame(app: AppID("app"), device: DeviceID("d1"), records: records(sampleMessages(30)), key: key).encoded
        bytes[bytes.count - 3] ^= 0x10
        let parsed = try UploadFrame.parse(bytes)
        #expect(parsed.isSigned(by: key), "the signature covers the header and the digest, not the compressed bytes")
        let error = try #require(throws: WireError.self) { try parsed.messages() }
        #expect(error.code == .malformed)
    }

    @Test func aFrameNamesWhatItFollowsAndWhetherItIsAProbe() throws {
        let messages = records(sampleMessages(3))
        let first = UploadFrame(app: AppID("app"), device: DeviceID("d1"), records: messages, key: key,
                                follows: OutboxPosition(epoch: Epoch(0), seq: OutboxSeq(7)), isProbe: true)
        let parsed = try UploadFrame.parse(first.encoded)
        #expect(parsed.follows == OutboxPosition(epoch: Epoch(0), seq: OutboxSeq(7)) && parsed.isProbe)
        #expect(parsed.isSigned(by: key), "the signature covers both fields")
        let inside = UploadFrame(app: AppID("app"), device: DeviceID("d1"), records: records(sampleMessages(3), from: 4), key: key)
        #expect(try UploadFrame.parse(inside.encoded).follows == OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(3)))
    }

    @Test func aFrameThatFollowsAPositionItCannotFollowIsMalformed() throws {
        // Inside an epoch a frame follows exactly the seq before its first;
        // an epoch's first frame follows something before it.
        let frame = UploadFrame(app: AppID("app"), device: DeviceID("d1"), records: records(sampleMessages(2), from: 4), key: key)
        var bytes = frame.encoded
        // epoch, first, last, count, follows epoch, follows seq, flags.
        let fields: [UInt8] = [1, 4, 5, 2, 1, 3, 0]
        let start = try #require((0...(frame.header.count - fields.count)).first { Array(bytes[$0..<($0 + fields.count)]) == fields })
        bytes[start + 5] = 2
        let error = try #require(throws: WireError.self) { try UploadFrame.parse(bytes) }
        #expect(error.code == .malformed && error.message.contains("must follow 1:3"), "\(error)")
        bytes[start + 5] = 3
        bytes[start + 6] = 4
        let flags = try #require(throws: WireError.self) { try UploadFrame.parse(bytes) }
        #expect(flags.code == .malformed && flags.message.contains("unknown frame flags 4"), "\(flags)")
    }

    @Test func aTruncatedFrameIsMalformed() throws {
        let bytes = UploadFrame(app: AppID("app"), device: DeviceID("d1"), records: records(sampleMessages(5)), key: key).encoded
        for length in [0, 3, 10, bytes.count - 40, bytes.count - 1] {
            let error = try #require(throws: WireError.self) { try UploadFrame.parse(Array(bytes.prefix(length))) }
            #expect(error.code == .malformed, "length \(length): \(error)")
        }
    }

    @Test func anOversizedFrameIsRefusedBeforeReadingIt() throws {
        let error = try #require(throws: WireError.self) {
            try UploadFrame.parse([UInt8](repeating: 0, count: WireLimits.maximumFrameBytes + 1))
        }
        #expect(error.code == .tooLarge)
    }

    @Test func aDeflateBombIsRefusedWhileInflating() throws {
        // 16 MiB of zeros deflates to about 16 KiB: a ratio far above 200:1.
        let plain = [UInt8](repeating: 0, count: WireLimits.maximumPayloadBytes)
        let bomb = Deflate.compress(plain, level: 9)
        var writer = BinaryWriter()
        writer.raw(UploadFrame.magic)
        writer.byte(UploadFrame.version)
        writer.byte(1)
        writer.string("app")
        writer.string("d1")
        writer.uvarint(1)
        writer.uvarint(1)
        writer.uvarint(1)
        writer.uvarint(1)
        writer.uvarint(0)
        writer.uvarint(0)
        writer.byte(0)
        writer.byte(1)
        // Announce a small payload: inflating stops at the announced length.
        writer.uvarint(100)
        writer.raw([UInt8](repeating: 0, count: 32))
        writer.uvarint(UInt64(bomb.count))
        writer.raw([UInt8](repeating: 0, count: 32))
        writer.raw(bomb)
        let parsed = try UploadFrame.parse(writer.bytes)
        let error = try #require(throws: WireError.self) { try parsed.messages() }
        #expect(error.code == .malformed && error.message.contains("past its announced 100 bytes"))

        let direct = try #require(throws: DeflateError.self) { try Deflate.decompress(bomb, limit: 1 << 20) }
        #expect(direct == .tooLarge(limit: 1 << 20))
    }

    @Test func aHeaderClaimingAnImpossibleRatioIsRefused() throws {
        var frame = UploadFrame(app: AppID("app"), device: DeviceID("d1"), records: records(sampleMessages(2)), key: key)
        var writer = BinaryWriter()
        writer.raw(UploadFrame.magic)
        writer.byte(UploadFrame.version)
        writer.byte(1)
        writer.string("app")
        writer.string("d1")
        for value: UInt64 in [1, 1, 2, 2, 0, 0] { writer.uvarint(value) }
        writer.byte(0)
        writer.byte(1)
        writer.uvarint(UInt64(WireLimits.maximumPayloadBytes))
        writer.raw(frame.digest)
        writer.uvarint(UInt64(frame.payload.count))
        writer.raw(frame.signature)
        writer.raw(frame.payload)
        frame.payload = []
        let error = try #require(throws: WireError.self) { try UploadFrame.parse(writer.bytes) }
        #expect(error.code == .tooLarge)
    }

    @Test func deflateRoundTripsAndRefusesTruncatedOrTrailingInput() throws {
        let plain = Array("the same words again and again, the same words again".utf8)
        let packed = Deflate.compress(plain)
        #expect(try Deflate.decompress(packed, limit: plain.count) == plain)
        #expect(throws: DeflateError.self) { try Deflate.decompress(Array(packed.dropLast(2)), limit: 1000) }
        #expect(throws: DeflateError.self) { try Deflate.decompress(packed + [1, 2, 3], limit: 1000) }
        #expect(throws: DeflateError.tooLarge(limit: 10)) { try Deflate.decompress(packed, limit: 10) }
    }

    @Test func anOverlongContentStringIsRefused() throws {
        let long = String(repeating: "x", count: WireLimits.maximumStringBytes + 1)
        let message = OutboxMessage.content(hash("1"), PublicContent(activityType: "t", title: long, keywords: [],
                                                                    contentDescription: nil, webpageURL: nil))
        let error = try #require(throws: CodecError.self) { try OutboxMessage.decode(message.encoded) }
        #expect(error.code == .limitExceeded)
    }

    @Test func repliesAreAuthenticOnlyUnderTheDeviceKey() throws {
        let ack = CloudReply.ack(Ack(acceptedThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(9)),
                                     durableThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(9)), contentRequests: [hash("2")]))
        let signed = try CloudReply.decode(ack.encoded(device: DeviceID("d1"), answering: nil, key: key), device: DeviceID("d1"), key: key)
        #expect(signed.reply == ack && signed.isAuthentic)
        #expect(try !CloudReply.decode(ack.encoded(device: DeviceID("d1"), answering: nil, key: otherKey), device: DeviceID("d1"), key: key).isAuthentic)
        #expect(try !CloudReply.decode(ack.encoded(device: DeviceID("d1"), answering: nil, key: nil), device: DeviceID("d1"), key: key).isAuthentic)
        #expect(throws: WireError.self) { try CloudReply.decode(ack.encoded(device: DeviceID("d2"), answering: nil, key: key), device: DeviceID("d1"), key: key) }

        let frame = UploadFrame(app: AppID("app"), device: DeviceID("d1"), records: records(sampleMessages(1)), key: key)
        let bound = try CloudReply.decode(ack.encoded(device: DeviceID("d1"), answering: frame.signature, key: key), device: DeviceID("d1"), key: key)
        #expect(bound.isAnswer(to: frame) && bound.isAuthentic)
        #expect(!signed.isAnswer(to: frame) && signed.answers == CloudReply.unreadFrame)

        let gap = CloudReply.rejection(Rejection(WireError(.gap, "expected 1:4"), expected: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(4))))
        #expect(try CloudReply.decode(gap.encoded(device: DeviceID("d1"), answering: nil, key: key), device: DeviceID("d1"), key: key).reply == gap)
        let ended = CloudReply.rejection(Rejection(WireError(.gap, "epoch 1 ended"), expected: OutboxPosition(epoch: Epoch(2), seq: OutboxSeq(4)),
                                                   ended: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(0))))
        #expect(try CloudReply.decode(ended.encoded(device: DeviceID("d1"), answering: nil, key: key), device: DeviceID("d1"), key: key).reply == ended,
                "an ended epoch the cloud holds none of still says so")
    }

    /// A reply is outside bytes for the device: a position past the limit
    /// is malformed, named, and never reaches the uploader's arithmetic.
    @Test(arguments: [
        CloudReply.ack(Ack(acceptedThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(.max)), durableThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(1)))),
        .ack(Ack(acceptedThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(1)), durableThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(1)),
                 backedUpThrough: OutboxPosition(epoch: Epoch(WireLimits.maximumPosition + 1), seq: .beforeFirst))),
        .rejection(Rejection(WireError(.gap, "x"), expected: OutboxPosition(epoch: Epoch(.max), seq: .first))),
        .rejection(Rejection(WireError(.gap, "x"), expected: OutboxPosition(epoch: Epoch(2), seq: OutboxSeq(1)), ended: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(1 << 60)))),
    ])
    func aReplyWithAPositionPastTheLimitIsMalformed(reply: CloudReply) throws {
        let error = try #require(throws: WireError.self) { try CloudReply.decode(reply.encoded(device: DeviceID("d1"), answering: nil, key: key), device: DeviceID("d1"), key: key) }
        #expect(error.code == .malformed && error.message.contains("above the largest position"), "\(error)")
    }

    @Test func aFramePositionAtTheLimitIsAcceptedAndOnePastItIsNot() throws {
        let top = WireLimits.maximumPosition
        let atLimit = UploadFrame(app: AppID("app"), device: DeviceID("d1"), records: records(sampleMessages(2), epoch: top, from: top - 1), key: key)
        #expect(try UploadFrame.parse(atLimit.encoded).last == OutboxPosition(epoch: Epoch(top), seq: OutboxSeq(top)))
        let past = UploadFrame(app: AppID("app"), device: DeviceID("d1"), records: records(sampleMessages(2), epoch: top, from: top), key: key)
        let error = try #require(throws: WireError.self) { try UploadFrame.parse(past.encoded) }
        #expect(error.code == .malformed && error.message.contains("the last seq"), "\(error)")
    }
}

@Suite struct PublicHashTests {
    @Test func theHashIsTheSameOnEveryDeviceOfAnAppAndDiffersBetweenApps() {
        let activity = UserActivity(activityType: "com.example.read", title: "A", webpageURL: "https://example.com/a",
                                    eligibleForSearch: true, eligibleForPublicIndexing: true)
        let content = PublicContent(activity)!
        #expect(PublicHash.of(app: AppID("one"), content: content) == PublicHash.of(app: AppID("one"), content: content))
        #expect(PublicHash.of(app: AppID("one"), content: content) != PublicHash.of(app: AppID("two"), content: content))
        var retitled = activity
        retitled.title = "Another title"
        #expect(PublicHash.of(app: AppID("one"), content: PublicContent(retitled)!) == PublicHash.of(app: AppID("one"), content: content),
                "the URL, not the title, identifies an activity that has one")
    }

    @Test func onlySearchableAndPublicActivitiesHavePublicContent() {
        var activity = UserActivity(activityType: "t", title: "A", eligibleForSearch: true, eligibleForPublicIndexing: false)
        #expect(PublicContent(activity) == nil)
        activity.eligibleForPublicIndexing = true
        activity.eligibleForSearch = false
        #expect(PublicContent(activity) == nil)
        activity.eligibleForSearch = true
        #expect(PublicContent(activity) != nil)
        activity.title = nil
        #expect(PublicContent(activity) == nil, "nothing to be known by")
        activity.webpageURL = "https://example.com/" + String(repeating: "x", count: WireLimits.maximumStringBytes)
        #expect(PublicContent(activity) == nil, "too long for the wire, so it stays private")
    }

    @Test func voteTokensDependOnTheDeviceSecretAndTheHash() {
        let a = VoteToken(secret: key, hash: hash("1"))
        #expect(a == VoteToken(secret: key, hash: hash("1")))
        #expect(a != VoteToken(secret: otherKey, hash: hash("1")))
        #expect(a != VoteToken(secret: key, hash: hash("2")))
    }
}

@Suite struct FramePayloadTests {
    private let a = hash("a"), b = hash("b")

    private func payload(hashes: [PublicHash], messages: [(UInt8, UInt64)]) -> [UInt8] {
        var writer = BinaryWriter()
        writer.uvarint(UInt64(hashes.count))
        for hash in hashes { writer.raw(hash.bytes) }
        for (tag, index) in messages {
            writer.byte(tag)
            writer.uvarint(index)
            writer.uvarint(0)
            writer.uvarint(1)
            writer.uvarint(0)
        }
        return writer.bytes
    }

    @Test func eachHashIsCarriedOncePerFrame() throws {
        let messages: [OutboxMessage] = (0..<100).map { .signal($0 % 3 == 0 ? a : b, Popularity(shown: 1)) }
        let encoded = FramePayload.encode(messages.map(\.encoded))
        #expect(encoded.count < 2 * 32 + 100 * 6, "\(encoded.count) bytes")
        #expect(try FramePayload.decode(encoded, count: 100) == messages)
    }

    @Test func aPayloadThatIsNotCanonicalIsRefused() throws {
        #expect(try FramePayload.decode(payload(hashes: [a, b], messages: [(3, 0), (3, 1), (3, 0)]), count: 3).count == 3)
        let twice = payload(hashes: [a, a], messages: [(3, 0), (3, 1)])
        #expect(throws: CodecError.self) { try FramePayload.decode(twice, count: 2) }
        let unused = payload(hashes: [a, b], messages: [(3, 0)])
        #expect(throws: CodecError.self) { try FramePayload.decode(unused, count: 1) }
        let outOfOrder = payload(hashes: [a, b], messages: [(3, 1), (3, 0)])
        #expect(throws: CodecError.self) { try FramePayload.decode(outOfOrder, count: 2) }
        let beyond = payload(hashes: [a], messages: [(3, 5)])
        #expect(throws: CodecError.self) { try FramePayload.decode(beyond, count: 1) }
        let short = payload(hashes: [a], messages: [(3, 0)])
        #expect(throws: CodecError.self) { try FramePayload.decode(short, count: 2) }
    }
}
