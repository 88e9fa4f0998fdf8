// Fuzz target cloud-reply: SyncWire's `CloudReply.decode`, what a device reads
// from the cloud (or from anyone between). A thin call: the reply's API is
// where the device's checks live, and this target only holds it to never trap.
import IndexModel
import SyncWire

enum Target {
    static let device = DeviceID("phone-1")
    static let key = [UInt8](repeating: 0x5a, count: 32)

    static func run(_ bytes: [UInt8]) {
        _ = try? CloudReply.decode(bytes, device: device, key: key)
    }

    /// Replies the cloud's code encodes: an ack with a request, a gap and a
    /// refusal of an unread frame, signed and unsigned.
    static func seeds() throws -> [(String, [UInt8])] {
        let hash = PublicHash.of(app: AppID("com.example.app"), activityType: "com.example.read", identity: "url:https://example.com/a")
        let ack = Ack(acceptedThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(9)), durableThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(7)),
                      backedUpThrough: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(2)), contentRequests: [hash])
        let gap = Rejection(WireError(.gap, "expected 1:10"), expected: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(10)),
                            ended: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(9)))
        let frame = [UInt8](repeating: 0x33, count: 32)
        return [
            ("ack-signed", CloudReply.ack(ack).encoded(device: device, answering: frame, key: key)),
            ("ack-unsigned", CloudReply.ack(ack).encoded(device: device, answering: frame, key: nil)),
            ("gap-signed", CloudReply.rejection(gap).encoded(device: device, answering: frame, key: key)),
            ("malformed-unread", CloudReply.rejection(Rejection(WireError(.malformed, "bad"))).encoded(device: nil, answering: nil, key: nil)),
        ]
    }
}
