import Foundation
import IndexModel

/// What a run kept in its folder (`--out`), written there as `run.json`:
/// the run's seed, digest and replay command, its cloud store and backups,
/// and per device its number, its id and its files, so that a reader needs
/// neither the folder's naming nor the device ids (`docs/SIMULATION.md`, "A
/// run's folder"). Tools find a device's store through it (`--run DIR
/// --device N`).
public struct RunManifest: Hashable, Sendable {
    /// One device's files, named relative to the folder.
    public struct Device: Hashable, Sendable {
        public let number: Int
        public let id: String
        /// The store the device ended the run with.
        public let store: String
        /// The stores its restores replaced, oldest first, each with the
        /// virtual seconds into the run it was replaced at; their files are
        /// gone (a restore writes a new file and removes the old one).
        public let replacedStores: [Replaced]
        /// The backups it kept (the three newest), oldest first.
        public let backups: [Backup]
    }

    public struct Replaced: Hashable, Sendable {
        public let file: String
        public let replacedAtSeconds: Double
    }

    public struct Backup: Hashable, Sendable {
        public let file: String
        /// The epoch the device wrote in when it took the backup.
        public let epoch: UInt64
        public let takenAtSeconds: Double
    }

    /// `simulate` or `drill`.
    public let command: String
    public let seed: UInt64
    public let passed: Bool
    public let digest: String
    public let replay: String
    /// The cloud's store: a file in the folder, a PostgreSQL URL, or the
    /// served cloud's store file as `--cloud-store` gave it.
    public let cloudStore: String
    /// The cloud's kept backups, oldest first (files in the folder).
    public let cloudBackups: [String]
    public let devices: [Device]

    /// The manifest's file name in a run's folder.
    public static let fileName = "run.json"

    /// The device `selector` names: its number, or its id.
    public func device(_ selector: String) -> Device? {
        if let number = Int(selector) { return devices.first { $0.number == number } }
        return devices.first { $0.id == selector }
    }

    public var jsonValue: JSONValue {
        func seconds(_ value: Double) -> JSONValue { .double(value) }
        return .object([
            "command": .string(command),
            "seed": .string(String(seed)),
            "passed": .bool(passed),
            "digest": .string(digest),
            "replay": .string(replay),
            "cloud": .object([
                "store": .string(cloudStore),
                "backups": .array(cloudBackups.map { .string($0) }),
            ]),
            "devices": .array(devices.map { device in
                .object([
                    "number": .integer(Int64(device.number)),
                    "id": .string(device.id),
                    "store": .string(device.store),
                    "replacedStores": .array(device.replacedStores.map { replaced in
                        .object(["file": .string(replaced.file), "replacedAtSeconds": seconds(replaced.replacedAtSeconds)])
                    }),
                    "backups": .array(device.backups.map { backup in
                        .object([
                            "file": .string(backup.file), "epoch": .integer(Int64(clamping: backup.epoch)),
                            "takenAtSeconds": seconds(backup.takenAtSeconds),
                        ])
                    }),
                ])
            }),
        ])
    }
}

