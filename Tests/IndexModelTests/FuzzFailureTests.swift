import Foundation
import ScratchDirectory
import Testing
@testable import IndexModel

/// The inputs the fuzz targets over IndexModel saved as failures
/// (`tools/fuzz/failures/TARGET/`), fed to the functions each target calls and
/// held to its contracts, so CI replays them without building the fuzz targets
/// (`docs/SECURITY.md`, "Fuzzing").
@Suite struct FuzzFailureTests {
    /// The first byte chooses the decoder, as in the event-decoder target.
    @Test func savedEventDecoderFailuresDecodeCanonicallyOrAreRefused() throws {
        for (name, bytes) in try savedFuzzFailures("event-decoder") where !bytes.isEmpty {
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
        }
    }

    /// A parsed operation prints as one JSON Lines line (no \n or \r) that
    /// parses back to the same operation.
    @Test func savedOperationsFailuresPrintAsOneLineThatParsesBackOrAreRefused() throws {
        for (name, bytes) in try savedFuzzFailures("operations") {
            guard let operation = try? OperationParser.parse(line: bytes) else { continue }
            let printed = Array(operation.jsonLine.utf8)
            #expect(!printed.contains(0x0A) && !printed.contains(0x0D), "\(name)")
            #expect(try OperationParser.parse(line: printed) == operation, "\(name)")
        }
    }
}
