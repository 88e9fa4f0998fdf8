import ByteCoding
import IndexModel
import Testing
@testable import SyncWire

private let key: [UInt8] = Array(repeating: 7, count: 32)
private let device = DeviceID("d1")

private func position(_ epoch: UInt64, _ seq: UInt64) -> OutboxPosition {
    OutboxPosition(epoch: Epoch(epoch), seq: OutboxSeq(seq))
}

private func hashes(_ count: Int) -> [PublicHash] {
    (0..<count).map { PublicHash.of(app: AppID("app"), activityType: "com.example.read", identity: "url:https://example.com/\($0)") }.sorted()
}

private func ack(_ reindex: CloudReindex?) -> CloudReply {
    .ack(Ack(acceptedThrough: position(9, 3), durableThrough: position(9, 3), reindex: reindex))
}

/// The bytes of an unsigned reply, which a device still reads (as not authentic).
private func unsigned(_ reply: CloudReply) -> [UInt8] {
    reply.encoded(device: device, answering: nil, key: nil)
}

@Suite struct ReindexWireTests {
    @Test func anAckCarriesAReindexRequestAndReadsItBack() throws {
        let request = CloudReindex(after: position(3, 7), through: position(5, 2), hashes: hashes(3), more: true)
        let read = try CloudReply.decode(ack(request).encoded(device: device, answering: nil, key: key), device: device, key: key)
        #expect(read.reply == ack(request) && read.isAuthentic)
        let none = try CloudReply.decode(ack(nil).encoded(device: device, answering: nil, key: key), device: device, key: key)
        #expect(none.reply == ack(nil))
    }

    /// An ask names no hash, so a frame payload carries it as it carries a
    /// report: beside the hash-indexed messages, in order.
    @Test func aReindexAskTravelsInAFrameBesideOtherMessages() throws {
        let hash = hashes(1)[0]
        let messages: [OutboxMessage] = [.reindexAsk(after: position(3, 7)), .vote(hash, VoteToken(secret: key, hash: hash)),
                                         .reindexAsk(after: .nothing)]
        let records = messages.enumerated().map { OutboxRecord(position: position(4, UInt64($0.offset + 1)), message: $0.element) }
        let frame = UploadFrame(app: AppID("app"), device: device, records: records, key: key)
        #expect(try UploadFrame.parse(frame.encoded).messages() == messages)
        #expect(try OutboxMessage.decode(OutboxMessage.reindexAsk(after: position(3, 7)).encoded) == .reindexAsk(after: position(3, 7)))
    }

    @Test func anAskPastTheLargestPositionIsRefused() throws {
        var writer = BinaryWriter()
        writer.byte(OutboxMessage.reindexAsk(after: .nothing).encoded[0])
        writer.uvarint(WireLimits.maximumPosition + 1)
        writer.uvarint(1)
        let error = try #require(throws: CodecError.self) { try OutboxMessage.decode(writer.bytes) }
        #expect(error.message.contains("reindex ask's epoch"), "\(error)")
    }

    /// A reply is outside bytes for the device: each field of a reindex
    /// request is checked where it is read, and a bad one is named.
    @Test(arguments: [
        (CloudReindex(after: position(5, 2), through: position(3, 7), hashes: [], more: false), "back to"),
        (CloudReindex(after: .nothing, through: position(1, 1), hashes: hashes(2).reversed(), more: false), "not after the one before it"),
        (CloudReindex(after: .nothing, through: position(1, 1), hashes: [hashes(1)[0], hashes(1)[0]], more: false), "not after the one before it"),
        (CloudReindex(after: .nothing, through: position(WireLimits.maximumPosition + 1, 1), hashes: [], more: false), "above the largest position"),
        (CloudReindex(after: .nothing, through: position(1, 1), hashes: hashes(WireLimits.maximumRequests + 1), more: false), "names 10001 hashes"),
    ])
    func aBadReindexRequestIsRefusedAndNamed(request: CloudReindex, says: String) throws {
        let error = try #require(throws: WireError.self) { try CloudReply.decode(unsigned(ack(request)), device: device, key: key) }
        #expect(error.message.contains(says), "\(error)")
    }

    /// The two flags are one byte each, 0 or 1: the reindex flag of an ack
    /// without a request, and the more flag of one with a request, sit just
    /// before an unsigned reply's signed flag.
    @Test(arguments: [(nil, "reindex flag"), (CloudReindex(after: .nothing, through: .nothing, hashes: [], more: false), "more flag")])
    func aFlagThatIsNeitherZeroNorOneIsRefused(request: CloudReindex?, says: String) throws {
        var bytes = unsigned(ack(request))
        bytes[bytes.count - 2] = 2
        let error = try #require(throws: WireError.self) { try CloudReply.decode(bytes, device: device, key: key) }
        #expect(error.code == .malformed && error.message.contains(says), "\(error)")
    }
}
