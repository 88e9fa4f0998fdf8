import Foundation
import ScratchDirectory
import Testing
@testable import IndexModel

/// The seeds and saved failures of the fuzz targets over IndexModel
/// (`fuzzReplayInputs`), fed to the functions each target calls and
/// held to its contracts, so CI replays them without building the fuzz targets
/// (`docs/SECURITY.md`, "Fuzzing").
@Suite struct FuzzFailureTests {
    /// The first byte chooses the decoder, as in the event-decoder target.
    @Test func savedEventDecoderFailuresDecodeCanonicallyOrAreRefused() throws {
        var decoded = 0
        for (name, bytes) in try fuzzReplayInputs("event-decoder") where !bytes.isEmpty {
            let encoding = Array(bytes.dropFirst())
            switch bytes[0] % 3 {
            case 0:
                guard let event = try? EventCodec.decode(encoding) else { continue }
                #expect(EventCodec.encode(event) == encoding, "\(name)")
            case 1:
                guard let attributes = try? EventCodec.decodeAttributes(encoding) else { continue }
                #expect(EventCodec.encode(attributes) == encoding, "\(name)")
            default:
                guard let activity = try? EventCodec.decodeActivity(encoding) else { continue }
                #expect(EventCodec.encode(activity) == encoding, "\(name)")
            }
            decoded += 1
        }
        #expect(decoded > 0)
    }

    /// A parsed operation prints as one JSON Lines line (no \n or \r) that
    /// parses back to the same operation.
    @Test func savedOperationsFailuresPrintAsOneLineThatParsesBackOrAreRefused() throws {
        var parsed = 0
        for (name, bytes) in try fuzzReplayInputs("operations") {
            guard let operation = try? OperationParser.parse(line: bytes) else { continue }
            parsed += 1
            let printed = Array(operation.jsonLine.utf8)
            #expect(!printed.contains(0x0A) && !printed.contains(0x0D), "\(name)")
            #expect(try OperationParser.parse(line: printed) == operation, "\(name)")
        }
        #expect(parsed > 0)
    }
}
