import CloudCore
import CloudSQLite
import Foundation
import IndexModel
import ScratchDirectory
import Testing

/// The cloud store files among the seeds and saved failures of the
/// device-store-file fuzz target (`fuzzReplayInputs`), read as `journal
/// verify` reads a cloud store, so CI replays them without building the fuzz
/// targets (`docs/SECURITY.md`, "Fuzzing"). Device store files replay in
/// `DeviceStoreTests`. The ingest target's inputs are programs for its
/// harness: they replay with `tools/fuzz/run --replay ingest`, and each
/// finding of it is a test of its own beside `HostileDeviceTests`.
@Suite struct FuzzFailureTests {
    /// A cloud store file opens, verifies and rebuilds to its projections,
    /// or fails with a typed error; the seeds hold at least one that verifies.
    @Test func savedCloudStoreFilesVerifyOrFailWithATypedError() throws {
        let directory = try ScratchDirectory.make("sightline-fuzz-failures")
        var verified = 0
        for (name, bytes) in try fuzzReplayInputs("device-store-file") {
            let path = directory.appendingPathComponent(name.replacingOccurrences(of: "/", with: "-")).path
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            guard CloudIndex.isCloudStore(at: path),
                  let cloud = try? CloudIndex(at: .file(path), options: CloudOptions(readOnly: true)),
                  let verification = try? cloud.verifyLog(), verification.isValid else { continue }
            verified += 1
            if let digest = try? cloud.projectionDigest(), let rebuilt = try? cloud.rebuiltProjectionDigest() {
                #expect(digest == rebuilt || !name.hasPrefix("corpus/"), "\(name): a seed's projections differ from its rebuild")
            }
        }
        #expect(verified > 0)
    }
}
