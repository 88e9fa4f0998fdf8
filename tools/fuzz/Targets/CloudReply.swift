// Fuzz target cloud-reply: SyncWire's `CloudReply.decode`, what a device reads
// from the cloud (or from anyone between). The reply's API is where the
// device's checks live; this target holds it to never trap, and holds what
// decodes to what a device relies on:
// - an ack is canonical: its fields re-encode to the bytes before the signed
//   flag, and a reply signed with the device's key re-encodes, signed, to
//   exactly its bytes;
// - an ack's content requests are within `WireLimits.maximumRequests`, and its
//   popularity mode is one the cloud can set (an ldp mode's ranges hold, and
//   its daily budget holds at least one report) and encodes back the same;
// - an ack's reindex request reads forward (`through` not before `after`),
//   and its hashes are ascending, distinct and within `maximumRequests`;
// - a rejection keeps `expected` only for a gap or an equivocation, and
//   `ended` only for a gap.
import IndexModel
import SyncWire

enum Target {
    static let device = DeviceID("phone-1")
    static let key = [UInt8](repeating: 0x5a, count: 32)

    static func run(_ bytes: [UInt8]) {
        guard let received = try? CloudReply.decode(bytes, device: device, key: key) else { return }
        if received.isAuthentic {
            contract(received.reply.encoded(device: device, answering: received.answers, key: key, version: received.version) == bytes,
                     "a reply signed with the device's key encodes to other bytes")
        }
        switch received.reply {
        case .ack(let ack):
            // The unsigned encoding is the fields and a 0 flag.
            let fields = received.reply.encoded(device: device, answering: received.answers, key: nil, version: received.version).dropLast()
            contract(bytes.starts(with: fields), "a decoded ack's fields encode to other bytes")
            contract(ack.contentRequests.count <= WireLimits.maximumRequests, "an ack requests \(ack.contentRequests.count) hashes")
            if case .ldp(let settings) = ack.popularity {
                contract((1...20_000).contains(settings.epsilonThousandths)
                         && (settings.epsilonThousandths...PrivatePopularity.maximumDailyBudgetThousandths)
                            .contains(settings.dailyBudgetThousandths)
                         && settings.reportsPerDay >= 1 && (1...65_536).contains(settings.hashes)
                         && (2...65_536).contains(settings.buckets) && settings.buckets & (settings.buckets - 1) == 0,
                         "an ack's ldp mode is out of range: \(settings)")
            }
            contract((try? PopularityMode.decode(ack.popularity.encoded)) == ack.popularity,
                     "an ack's popularity mode does not decode back from its encoding")
            if let reindex = ack.reindex {
                contract(reindex.through >= reindex.after && reindex.hashes.count <= WireLimits.maximumRequests
                         && zip(reindex.hashes, reindex.hashes.dropFirst()).allSatisfy { $0 < $1 },
                         "an ack's reindex request reads backward, or its hashes are out of order or too many")
            }
        case .rejection(let rejection):
            let code = rejection.error.code
            contract(rejection.expected == nil || code == .gap || code == .equivocation,
                     "a \(code.name) rejection names an expected position")
            contract(rejection.ended == nil || code == .gap, "a \(code.name) rejection names an ended epoch")
        }
    }

    /// Replies the cloud's code encodes: acks with a request, exact and ldp
    /// (the smallest settings, and the largest at every bound), a gap and a
    /// refusal of an unread frame, signed and unsigned.
    static func seeds() throws -> [(String, [UInt8])] {
        let hash = PublicHash.of(app: AppID("com.example.app"), activityType: "com.example.read", identity: "url:https://example.com/a")
        let ack = Ack(acceptedThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(9)), durableThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(7)),
                      backedUpThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(2)), contentRequests: [hash])
        var ldp = ack
        ldp.popularity = .ldp(try PrivatePopularity(epsilonThousandths: 2_000, dailyBudgetThousandths: 8_000, hashes: 64, buckets: 1_024))
        var smallest = ack
        smallest.contentRequests = []
        smallest.popularity = .ldp(try PrivatePopularity(epsilonThousandths: 1, dailyBudgetThousandths: 1, hashes: 1, buckets: 2))
        var largest = ack
        largest.popularity = .ldp(try PrivatePopularity(epsilonThousandths: 20_000,
                                                        dailyBudgetThousandths: PrivatePopularity.maximumDailyBudgetThousandths,
                                                        hashes: 64, buckets: 65_536))
        var reindexed = ack
        let other = PublicHash.of(app: AppID("com.example.app"), activityType: "com.example.read", identity: "url:https://example.com/b")
        reindexed.reindex = CloudReindex(after: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(3)),
                                         through: OutboxPosition(epoch: Epoch(1_800_000_000_000), seq: OutboxSeq(70_000)),
                                         hashes: [hash, other].sorted(), more: true)
        var nothingMore = ack
        nothingMore.reindex = CloudReindex(after: .nothing, through: .nothing, hashes: [], more: false)
        let gap = Rejection(WireError(.gap, "expected 1:10"), expected: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(10)),
                            ended: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(9)))
        let frame = [UInt8](repeating: 0x33, count: 32)
        return [
            ("ack-signed", CloudReply.ack(ack).encoded(device: device, answering: frame, key: key)),
            ("ack-unsigned", CloudReply.ack(ack).encoded(device: device, answering: frame, key: nil)),
            ("ack-ldp-signed", CloudReply.ack(ldp).encoded(device: device, answering: frame, key: key)),
            ("ack-ldp-unsigned", CloudReply.ack(ldp).encoded(device: device, answering: frame, key: nil)),
            ("ack-ldp-smallest-signed", CloudReply.ack(smallest).encoded(device: device, answering: frame, key: key)),
            ("ack-ldp-largest-unsigned", CloudReply.ack(largest).encoded(device: device, answering: frame, key: nil)),
            ("ack-reindex-signed", CloudReply.ack(reindexed).encoded(device: device, answering: frame, key: key)),
            ("ack-reindex-empty-unsigned", CloudReply.ack(nothingMore).encoded(device: device, answering: frame, key: nil)),
            ("gap-signed", CloudReply.rejection(gap).encoded(device: device, answering: frame, key: key)),
            ("malformed-unread", CloudReply.rejection(Rejection(WireError(.malformed, "bad"))).encoded(device: nil, answering: nil, key: nil)),
        ]
    }
}
