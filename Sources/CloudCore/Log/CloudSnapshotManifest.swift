import Crypto
import Foundation
import IndexModel
import Snapshot
import SyncWire

/// What a cloud snapshot's manifest says.
public struct CloudSnapshotManifest: Hashable, Sendable {
    public let logRows: Int64
    public let logHeadHash: String
    public let devices: Int64
    public let threshold: Int64
    public let createdAt: Timestamp
    public let contentBytes: Int64
    public let encrypted: Bool

    package init(_ object: JSONObject) throws(CloudError) {
        func integer(_ key: String) throws(CloudError) -> Int64 {
            guard case .integer(let value)? = object[key], value >= 0 else {
                throw CloudError(.snapshot, "the snapshot manifest has no \(key)")
            }
            return value
        }
        guard object["kind"] == .string("cloud") else {
            throw CloudError(.snapshot, "this is not a cloud snapshot (kind \(object["kind"].map { String(JSONWriter.compact($0).prefix(64)) } ?? "missing"))")
        }
        guard case .string(let hash)? = object["logHeadHash"], case .string(let created)? = object["createdAt"],
              let instant = ISO8601.parse(created) else {
            throw CloudError(.snapshot, "the snapshot manifest has no logHeadHash or createdAt")
        }
        logRows = try integer("logRows")
        logHeadHash = hash
        devices = try integer("devices")
        threshold = try integer("threshold")
        createdAt = instant
        contentBytes = try integer("contentBytes")
        encrypted = object["encryption"].map { $0 != .null } ?? false
    }
}

/// A consistent copy of the cloud store made for a backup snapshot, not yet
/// written as one (`CloudIndex.copyForSnapshot(to:)`). Writing it touches
/// only files, so it may run on any thread while the cloud keeps serving.
public struct CloudSnapshotCopy: Sendable {
    /// Where the snapshot will be.
    public let destination: String
    package let copyPath: String
    package let manifest: JSONObject
    /// Each device's newest epoch and the last seq of it the copy holds.
    package let held: [HeldPosition]

    package struct HeldPosition: Sendable {
        package let app: AppID
        package let device: DeviceID
        package let epoch: Int64
        package let seq: Int64

        package init(app: AppID, device: DeviceID, epoch: Int64, seq: Int64) {
            self.app = app
            self.device = device
            self.epoch = epoch
            self.seq = seq
        }
    }

    package init(destination: String, copyPath: String, manifest: JSONObject, held: [HeldPosition]) {
        self.destination = destination
        self.copyPath = copyPath
        self.manifest = manifest
        self.held = held
    }

    /// A cloud snapshot's manifest (`Journal/FORMAT.md`, "Snapshot files"):
    /// `logRows` is every app's rows, `logHeadHash` `CloudLog.headsDigest`
    /// of every app's chain head.
    package static func manifest(heads: [CloudLogHead], devices: Int64, threshold: Int, createdAt: Timestamp) -> JSONObject {
        [
            "format": .string("sightline-snapshot"),
            "version": .integer(1),
            "kind": .string("cloud"),
            "logRows": .integer(heads.reduce(0) { $0 + $1.rows }),
            "logHeadHash": .string(CloudLog.headsDigest(heads)),
            "devices": .integer(devices),
            "threshold": .integer(Int64(threshold)),
            "createdAt": .string(createdAt.description),
        ]
    }

    /// The path a copy for a snapshot at `destination` is made at.
    package static func copyPath(for destination: String) -> String {
        destination + ".copy-\(ProcessInfo.processInfo.processIdentifier)"
    }

    /// Writes the snapshot file from the copy (`SnapshotFile.write`, with
    /// `workers` threads deflating) and removes the copy. The snapshot is
    /// not yet the cloud's backup: `CloudIndex.recordSnapshot(_:)` makes it so.
    public func write(key: SymmetricKey? = nil, workers: Int = SnapshotFile.defaultWorkers) throws(CloudError) {
        defer { StoreFiles.remove(copyPath) }
        do {
            try SnapshotFile.write(source: copyPath, destination: destination, manifest: manifest, key: key, workers: workers)
        } catch {
            throw CloudError(.snapshot, error.message)
        }
    }

    /// Removes the copy and any snapshot written from it.
    public func discard() {
        StoreFiles.remove(copyPath)
        StoreFiles.remove(destination)
    }
}
