import ByteCoding
import Foundation
import IndexModel
import SyncWire
import ScratchDirectory
import Testing

/// The inputs the fuzz targets over SyncWire saved as failures
/// (`tools/fuzz/failures/TARGET/`), fed to the functions each target calls and
/// held to its contracts, so CI replays them without building the fuzz targets
/// (`docs/SECURITY.md`, "Fuzzing"). A target's own test of a finding names the
/// behaviour; these keep every saved input replaying.
@Suite struct FuzzFailureTests {
    @Test func savedUploadFrameFailuresParseWithinEveryBoundOrAreRefused() throws {
        for (name, bytes) in try savedFuzzFailures("upload-frame") {
            guard let frame = try? UploadFrame.parse(bytes) else { continue }
            #expect(frame.encoded == bytes, "\(name)")
            #expect(frame.lastSeq.rawValue <= WireLimits.maximumPosition && frame.count <= WireLimits.maximumMessages, "\(name)")
            _ = try? frame.messages()
        }
    }

    @Test func savedFramePayloadFailuresDecodeCanonicallyOrAreRefused() throws {
        for (name, bytes) in try savedFuzzFailures("frame-payload") where bytes.count >= 2 {
            if bytes[0] % 2 == 0 {
                let payload = Array(bytes.dropFirst(2))
                guard let messages = try? FramePayload.decode(payload, count: Int(bytes[1])) else { continue }
                #expect(FramePayload.encode(messages.map(\.encoded)) == payload, "\(name)")
            } else {
                let encoding = Array(bytes.dropFirst())
                guard let message = try? OutboxMessage.decode(encoding) else { continue }
                #expect(message.encoded == encoding, "\(name)")
            }
        }
    }

    @Test func savedCloudReplyFailuresDecodeOrAreRefused() throws {
        for (_, bytes) in try savedFuzzFailures("cloud-reply") {
            _ = try? CloudReply.decode(bytes, device: DeviceID("phone-1"), key: [UInt8](repeating: 0x5a, count: 32))
        }
    }

    @Test func savedInflateFailuresInflateWithinTheLimitOrAreRefused() throws {
        for (name, bytes) in try savedFuzzFailures("inflate") where !bytes.isEmpty {
            let limit = switch bytes[0] % 8 {
            case 0: 0
            case 1: 1
            case 2: WireLimits.maximumPayloadBytes
            default: Int(bytes.count > 1 ? bytes[1] : 0) | Int(bytes.count > 2 ? bytes[2] : 0) << 8
            }
            let stream = Array(bytes.dropFirst(bytes[0] % 8 > 2 ? 3 : 1))
            if let plain = try? Deflate.decompress(stream, limit: limit) {
                #expect(plain.count <= limit, "\(name)")
            }
        }
    }
}
