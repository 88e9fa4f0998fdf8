// Fuzz target frame-payload: SyncWire's `FramePayload.decode` and
// `OutboxMessage.decode`, what the cloud reads from a payload once its digest
// matched (so from a device that signed it).
//
// The first byte chooses: even, `FramePayload.decode` of the rest with the
// second byte as the message count; odd, `OutboxMessage.decode` of the rest.
// Both decoders accept only canonical encodings, so whatever decodes encodes
// back to the same bytes, and every decoded message is within `WireLimits`.
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
            contract((0..<report.hashes).contains(report.function) && (0..<report.buckets).contains(report.row)
                     && report.buckets & (report.buckets - 1) == 0 && (1...20_000).contains(report.epsilonThousandths),
                     "a decoded report is outside its sketch")
        case .vote, .withdraw:
            break
        }
        _ = JSONWriter.compact(message.jsonValue)
    }

    /// Payloads of frames the device builds, and each kind of message alone.
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
        var seeds: [(String, [UInt8])] = [
            ("payload-7", [0, UInt8(messages.count)] + FramePayload.encode(messages.map(\.encoded))),
            ("payload-1", [0, 1] + FramePayload.encode([messages[0].encoded])),
        ]
        for message in messages.prefix(5) + messages.suffix(1) {
            seeds.append(("message-\(message.kindName)", [1] + message.encoded))
        }
        return seeds
    }
}
