import ArgumentParser
import Crypto
import DeviceStore
import Foundation
import IndexModel
import Snapshot

/// `--key-file`: a 32-byte AES-256 key (raw, or 64 hexadecimal digits).
struct KeyFileOption: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("A file with a 32-byte key (raw or 64 hex digits) to seal or open the snapshot with AES-256-GCM.",
                                            valueName: "path"))
    var keyFile: String?

    func key() throws -> SymmetricKey? {
        guard let keyFile else { return nil }
        do {
            return try SnapshotFile.key(fromFile: keyFile)
        } catch {
            Output.error("error: \(error.commandLineMessage)")
            throw ExitStatus.invalidInput
        }
    }
}

struct SnapshotCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "snapshot",
        abstract: "Write a backup snapshot of a device store while it stays in use.",
        discussion: """
            SQLite's backup API makes a consistent copy; it is cut into 4 MiB chunks, each \
            deflated (and sealed with AES-256-GCM when --key-file is given), followed by a \
            manifest: device, epoch, journal head seq and hash, outbox cursor, client states, \
            creation time, content length and SHA-256. The file is written beside --out, \
            fsynced, renamed into place and the directory fsynced. The store then records that a \
            backup covers its journal through the head seq, which `journal purge` waits for. \
            Format: Journal/FORMAT.md.
            """
    )

    @OptionGroup var store: StoreOption
    @OptionGroup var keyOption: KeyFileOption
    @OptionGroup var output: JSONOption

    @Option(name: .long, help: ArgumentHelp("The snapshot file to write.", valueName: "path"))
    var out: String

    func run() throws {
        let key = try keyOption.key()
        // Opened for writing to record the backup, unless it does not exist (a
        // snapshot never creates a store) or cannot be written (a store on a
        // read-only medium is still backed up).
        var writable: DeviceStore?
        if FileManager.default.fileExists(atPath: store.db) {
            writable = try? DeviceStore(at: .file(store.db), options: StoreOptions(clock: SystemClock()))
            if writable == nil {
                Output.error("note: \(store.db) cannot be opened for writing, so it will not record this backup (journal purge waits for one it records)")
            }
        }
        let device = try writable ?? store.openReadOnly()
        let manifest: DeviceSnapshotManifest
        do {
            manifest = try device.snapshot(to: out, key: key)
        } catch {
            throw error.exit()
        }
        if output.json {
            Output.json(manifest.jsonValue)
        } else {
            Output.line("snapshot \(out): device \(manifest.device) epoch \(manifest.epoch) head seq \(manifest.headSeq), "
                        + "\(manifest.contentBytes) bytes" + (manifest.encrypted ? ", encrypted" : ""))
        }
        // The backup may have made deletions old enough to purge eligible.
        if writable != nil { AutomaticPurge.run(device) }
    }
}

