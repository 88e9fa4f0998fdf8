import ByteCoding
import Foundation
import IndexModel
import SyncWire
import ScratchDirectory
import Testing

/// The seeds and saved failures of the fuzz targets over SyncWire
/// (`fuzzReplayInputs`), fed to the functions each target calls and held to
/// its contracts, so CI replays them without building the fuzz targets
/// (`docs/SECURITY.md`, "Fuzzing"). A target's own test of a finding names the
/// behaviour; these keep every saved input replaying. Each test also counts
/// the inputs that reached its contract, so it cannot pass having checked
/// nothing.
@Suite struct FuzzFailureTests {
    @Test func savedUploadFrameFailuresParseWithinEveryBoundOrAreRefused() throws {
        var parsed = 0
        for (name, bytes) in try fuzzReplayInputs("upload-frame") {
            guard let frame = try? UploadFrame.parse(bytes) else { continue }
            parsed += 1
            #expect(frame.encoded == bytes, "\(name)")
            #expect(frame.lastSeq.rawValue <= WireLimits.maximumPosition && frame.count <= WireLimits.maximumMessages, "\(name)")
            _ = try? frame.messages()
        }
        #expect(parsed > 0)
    }

    @Test func savedFramePayloadFailuresDecodeCanonicallyOrAreRefused() throws {
        var decoded = 0
        for (name, bytes) in try fuzzReplayInputs("frame-payload") where bytes.count >= 2 {
            if bytes[0] % 2 == 0 {
                let payload = Array(bytes.dropFirst(2))
                guard let messages = try? FramePayload.decode(payload, count: Int(bytes[1])) else { continue }
                #expect(FramePayload.encode(messages.map(\.encoded)) == payload, "\(name)")
            } else {
                let encoding = Array(bytes.dropFirst())
                guard let message = try? OutboxMessage.decode(encoding) else { continue }
                #expect(message.encoded == encoding, "\(name)")
            }
            decoded += 1
        }
        #expect(decoded > 0)
    }

    /// As the cloud-reply target holds them: a reply signed with the
    /// device's key encodes, signed, to exactly its bytes; an ack's fields
    /// to the bytes before its signed flag; its requests within bounds; a
    /// rejection names an expected position only for a gap or an
    /// equivocation.
    @Test func savedCloudReplyFailuresDecodeOrAreRefused() throws {
        let device = DeviceID("phone-1")
        let key = [UInt8](repeating: 0x5a, count: 32)
        var authentic = 0
        for (name, bytes) in try fuzzReplayInputs("cloud-reply") {
            guard let received = try? CloudReply.decode(bytes, device: device, key: key) else { continue }
            if received.isAuthentic {
                authentic += 1
                #expect(received.reply.encoded(device: device, answering: received.answers, key: key, version: received.version) == bytes, "\(name)")
            }
            switch received.reply {
            case .ack(let ack):
                let fields = received.reply.encoded(device: device, answering: received.answers, key: nil, version: received.version).dropLast()
                #expect(bytes.starts(with: fields), "\(name)")
                #expect(ack.contentRequests.count <= WireLimits.maximumRequests, "\(name)")
            case .rejection(let rejection):
                let code = rejection.error.code
                #expect(rejection.expected == nil || code == .gap || code == .equivocation, "\(name)")
            }
        }
        #expect(authentic > 0)
    }

    @Test func savedInflateFailuresInflateWithinTheLimitOrAreRefused() throws {
        var inflated = 0
        for (name, bytes) in try fuzzReplayInputs("inflate") where !bytes.isEmpty {
            let limit = switch bytes[0] % 8 {
            case 0: 0
            case 1: 1
            case 2: WireLimits.maximumPayloadBytes
            default: Int(bytes.count > 1 ? bytes[1] : 0) | Int(bytes.count > 2 ? bytes[2] : 0) << 8
            }
            let stream = Array(bytes.dropFirst(bytes[0] % 8 > 2 ? 3 : 1))
            if let plain = try? Deflate.decompress(stream, limit: limit) {
                inflated += 1
                #expect(plain.count <= limit, "\(name)")
            }
        }
        #expect(inflated > 0)
    }
}
