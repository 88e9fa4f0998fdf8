// Fuzz target snapshot-restore: a device snapshot file restored as
// `sightline device restore --snapshot FILE --db PATH` does, into a scratch
// directory.
//
// The first byte chooses what the rest is. Even: the snapshot file itself
// (container, manifest, chunks; sealed snapshots open with the target's key,
// as with --key-file). Odd: the content of a store file, which the target
// wraps in a well-formed snapshot with a real store's manifest, so the fuzzer
// reaches the restore's own checks (integrity, journal chain, manifest,
// projections) behind the container's checksums. A restore either fails with
// a typed error and leaves nothing at the destination, or leaves a store
// that opens and verifies.
import Crypto
import DeviceStore
import Foundation
import IndexModel
import Snapshot

enum Target {
    /// The key a sealed snapshot opens with (`--key-file`).
    static var key: SymmetricKey { SymmetricKey(data: [UInt8](repeating: 0x42, count: 32)) }
    static let clock = ManualClock(Stores.start.adding(milliseconds: 86_400_000))

    /// The manifest of a snapshot of a real store, for wrapping fuzzed content.
    static let manifest: JSONObject = {
        let store = scratchDirectory + "/manifest-store.sqlite"
        let snapshot = scratchDirectory + "/manifest.snapshot"
        do {
            try Stores.deviceStore(at: store, operations: 12)
            try DeviceStore(at: .file(store), options: StoreOptions(clock: ManualClock(Stores.start))).snapshot(to: snapshot)
            let manifest = try SnapshotFile.manifest(at: snapshot)
            removeStoreFiles(store)
            try? FileManager.default.removeItem(atPath: snapshot)
            return manifest
        } catch {
            fatalError("fuzz: cannot make a snapshot manifest: \(error)")
        }
    }()

    static func run(_ bytes: [UInt8]) {
        guard let mode = bytes.first else { return }
        let snapshot = scratchDirectory + "/input.snapshot"
        let destination = scratchDirectory + "/restored.sqlite"
        try? FileManager.default.removeItem(atPath: snapshot)
        removeStoreFiles(destination)
        if mode % 2 == 0 {
            guard FileManager.default.createFile(atPath: snapshot, contents: Data(bytes.dropFirst())) else {
                fatalError("fuzz: cannot write \(snapshot)")
            }
        } else {
            let content = scratchDirectory + "/content.sqlite"
            guard FileManager.default.createFile(atPath: content, contents: Data(bytes.dropFirst())) else {
                fatalError("fuzz: cannot write \(content)")
            }
            do {
                try SnapshotFile.write(source: content, destination: snapshot, manifest: manifest, key: nil, workers: 1)
            } catch {
                fatalError("fuzz: cannot wrap \(bytes.count - 1) bytes in a snapshot: \(error)")
            }
        }
        let sealed = (try? SnapshotFile.manifest(at: snapshot))?["encryption"].map { $0 != .null } ?? false
        do {
            _ = try DeviceStore.restore(snapshot: snapshot, to: destination, key: sealed ? key : nil,
                                        options: StoreOptions(clock: clock, random: SeededRandom(seed: 5)))
        } catch {
            contract(!FileManager.default.fileExists(atPath: destination), "a failed restore left a file at the destination: \(error)")
            return
        }
        do {
            let store = try DeviceStore(at: .file(destination), options: StoreOptions(clock: clock, readOnly: true))
            let verification = try store.verifyJournal()
            contract(verification.isValid, "a restored store does not verify: \(verification.firstProblem.map { "\($0)" } ?? "")")
            let (stored, rebuilt) = (try store.projectionDigest(), try store.rebuiltProjectionDigest())
            contract(stored == rebuilt, "a restored store's projections differ from a rebuild")
        } catch {
            contract(false, "a restored store cannot be read: \(error)")
        }
    }

    /// Snapshots `device snapshot` writes, plain and sealed, and a store's
    /// content for the wrapping mode; a store with purged rows, wrapped; and
    /// the format-4 snapshot fixture (`Journal/fixtures/device-v4.slsnap`),
    /// whose restore checks the old chain and chains the journal anew.
    static func seeds() throws -> [(String, [UInt8])] {
        let store = scratchDirectory + "/seed.sqlite"
        let snapshot = scratchDirectory + "/seed.snapshot"
        try Stores.deviceStore(at: store, operations: 12)
        try Stores.compact(store)
        var seeds: [(String, [UInt8])] = [("content-small", [1] + (try Stores.contents(store)))]
        let device = try DeviceStore(at: .file(store), options: StoreOptions(clock: ManualClock(Stores.start)))
        try device.snapshot(to: snapshot)
        seeds.append(("snapshot-plain", [0] + (try Stores.contents(snapshot))))
        try device.snapshot(to: snapshot, key: key)
        seeds.append(("snapshot-sealed", [2] + (try Stores.contents(snapshot))))
        try Stores.purgedDeviceStore(at: store)
        try Stores.compact(store)
        seeds.append(("content-purged", [1] + (try Stores.contents(store))))
        let root = ProcessInfo.processInfo.environment["SIGHTLINE_ROOT"] ?? FileManager.default.currentDirectoryPath
        seeds.append(("snapshot-format-4", [0] + (try Stores.contents(root + "/Journal/fixtures/device-v4.slsnap"))))
        return seeds
    }
}
