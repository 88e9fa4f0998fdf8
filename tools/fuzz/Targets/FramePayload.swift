// Fuzz target frame-payload: SyncWire's `FramePayload.decode` and
// `OutboxMessage.decode`, what the cloud reads from a payload once its digest
// matched (so from a device that signed it).
//
// The first byte chooses: even, `FramePayload.decode` of the rest with the
// second byte as the message count; odd, `OutboxMessage.decode` of the rest.
// Both decoders accept only canonical encodings, so whatever decodes encodes
// back to the same bytes, and every decoded message is within `WireLimits`;
// a report (tag 6, no hash: in a payload, its fields follow its tag with no
// hash index) is within its sketch.
import IndexModel
import SyncWire

enum Target {
    static func run(_ bytes: [UInt8]) {
        guard bytes.count >= 2 else { return }
        if bytes[0] % 2 == 0 {
            let count = Int(bytes[1])
            let payload = Array(bytes.dropFirst(2))
            guard let messages = try? FramePayload.decode(payload, count: count) else { return }
            contract(messages.count == count, "a payload for \(count) messages decodes to \(messages.count)")
            contract(FramePayload.encode(messages.map(\.encoded)) == payload, "a decoded payload encodes to other bytes")
            for message in messages { check(message) }
        } else {
            let encoding = Array(bytes.dropFirst())
            guard let message = try? OutboxMessage.decode(encoding) else { return }
            contract(message.encoded == encoding, "a decoded \(message.kindName) message encodes to other bytes")
            check(message)
        }
    }

    private static func check(_ message: OutboxMessage) {
        switch message {
        case .signal(_, let counts):
            contract(max(counts.views, counts.shown, counts.engaged) <= WireLimits.maximumSignalCount,
                     "a decoded signal counts past the limit")
        case .content(_, let content):
            contract(content.fitsWireLimits, "decoded content is past the wire's limits")
        case .page(_, let page):
            let strings = [page.url, page.title, page.description, page.image, page.deepLink, page.appStoreID, page.type,
                           page.price].compactMap { $0 } + page.keywords
            contract(!page.url.isEmpty && page.keywords.count <= WireLimits.maximumKeywords
                     && strings.allSatisfy { $0.utf8.count <= WireLimits.maximumStringBytes },
                     "a decoded page is past the wire's limits")
            contract(page.rating.map { $0.isFinite && $0 >= 0 } ?? true, "a decoded page's rating is not a finite, non-negative number")
        case .report(let report):
            contract((1...65_536).contains(report.hashes) && (2...65_536).contains(report.buckets)
                     && (0..<report.hashes).contains(report.function) && (0..<report.buckets).contains(report.row)
                     && report.buckets & (report.buckets - 1) == 0 && (1...20_000).contains(report.epsilonThousandths),
                     "a decoded report is outside its sketch")
            contract(message.hash == nil && report.cell == report.function * report.buckets + report.row,
                     "a decoded report names a hash or a cell outside its sketch")
        case .reindexAsk(let after):
            contract(message.hash == nil && after.epoch.rawValue <= WireLimits.maximumPosition
                     && after.seq.rawValue <= WireLimits.maximumPosition, "a decoded reindex ask names a hash or a position past the limit")
        case .contentPurged:
            contract(false, "a frame's payload decoded to a purged content message, which only a purged log row holds")
        case .vote, .withdraw, .contentWithheld:
            break
        }
        _ = JSONWriter.compact(message.jsonValue)
    }

    /// Payloads of frames the device builds (reports alone, and among hashed
    /// messages), and each kind of message alone.
    static func seeds() throws -> [(String, [UInt8])] {
        let hashes = ["a", "b"].map {
            PublicHash.of(app: AppID("com.example.app"), activityType: "com.example.read", identity: "url:https://example.com/" + $0)
        }
        let token = VoteToken([UInt8](repeating: 3, count: VoteToken.byteCount))!
        let content = PublicContent(activityType: "com.example.read", title: "A", keywords: ["k", "l"],
                                    contentDescription: "d", webpageURL: "https://example.com/a")
        let messages: [OutboxMessage] = [.vote(hashes[0], token), .signal(hashes[0], Popularity(views: 1, shown: 2, engaged: 1)),
                                         .vote(hashes[1], token), .content(hashes[0], content), .withdraw(hashes[1], token),
                                         .signal(hashes[1], Popularity(shown: 1000)),
                                         .page(CrawledPage.hash(app: AppID("com.example.app"), url: "https://example.com/a"),
                                               CrawledPage(url: "https://example.com/a", title: "A", keywords: ["k"],
                                                           deepLink: "app://a", rating: 4.5, ratingCount: 3, price: "1 EUR"))]
        // Reports of the smallest sketch, of the default one, and of the
        // largest at its last cell (numbers of three bytes).
        let reports: [OutboxMessage] = [
            .report(try PrivateReport(epsilonThousandths: 1, hashes: 1, buckets: 2, function: 0, row: 1, positive: false)),
            .report(try PrivateReport(epsilonThousandths: 2_000, hashes: 64, buckets: 1_024, function: 17, row: 700, positive: true)),
            .report(try PrivateReport(epsilonThousandths: 20_000, hashes: 65_536, buckets: 65_536, function: 65_535, row: 65_535,
                                      positive: true)),
        ]
        // Reindex asks at the start of an outbox and at the largest position.
        let asks: [OutboxMessage] = [.reindexAsk(after: .nothing),
                                     .reindexAsk(after: OutboxPosition(epoch: Epoch(WireLimits.maximumPosition),
                                                                       seq: OutboxSeq(WireLimits.maximumPosition)))]
        let mixed = [messages[0], reports[1], messages[1], reports[0], reports[2], messages[2], reports[1], asks[0], messages[4], asks[1],
                     .contentWithheld(hashes[0])]
        func payload(_ messages: [OutboxMessage]) -> [UInt8] {
            [0, UInt8(messages.count)] + FramePayload.encode(messages.map(\.encoded))
        }
        var seeds: [(String, [UInt8])] = [
            ("payload-7", payload(messages)),
            ("payload-1", payload([messages[0]])),
            ("payload-reports", payload(reports)),
            ("payload-report-1", payload([reports[1]])),
            ("payload-mixed", payload(mixed)),
        ]
        for message in messages.prefix(5) + messages.suffix(1) + reports.suffix(1) + asks.suffix(1) + [.contentWithheld(hashes[1])] {
            seeds.append(("message-\(message.kindName)", [1] + message.encoded))
        }
        return seeds
    }
}
