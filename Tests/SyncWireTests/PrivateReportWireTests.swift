import IndexModel
import LocalPrivacy
import Testing
@testable import SyncWire

private let key: [UInt8] = Array(repeating: 7, count: 32)
private let settings = try! PrivatePopularity(epsilonThousandths: 4_000, dailyBudgetThousandths: 8_000, hashes: 64, buckets: 1024)

private func hash(_ name: String) -> PublicHash {
    PublicHash.of(app: AppID("app"), activityType: "com.example.read", identity: "url:https://example.com/" + name)
}

/// The report message and the popularity mode acks carry
/// (`Journal/FORMAT.md`, "Outbox messages" and "Replies"): what a hostile
/// peer can put in them is refused with where and why.
@Suite struct PrivateReportWireTests {
    @Test func aReportCrossesAFrameBesideHashedMessagesWithoutAHash() throws {
        let report = OutboxMessage.report(PrivateReport(settings: settings, function: 63, row: 1023, positive: false))
        #expect(report.hash == nil)
        let messages: [OutboxMessage] = [.vote(hash("a"), VoteToken(secret: key, hash: hash("a"))), report,
                                         .signal(hash("a"), Popularity(engaged: 1)), report]
        let records = messages.enumerated().map {
            OutboxRecord(position: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(UInt64($0.offset + 1))), message: $0.element)
        }
        let frame = UploadFrame(app: AppID("app"), device: DeviceID("d1"), records: records, key: key)
        #expect(try UploadFrame.parse(frame.encoded).messages() == messages)
        #expect(try OutboxMessage.decode(report.encoded) == report)
        #expect(report.encoded.count == 1 + 2 + 1 + 2 + 1 + 2 + 1, "tag, ε 4000, k 64, m 1024, function 63, row 1023, sign")
        guard case .object(let json) = report.jsonValue else { Issue.record("not an object"); return }
        #expect(json["kind"] == .string("report") && json["hash"] == nil && json["epsilon"] == .string("4"))
    }

    @Test(arguments: [
        ("an ε of 0", [6, 0, 64, 0x80, 0x08, 0, 0, 1], "not 1 to 20,000"),
        ("an ε above 20", [6, 0xA1, 0x9C, 0x01, 64, 0x80, 0x08, 0, 0, 1], "above 20000"),
        ("m not a power of two", [6, 0xA0, 0x1F, 64, 100, 0, 0, 1], "power of two"),
        ("a function not below k", [6, 0xA0, 0x1F, 64, 0x80, 0x08, 64, 0, 1], "outside its 64 × 1024 sketch"),
        ("a row not below m", [6, 0xA0, 0x1F, 64, 0x80, 0x08, 0, 0x80, 0x08, 1], "outside its 64 × 1024 sketch"),
        ("a sign byte of 2", [6, 0xA0, 0x1F, 64, 0x80, 0x08, 0, 0, 2], "boolean byte is 2"),
        ("a cut-off report", [6, 0xA0, 0x1F, 64], "ends"),
    ] as [(String, [UInt8], String)]) func aReportOutsideItsSketchIsRefused(label: String, bytes: [UInt8], says: String) {
        let error = #expect(throws: CodecError.self, "\(label)") { try OutboxMessage.decode(bytes) }
        #expect(error?.description.contains(says) == true, "\(label): \(String(describing: error))")
    }

    @Test func aReportInAFramePayloadIsCheckedToo() {
        // One report with function 64 of k 64, as a frame payload: no hashes, then the message.
        let payload: [UInt8] = [0, 6, 0xA0, 0x1F, 64, 0x80, 0x08, 64, 0, 1]
        let error = #expect(throws: CodecError.self) { try FramePayload.decode(payload, count: 1) }
        #expect(error?.description.contains("outside its 64 × 1024 sketch") == true)
        #expect(throws: CodecError.self, "a report has no hash index") { try FramePayload.decode([1] + hash("a").bytes + [6, 0], count: 1) }
    }

    @Test func everyAckCarriesThePopularityMode() throws {
        for mode in [PopularityMode.exact, .ldp(settings)] {
            let ack = Ack(acceptedThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(3)),
                          durableThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(3)), contentRequests: [hash("a")],
                          popularity: mode)
            let bytes = CloudReply.ack(ack).encoded(device: DeviceID("d1"), answering: nil, key: key)
            let read = try CloudReply.decode(bytes, device: DeviceID("d1"), key: key)
            #expect(read.isAuthentic && read.reply == .ack(ack))
        }
    }

    @Test(arguments: [
        ("an unknown mode", [2], "neither 0 (exact) nor 1 (ldp)"),
        ("a budget below one report", [1, 0xA0, 0x1F, 0xE8, 0x07, 64, 0x80, 0x08], "at least one report"),
        ("a budget above 100", [1, 0xA0, 0x1F, 0xA1, 0x8D, 0x06, 64, 0x80, 0x08], "above 100000"),
        ("k of 0", [1, 0xA0, 0x1F, 0xC0, 0x3E, 0, 0x80, 0x08], "k must be 1 to 65,536"),
        ("k above 65,536", [1, 0xA0, 0x1F, 0xC0, 0x3E, 0x81, 0x80, 0x04, 0x80, 0x08], "above 65536"),
        ("m of 3", [1, 0xA0, 0x1F, 0xC0, 0x3E, 64, 3], "power of two"),
        ("a sketch past 2^22 cells", [1, 0xA0, 0x1F, 0xC0, 0x3E, 0x80, 0x80, 0x04, 0x80, 0x80, 0x04], "more than 4194304 cells"),
        ("a cut-off mode", [1, 0xA0, 0x1F], "ends"),
    ] as [(String, [UInt8], String)]) func anAckWithAModeOutOfRangeIsMalformed(label: String, mode: [UInt8], says: String) throws {
        let ack = Ack(acceptedThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(3)),
                      durableThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(3)))
        let exact = CloudReply.ack(ack).encoded(device: DeviceID("d1"), answering: nil, key: nil)
        // The unsigned reply ends with the exact mode's byte, the reindex flag 0 (none), then the signed flag 0.
        #expect(exact.suffix(3) == [0, 0, 0])
        let bytes = Array(exact.dropLast(3)) + mode + [0, 0]
        let error = #expect(throws: WireError.self, "\(label)") { try CloudReply.decode(bytes, device: DeviceID("d1"), key: key) }
        #expect(error?.code == .malformed && error?.message.contains(says) == true, "\(label): \(String(describing: error))")
    }

    @Test func aReplyWhoseSignedFlagIsNeitherZeroNorOneIsMalformed() throws {
        let ack = Ack(acceptedThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(3)),
                      durableThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(3)))
        var bytes = CloudReply.ack(ack).encoded(device: DeviceID("d1"), answering: nil, key: nil)
        bytes[bytes.count - 1] = 2
        let error = #expect(throws: WireError.self) { try CloudReply.decode(bytes, device: DeviceID("d1"), key: key) }
        #expect(error?.code == .malformed && error?.message.contains("signed flag is 2") == true)
    }

    @Test func settingsReadAndPrintEpsilonInThousandths() throws {
        #expect(PrivatePopularity.thousandths("4") == 4_000 && PrivatePopularity.thousandths("0.5") == 500)
        #expect(PrivatePopularity.thousandths("1.25") == 1_250 && PrivatePopularity.thousandths("0.001") == 1)
        for bad in ["", "-1", "1.2345", "1.", ".5", "1e3", "４", "1234567", "0x10"] {
            #expect(PrivatePopularity.thousandths(bad) == nil, "\(bad)")
        }
        #expect(PrivatePopularity.decimal(4_000) == "4" && PrivatePopularity.decimal(1_250) == "1.25" && PrivatePopularity.decimal(1) == "0.001")
        #expect(settings.reportsPerDay == 2)
        let budget = #expect(throws: PopularityError.self) {
            try PrivatePopularity(epsilonThousandths: 4_000, dailyBudgetThousandths: 3_999, hashes: 64, buckets: 1024)
        }
        #expect(budget?.message.contains("at least one report") == true)
        #expect(throws: PopularityError.self) {
            try PrivatePopularity(epsilonThousandths: 0, dailyBudgetThousandths: 3_999, hashes: 64, buckets: 1024)
        }
        #expect(throws: PopularityError.self) {
            try PrivateReport(epsilonThousandths: 4_000, hashes: 64, buckets: 1024, function: -1, row: 0, positive: true)
        }
    }
}
