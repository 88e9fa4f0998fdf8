// Fuzz target inflate: ByteCoding's `Deflate.decompress`, which inflates a frame's
// payload (with its announced length as the limit) and a snapshot's chunks.
//
// The first byte chooses the limit: a small one from the next two bytes, or
// 0, 1, or a frame's largest payload; the rest is the raw deflate stream. What
// inflates fits the limit and deflates and inflates back to itself. The limit
// refuses nothing that fits: a stream refused under one limit that inflates
// under a larger one inflates to more than the first limit.
import ByteCoding
import IndexModel
import SyncWire

enum Target {
    static func run(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        let limit: Int
        switch input.byte() % 8 {
        case 0: limit = 0
        case 1: limit = 1
        case 2: limit = WireLimits.maximumPayloadBytes
        default: limit = Int(input.uint16())
        }
        let stream = input.rest()
        let result = Result { () throws(DeflateError) in try Deflate.decompress(stream, limit: limit) }
        if case .success(let plain) = result {
            contract(plain.count <= limit, "inflated \(plain.count) bytes past the limit \(limit)")
            let again = Result { () throws(DeflateError) in try Deflate.decompress(Deflate.compress(plain), limit: plain.count) }
            contract(again == .success(plain), "\(plain.count) inflated bytes do not survive a round trip: \(again)")
            return
        }
        let larger = max(limit, 1 << 20)
        guard larger > limit else { return }
        if case .success(let plain) = Result(catching: { () throws(DeflateError) in try Deflate.decompress(stream, limit: larger) }) {
            contract(plain.count > limit, "a stream of \(plain.count) bytes was refused under the limit \(limit): \(result)")
        }
    }

    /// Streams the frame code deflates, at each limit kind.
    static func seeds() throws -> [(String, [UInt8])] {
        let text = Array("the quick brown fox jumps over the lazy dog; the quick brown fox again".utf8)
        let zeros = [UInt8](repeating: 0, count: 3000)
        return [
            ("text-exact", [3, UInt8(text.count), 0] + Deflate.compress(text)),
            ("text-limit-short", [4, 10, 0] + Deflate.compress(text)),
            ("zeros-exact", [5, UInt8(zeros.count & 0xff), UInt8(zeros.count >> 8)] + Deflate.compress(zeros)),
            ("zeros-frame-limit", [2] + Deflate.compress(zeros, level: 1)),
            ("empty", [0] + Deflate.compress([])),
        ]
    }
}
