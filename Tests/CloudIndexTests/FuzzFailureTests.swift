import CloudIndex
import Foundation
import IndexModel
import ScratchDirectory
import Testing

/// The cloud store files among the inputs the device-store-file fuzz target
/// saved as failures (`tools/fuzz/failures/device-store-file/`), read as
/// `journal verify` reads a cloud store, so CI replays them without building
/// the fuzz targets (`docs/SECURITY.md`, "Fuzzing"). Device store files replay
/// in `DeviceStoreTests`. The ingest target's inputs are programs for its
/// harness: they replay with `tools/fuzz/run --replay ingest`, and each
/// finding of it is a test of its own beside `HostileDeviceTests`.
@Suite struct FuzzFailureTests {
    @Test func savedCloudStoreFilesVerifyOrFailWithATypedError() throws {
        let directory = try ScratchDirectory.make("sightline-fuzz-failures")
        for (name, bytes) in try savedFuzzFailures("device-store-file") {
            let path = directory.appendingPathComponent(name).path
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            guard CloudIndex.isCloudStore(at: path),
                  let cloud = try? CloudIndex(at: .file(path), options: CloudOptions(readOnly: true)),
                  let verification = try? cloud.verifyLog(), verification.isValid else { continue }
            _ = try? cloud.projectionDigest()
            _ = try? cloud.rebuiltProjectionDigest()
        }
    }
}
