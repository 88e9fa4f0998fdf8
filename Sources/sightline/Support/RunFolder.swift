import ArgumentParser
import CloudPostgres
import Foundation
import IndexModel
import Simulation
import Synchronization

/// `--run DIR` (with `--device`): a store named through a run folder's
/// `run.json` (`RunManifest`) rather than by its file name.
enum RunFolder {
    /// The largest `run.json` read: about 200 bytes a device, with room.
    static let manifestLimit = 1 << 30

    /// The manifests read, by folder: a command reads its store's path more
    /// than once, and the manifest is read and checked once.
    private static let read = Mutex<[String: RunManifest]>([:])

    /// The manifest in `folder`.
    static func manifest(_ folder: String) throws -> RunManifest {
        if let known = read.withLock({ $0[folder] }) { return known }
        let manifest = try load(folder)
        read.withLock { $0[folder] = manifest }
        return manifest
    }

    private static func load(_ folder: String) throws -> RunManifest {
        let path = (folder as NSString).appendingPathComponent(RunManifest.fileName)
        guard let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int else {
            throw ValidationError("--run \(folder) has no \(RunManifest.fileName): give the folder a simulate or drill --out wrote")
        }
        guard size <= manifestLimit, let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError("--run \(folder): \(path) cannot be read (\(size) bytes; the limit is \(manifestLimit))")
        }
        do {
            return try RunManifest(json: try JSONReader.parse([UInt8](data)))
        } catch let error as JSONSyntaxError {
            throw ValidationError("--run \(folder): \(path) is not JSON: \(error)")
        } catch {
            throw ValidationError("--run \(folder): \(error)")
        }
    }

    /// Checks the choice a store option group was given: `--db`, or `--run`
    /// (with `--device` only where `devices` is true), one of them and the
    /// store the run's manifest names for it. `what` names the store.
    static func validate(path: String?, run: String?, device: String?, devices: Bool, what: String) throws {
        switch (path, run) {
        case (nil, nil):
            throw ValidationError("give the \(what): --db PATH, or --run DIR" + (devices ? " (with --device N for a device's)" : ""))
        case (.some, .some):
            throw ValidationError("--db and --run both name the \(what): give one")
        case (.some, nil):
            if device != nil { throw ValidationError("--device goes with --run") }
        case (nil, .some(let run)):
            _ = try store(run: run, device: device)
        }
    }

    /// The store a validated option group names: `path` as `--db` gave it,
    /// or the one the run's manifest names (a manifest changed since the
    /// check is reported where the store is opened).
    static func resolved(path: String?, run: String?, device: String?) -> String {
        if let path { return path }
        guard let run else { return "" }
        return (try? store(run: run, device: device)) ?? (run as NSString).appendingPathComponent(RunManifest.fileName)
    }

    /// The store `device` names in the run at `folder` (by number or id), or
    /// the run's cloud store when `device` is nil.
    static func store(run folder: String, device: String?) throws -> String {
        let manifest = try manifest(folder)
        guard let device else { return cloudStore(manifest, folder: folder) }
        guard let found = manifest.device(device) else {
            let numbers = manifest.devices.isEmpty ? "none" : "0…\(manifest.devices.count - 1)"
            throw ValidationError("--device \(TextRule.printable(device)): the run in \(folder) has no such device (numbers: \(numbers), or an id)")
        }
        return (folder as NSString).appendingPathComponent(found.store)
    }

    /// Writes a finished run's documents into its folder: the report as JSON
    /// (`report`, the `--json` document) and HTML, and the manifest.
    static func write(into folder: String, report: JSONValue, html: String, manifest: RunManifest) throws {
        for (name, text) in [("report.json", JSONWriter.pretty(report) + "\n"), ("report.html", html),
                             (RunManifest.fileName, JSONWriter.pretty(manifest.jsonValue) + "\n")] {
            let path = (folder as NSString).appendingPathComponent(name)
            do {
                try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            } catch {
                Output.error("error: cannot write \(path): \(error.localizedDescription)")
                throw ExitStatus.storeUnavailable
            }
        }
    }

    /// The run's cloud store: a file in the folder, a PostgreSQL URL, or a
    /// served cloud's store as the run was given it.
    static func cloudStore(_ manifest: RunManifest, folder: String) -> String {
        let store = manifest.cloudStore
        if PostgresLocation.isPostgresURL(store) || store.hasPrefix("/") { return store }
        return (folder as NSString).appendingPathComponent(store)
    }
}
