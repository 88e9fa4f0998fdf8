import ArgumentParser
import CloudCore
import CloudSQLite
import Crypto
import DeviceStore
import Foundation
import IndexModel
import Snapshot

/// `sightline snapshot`: commands on snapshot files themselves.
struct SnapshotFilesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "snapshot",
        abstract: "Look inside a backup snapshot, device's or cloud's, without restoring it.",
        subcommands: [InspectSnapshotCommand.self]
    )
}

/// `sightline snapshot inspect FILE`: the manifest, every check a restore
/// makes, and what the snapshot holds, with nothing of the caller's touched.
struct InspectSnapshotCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Print a snapshot's manifest, verify it as a restore would, and say what it holds.",
        discussion: """
            Works on device and cloud snapshots alike (the manifest says which). The checks are a \
            restore's: the manifest, the checksum (and the key, when sealed), integrity, the journal's \
            or the cloud log's chain, the manifest against the content, the projections against a \
            rebuild. They run on a copy in a scratch directory that is removed; no store is made or \
            changed. Exit 1 when a check fails, naming it.
            """
    )

    @Argument(help: ArgumentHelp("The snapshot file (.slsnap).", valueName: "file"))
    var file: String

    @OptionGroup var keyOption: KeyFileOption
    @OptionGroup var output: JSONOption

    func run() throws {
        let key = try keyOption.key()
        let manifest: JSONObject
        do {
            manifest = try SnapshotFile.manifest(at: file, key: key)
        } catch {
            Output.error("error: \(error.commandLineMessage)")
            // A file that cannot be read is exit 3; one that reads but is not a good snapshot, 1.
            throw error.code == .io ? ExitStatus.storeUnavailable : ExitStatus.checkFailed
        }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("sightline-inspect-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        do {
            try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        } catch {
            Output.error("error: cannot make a scratch directory \(scratch): \(error.localizedDescription)")
            throw ExitStatus.storeUnavailable
        }
        let holds: [(String, JSONValue)]
        if case .string("cloud")? = manifest["kind"] {
            holds = try inspectCloud(key: key, scratch: scratch)
        } else {
            holds = try inspectDevice(key: key, scratch: scratch)
        }
        if output.json {
            var object: JSONObject = ["file": .string(file), "manifest": .object(manifest), "verified": .bool(true)]
            var held = JSONObject()
            for (name, value) in holds { held[name] = value }
            object["holds"] = .object(held)
            Output.json(.object(object))
        } else {
            var rows: [[String]] = [["file", file]]
            for member in manifest.members { rows.append(["manifest " + member.key, Self.text(member.value)]) }
            rows.append(["verified", "yes: manifest, checksum, integrity, chain, manifest against content, projections against a rebuild"])
            for (name, value) in holds { rows.append([name, Self.text(value)]) }
            Output.table(rows)
        }
    }

    /// A device snapshot restored into the scratch directory: its journal up
    /// to the snapshot's head (the restore's own new-epoch event left out).
    private func inspectDevice(key: SymmetricKey?, scratch: String) throws -> [(String, JSONValue)] {
        let path = scratch + "/device.sqlite"
        let report: RestoreReport
        do throws(DeviceStoreError) {
            report = try DeviceStore.restore(snapshot: file, to: path, key: key)
        } catch {
            Output.error("error: the snapshot does not verify: \(error.commandLineMessage)")
            throw [.snapshot, .keyRequired].contains(error.code) ? ExitStatus.checkFailed : ExitStatus.storeUnavailable
        }
        let store = try StoreOption.open(path, options: StoreOptions(readOnly: true))
        var tally = JournalTally()
        do {
            _ = try store.scanJournal { record in
                guard record.seq <= report.manifest.headSeq else { return false }
                tally.add(record)
                return true
            }
        } catch {
            throw error.exit()
        }
        var holds: [(String, JSONValue)] = [
            ("events", .integer(Int64(tally.events))), ("byKind", .object(tally.byKindJSON)), ("epochs", tally.epochsJSON),
        ]
        if let counts = try? store.projectionCounts() {
            holds.append(("items", .integer(Int64(counts.items))))
            holds.append(("activities", .integer(Int64(counts.activities))))
            holds.append(("indexes", .array(counts.indexes.map(JSONValue.string))))
        }
        return holds
    }

    /// A cloud snapshot restored into the scratch directory.
    private func inspectCloud(key: SymmetricKey?, scratch: String) throws -> [(String, JSONValue)] {
        let path = scratch + "/cloud.sqlite"
        do throws(CloudError) {
            _ = try CloudIndex.restore(snapshot: file, to: path, key: key)
            let stats = try CloudIndex(at: .file(path), options: CloudOptions(readOnly: true)).stats()
            return [
                ("apps", .integer(Int64(stats.apps))), ("devices", .integer(Int64(stats.devices))),
                ("logRows", .integer(Int64(stats.logRows))), ("messages", .integer(Int64(stats.messages))),
                ("hashes", .integer(Int64(stats.hashes))), ("publicItems", .integer(Int64(stats.publicItems))),
                ("pages", .integer(Int64(stats.pages))),
            ]
        } catch {
            Output.error("error: the snapshot does not verify: \(error.commandLineMessage)")
            throw [.snapshot, .keyRequired].contains(error.code) ? ExitStatus.checkFailed : ExitStatus.storeUnavailable
        }
    }

    private static func text(_ value: JSONValue) -> String {
        switch value {
        case .string(let text): TextRule.printable(text)
        case .object(let object): object.members.map { "\($0.key) \(text($0.value))" }.joined(separator: ", ")
        case .array(let values): values.map(text).joined(separator: ", ")
        default: JSONWriter.compact(value)
        }
    }
}
