// Fuzz target upload-frame: SyncWire's `UploadFrame.parse`, the first thing the
// cloud does with the bytes of a request to /v1/sync.
//
// Whatever parses keeps every header bound (`WireLimits`), is exactly the bytes
// it came from, and names the same device `deviceName(in:)` reads for the rate
// limiter; its names are names (`TextRule.name`); checking its signature and
// inflating its payload then never trap, and a payload that decodes carries no
// content whose text a rule refuses.
import Crypto
import IndexModel
import SyncWire

enum Target {
    static let key = [UInt8](repeating: 0x5a, count: 32)

    static func run(_ bytes: [UInt8]) {
        guard let frame = try? UploadFrame.parse(bytes) else { return }
        let limit = WireLimits.maximumPosition
        contract(frame.encoded == bytes, "a parsed frame encodes to other bytes")
        contract(UploadFrame.deviceName(in: bytes) == frame.device, "deviceName(in:) and parse name different devices")
        contract(TextRule.name.admits(frame.app.rawValue) && TextRule.name.admits(frame.device.rawValue),
                 "a parsed frame names \(TextRule.printable(frame.device.rawValue)), which the name rule refuses")
        contract(frame.epoch >= .first && frame.epoch.rawValue <= limit && frame.firstSeq >= .first && frame.firstSeq <= frame.lastSeq
                 && frame.lastSeq.rawValue <= limit, "a parsed frame's range \(frame.first)...\(frame.last) is outside 1...2^53-1")
        contract(frame.follows.epoch.rawValue <= limit && frame.follows.seq.rawValue <= limit && frame.follows < frame.first,
                 "a parsed frame follows \(frame.follows), not a position before \(frame.first)")
        contract(frame.count >= 1 && frame.count <= WireLimits.maximumMessages
                 && frame.count == frame.firstSeq.count(through: frame.lastSeq), "a parsed frame counts \(frame.count) messages")
        contract(frame.uncompressedLength >= 0 && frame.uncompressedLength <= WireLimits.maximumPayloadBytes,
                 "a parsed frame announces \(frame.uncompressedLength) bytes")
        _ = frame.isSigned(by: key)
        if let messages = try? frame.messages() {
            contract(messages.count == frame.count, "a frame of \(frame.count) decodes to \(messages.count) messages")
            for case .content(_, let content) in messages {
                contract(content.textProblem == nil, "a frame's content passed whose \(content.textProblem ?? "")")
            }
        }
    }

    /// Frames the device's code builds: stored and deflated, a probe, a frame
    /// that opens a later epoch, one of each message kind a device sends
    /// (a report too), and one of reports alone.
    static func seeds() throws -> [(String, [UInt8])] {
        let hash = PublicHash.of(app: AppID("com.example.app"), activityType: "com.example.read", identity: "url:https://example.com/a")
        let token = VoteToken([UInt8](repeating: 3, count: VoteToken.byteCount))!
        let content = PublicContent(activityType: "com.example.read", title: "A", keywords: ["k"],
                                    contentDescription: "d", webpageURL: "https://example.com/a")
        func records(_ messages: [OutboxMessage], epoch: UInt64 = 1, from seq: UInt64 = 1) -> [OutboxRecord] {
            messages.enumerated().map {
                OutboxRecord(position: OutboxPosition(epoch: Epoch(epoch), seq: OutboxSeq(seq + UInt64($0.offset))), message: $0.element)
            }
        }
        let report = OutboxMessage.report(try PrivateReport(epsilonThousandths: 2_000, hashes: 64, buckets: 1_024, function: 17,
                                                            row: 700, positive: true))
        let all: [OutboxMessage] = [.vote(hash, token), .signal(hash, Popularity(views: 1, shown: 2, engaged: 1)),
                                    .content(hash, content), .withdraw(hash, token), report]
        func frame(_ records: [OutboxRecord], follows: OutboxPosition? = nil, probe: Bool = false,
                   codec: UploadFrame.Codec = .deflate) -> [UInt8] {
            UploadFrame(app: AppID("com.example.app"), device: DeviceID("phone-1"), records: records, key: key, follows: follows,
                        isProbe: probe, codec: codec).encoded
        }
        return [
            ("deflate-all-kinds", frame(records(all))),
            ("stored-all-kinds", frame(records(all), codec: .stored)),
            ("stored-one-vote", frame(records([all[0]]), codec: .stored)),
            ("stored-reports", frame(records([report, report]), codec: .stored)),
            ("probe", frame(records([all[0]], from: 5), probe: true)),
            ("new-epoch", frame(records([all[1]], epoch: 3), follows: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(9)))),
        ]
    }
}
