import Crypto
import DeviceStore
import Foundation
import IndexModel
import Snapshot
import ScratchDirectory
import Testing
import Workloads

/// The seeds and saved failures of the store fuzz targets
/// (`fuzzReplayInputs`), fed to the functions each target calls and
/// held to its contracts, so CI replays them without building the fuzz targets
/// (`docs/SECURITY.md`, "Fuzzing"). Cloud store files among the
/// device-store-file failures replay in `CloudTests`.
@Suite struct FuzzFailureTests {
    static let start = Timestamp(millisecondsSince1970: 1_795_000_000_000)

    /// As `journal verify` reads a store file: opened read-only, what a purge
    /// and a restore read of its purged rows, the journal verified, then the
    /// projections against a rebuild. Each step ends in a
    /// value or a typed error; a cloud store is refused as a device store
    /// (`CloudTests` replays it as a cloud store).
    @Test func savedDeviceStoreFileFailuresVerifyOrFailWithATypedError() throws {
        let directory = try temporaryDirectory()
        var verified = 0
        for (name, bytes) in try fuzzReplayInputs("device-store-file") {
            let path = directory.appendingPathComponent(name.replacingOccurrences(of: "/", with: "-")).path
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            guard let store = try? DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(FuzzFailureTests.start), readOnly: true))
            else { continue }
            _ = try? store.purge(dryRun: true)
            _ = try? store.purgedPayloadHashes()
            guard let verification = try? store.verifyJournal(), verification.isValid else { continue }
            verified += 1
            _ = try? store.projectionDigest()
            _ = try? store.rebuiltProjectionDigest()
        }
        #expect(verified > 0)
    }

    /// As `device restore` restores a snapshot file (first byte even), or a
    /// store file wrapped in a well-formed snapshot (odd): a failure leaves
    /// nothing at the destination, and a restored store verifies.
    @Test func savedSnapshotRestoreFailuresRestoreAStoreThatVerifiesOrLeaveNothing() throws {
        let directory = try temporaryDirectory()
        let failures = try fuzzReplayInputs("snapshot-restore")
        var restored = 0
        let manifest = failures.contains { $0.1.first.map { $0 % 2 == 1 } ?? false } ? try realManifest(in: directory) : [:]
        for (input, bytes) in failures where !bytes.isEmpty {
            let name = input.replacingOccurrences(of: "/", with: "-")
            let snapshot = directory.appendingPathComponent(name + ".snapshot").path
            let destination = directory.appendingPathComponent(name + ".restored").path
            if bytes[0] % 2 == 0 {
                try Data(bytes.dropFirst()).write(to: URL(fileURLWithPath: snapshot))
            } else {
                let content = directory.appendingPathComponent(name + ".content").path
                try Data(bytes.dropFirst()).write(to: URL(fileURLWithPath: content))
                try SnapshotFile.write(source: content, destination: snapshot, manifest: manifest, key: nil, workers: 1)
            }
            let sealed = (try? SnapshotFile.manifest(at: snapshot))?["encryption"].map { $0 != .null } ?? false
            let clock = ManualClock(FuzzFailureTests.start.adding(milliseconds: 86_400_000))
            do {
                _ = try DeviceStore.restore(snapshot: snapshot, to: destination,
                                            key: sealed ? SymmetricKey(data: [UInt8](repeating: 0x42, count: 32)) : nil,
                                            options: StoreOptions(clock: clock, random: SeededRandom(seed: 5)))
            } catch {
                #expect(!FileManager.default.fileExists(atPath: destination), "\(name): \(error)")
                continue
            }
            let store = try DeviceStore(at: .file(destination), options: StoreOptions(clock: clock, readOnly: true))
            #expect(try store.verifyJournal().isValid, "\(name)")
            #expect(try store.projectionDigest() == store.rebuiltProjectionDigest(), "\(name)")
            restored += 1
        }
        #expect(restored > 0)
    }

    /// The manifest of a snapshot of the store the snapshot-restore target
    /// wraps fuzzed content with (`tools/fuzz/Support/Stores.swift`).
    private func realManifest(in directory: URL) throws -> JSONObject {
        let path = directory.appendingPathComponent("manifest-store.sqlite").path
        let snapshot = directory.appendingPathComponent("manifest.snapshot").path
        do {
            let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(FuzzFailureTests.start),
                                                                              random: SeededRandom(seed: 1), durability: .normal))
            var options = SyntheticWorkload.Options()
            options.itemsPerIndex = 3
            var workload = SyntheticWorkload(seed: 2, options: options)
            for _ in 0..<12 { _ = try? store.perform(workload.nextOperation()) }
            _ = try store.record(UserActivity(activityType: "com.example.read", title: "A page", keywords: ["page"],
                                              webpageURL: "https://example.com/a", eligibleForSearch: true,
                                              eligibleForPublicIndexing: true))
        }
        try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(FuzzFailureTests.start))).snapshot(to: snapshot)
        return try SnapshotFile.manifest(at: snapshot)
    }
}