extension RunManifest {
    /// Reads a manifest `jsonValue` wrote, checking every field it uses.
    public init(json: JSONValue) throws(SimulationError) {
        func field(_ object: JSONValue?, _ key: String) throws(SimulationError) -> JSONValue {
            guard case .object(let members) = object, let value = members[key] else { throw SimulationError("run.json has no \(key)") }
            return value
        }
        func text(_ object: JSONValue?, _ key: String) throws(SimulationError) -> String {
            guard case .string(let value) = try field(object, key) else { throw SimulationError("run.json: \(key) is not a string") }
            return value
        }
        func integer(_ object: JSONValue?, _ key: String) throws(SimulationError) -> Int64 {
            guard case .integer(let value) = try field(object, key) else { throw SimulationError("run.json: \(key) is not an integer") }
            return value
        }
        func list(_ object: JSONValue?, _ key: String) throws(SimulationError) -> [JSONValue] {
            guard case .array(let values) = try field(object, key) else { throw SimulationError("run.json: \(key) is not a list") }
            return values
        }
        func decimal(_ object: JSONValue?, _ key: String) throws(SimulationError) -> Double {
            switch try field(object, key) {
            case .double(let value): return value
            case .integer(let value): return Double(value)
            default: throw SimulationError("run.json: \(key) is not a number")
            }
        }
        /// A file name in the folder: no directory in it, so that a manifest
        /// someone edited cannot point a tool outside the folder.
        func file(_ object: JSONValue?, _ key: String) throws(SimulationError) -> String {
            let name = try text(object, key)
            guard !name.isEmpty, !name.contains("/"), name != "..", name != "." else {
                throw SimulationError("run.json: \(key) \(TextRule.printable(name)) is not a file name in the run's folder")
            }
            return name
        }
        command = try text(json, "command")
        guard let seed = UInt64(try text(json, "seed")) else { throw SimulationError("run.json: seed is not a number") }
        self.seed = seed
        guard case .bool(let passed) = try field(json, "passed") else { throw SimulationError("run.json: passed is not true or false") }
        self.passed = passed
        digest = try text(json, "digest")
        replay = try text(json, "replay")
        let cloud = try field(json, "cloud")
        cloudStore = try text(cloud, "store")
        var cloudBackups: [String] = []
        for backup in try list(cloud, "backups") {
            guard case .string(let name) = backup, !name.contains("/") else { throw SimulationError("run.json: a cloud backup is not a file name") }
            cloudBackups.append(name)
        }
        self.cloudBackups = cloudBackups
        var devices: [Device] = []
        for device in try list(json, "devices") {
            guard let number = Int(exactly: try integer(device, "number")) else { throw SimulationError("run.json: a device number is out of range") }
            var replaced: [Replaced] = []
            for entry in try list(device, "replacedStores") {
                replaced.append(Replaced(file: try file(entry, "file"), replacedAtSeconds: try decimal(entry, "replacedAtSeconds")))
            }
            var backups: [Backup] = []
            for entry in try list(device, "backups") {
                guard let epoch = UInt64(exactly: try integer(entry, "epoch")) else { throw SimulationError("run.json: a backup's epoch is negative") }
                backups.append(Backup(file: try file(entry, "file"), epoch: epoch, takenAtSeconds: try decimal(entry, "takenAtSeconds")))
            }
            devices.append(Device(number: number, id: try text(device, "id"), store: try file(device, "store"),
                                  replacedStores: replaced, backups: backups))
        }
        self.devices = devices
    }
}

extension Simulator {
    /// What this run's folder holds, once `run()` returned `report`.
    public func manifest(_ report: SimulationReport, command: String = "simulate") -> RunManifest {
        func inFolder(_ path: String) -> String {
            path.hasPrefix(directory + "/") ? String(path.dropFirst(directory.count + 1)) : path
        }
        func seconds(_ milliseconds: Int64) -> Double { Double(milliseconds) / 1_000 }
        let devices = self.devices.map { device in
            let restoredAt = restores.filter { $0.device == device.number }.map(\.at)
            let replaced = restoredAt.enumerated().map { generation, at in
                RunManifest.Replaced(file: Simulator.storeFile(device.number, generation: generation), replacedAtSeconds: seconds(at))
            }
            return RunManifest.Device(
                number: device.number, id: device.name.rawValue,
                store: Simulator.storeFile(device.number, generation: device.restores), replacedStores: replaced,
                backups: device.backups.map { backup in
                    RunManifest.Backup(file: inFolder(backup.path), epoch: backup.epoch.rawValue,
                                       takenAtSeconds: seconds(backup.takenAt - Simulator.start.millisecondsSince1970))
                })
        }
        return RunManifest(command: command, seed: options.seed, passed: report.passed, digest: report.digest,
                           replay: report.replayCommand, cloudStore: cloudHost.storeName.map(inFolder) ?? inFolder(cloudHost.path),
                           cloudBackups: cloudHost.snapshots.map(inFolder), devices: devices)
    }
}