struct RestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Restore a device store from a snapshot, verifying everything first.",
        discussion: """
            Checks the manifest, the checksum (and the key), decompresses into a temporary \
            store, runs PRAGMA integrity_check, verifies the journal's hash chain and that the \
            projections equal a rebuild, and only then replaces --db in one rename. The \
            restored store begins a new epoch with a storeRestored event. An existing store \
            needs --force and is kept beside it as DB.replaced-<time>; what it had purged is deleted \
            and purged again. --to-seq restores an \
            earlier point of the snapshot's journal; --to-time the point at an instant, on a call \
            boundary. A bad snapshot is refused (exit 1) and \
            --db is left exactly as it was.
            """
    )

    @Option(name: .long, help: ArgumentHelp("The snapshot to restore.", valueName: "path"))
    var snapshot: String

    @OptionGroup var store: StoreOption
    @OptionGroup var keyOption: KeyFileOption
    @OptionGroup var output: JSONOption

    @Flag(name: .long, help: "Replace an existing store (it is kept beside the restored one).")
    var force = false

    @Option(name: .long, help: ArgumentHelp("Restore the snapshot's journal only up to this seq.", valueName: "seq"))
    var toSeq: UInt64?

    @Option(name: .long, help: ArgumentHelp(
        "Restore the store as it was at this instant (ISO 8601): every call made by then, none after; a call is never split.",
        valueName: "instant"))
    var toTime: String?

    func validate() throws {
        guard toSeq == nil || toTime == nil else { throw ValidationError("--to-seq and --to-time exclude each other") }
        if let toTime, ISO8601.parse(toTime) == nil {
            throw ValidationError("--to-time must be an ISO 8601 instant such as 2026-11-22T09:30:00Z (got \"\(toTime)\")")
        }
    }

    func run() throws {
        let key = try keyOption.key()
        let report: RestoreReport
        do {
            report = try DeviceStore.restore(snapshot: snapshot, to: store.db, force: force, toSeq: toSeq.map(Seq.init),
                                             toTime: toTime.flatMap(ISO8601.parse), key: key)
        } catch {
            Output.error("error: \(error.commandLineMessage)")
            throw [.snapshot, .keyRequired, .destinationExists].contains(error.code) ? ExitStatus.checkFailed : ExitStatus.storeUnavailable
        }
        if output.json {
            var object: JSONObject = [
                "snapshot": report.manifest.jsonValue,
                "headSeq": .integer(Int64(report.head.rawValue)),
                "epoch": .integer(Int64(clamping: report.newEpoch.rawValue)),
                "phases": .array(report.phases.map { phase in
                    .object(["phase": .string(phase.name), "seconds": .double(phase.duration.seconds)])
                }),
            ]
            object["replacedStoreKeptAt"] = report.replacedStoreKeptAt.map(JSONValue.string) ?? .null
            object["restoredThrough"] = report.restoredThrough.map { .integer(Int64(clamping: $0.rawValue)) } ?? .null
            object["deletedAgain"] = .array(report.deletedAgain.map { .string($0.description) })
            object["activitiesDeletedAgain"] = .array(report.activitiesDeletedAgain.map(JSONValue.string))
            object["purgedAgain"] = report.purge.map { .array($0.purgedSeqs.map { .integer(Int64(clamping: $0.rawValue)) }) } ?? .array([])
            Output.json(.object(object))
        } else {
            Output.line("restored \(store.db) from \(snapshot): device \(report.manifest.device), snapshot head seq "
                        + "\(report.manifest.headSeq), now epoch \(report.newEpoch) at seq \(report.head)")
            if let through = report.restoredThrough { Output.line("the snapshot's journal was restored through seq \(through)") }
            if let kept = report.replacedStoreKeptAt { Output.line("the replaced store is kept at \(kept)") }
            if !report.deletedAgain.isEmpty {
                Output.line("deleted again \(report.deletedAgain.count) item(s) the replaced store had purged: "
                            + Output.list(report.deletedAgain.map(\.description), whole: "--json lists them all"))
            }
            if !report.activitiesDeletedAgain.isEmpty {
                Output.line("deleted again \(report.activitiesDeletedAgain.count) activit\(report.activitiesDeletedAgain.count == 1 ? "y" : "ies") "
                            + "the replaced store had purged: " + Output.list(report.activitiesDeletedAgain, whole: "--json lists them all"))
            }
            if let purge = report.purge, !purge.purgedSeqs.isEmpty {
                Output.line("purged again \(purge.purgedSeqs.count) event(s) of \(purge.items.count) item(s) the replaced store had purged")
            }
        }
    }
}

extension DeviceSnapshotManifest {
    var jsonValue: JSONValue {
        .object([
            "device": .string(device.rawValue),
            "app": .string(app.rawValue),
            "epoch": .integer(Int64(clamping: epoch.rawValue)),
            "headSeq": .integer(Int64(clamping: headSeq.rawValue)),
            "headHash": .string(headHash),
            "outboxHead": .string(outboxHead),
            "acknowledged": .string(acknowledged),
            "durable": .string(durable),
            "createdAt": .string(createdAt.description),
            "contentBytes": .integer(contentBytes),
            "contentSHA256": .string(contentSHA256),
            "encrypted": .bool(encrypted),
        ])
    }
}
