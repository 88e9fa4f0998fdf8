import ArgumentParser
import CloudPostgres
import Foundation
import IndexModel
import Simulation

/// `--run DIR` (with `--device`): a store named through a run folder's
/// `run.json` (`RunManifest`) rather than by its file name.
enum RunFolder {
    /// The largest `run.json` read: about 200 bytes a device, with room.
    static let manifestLimit = 1 << 30

    /// The manifest in `folder`.
    static func manifest(_ folder: String) throws -> RunManifest {
        let path = (folder as NSString).appendingPathComponent(RunManifest.fileName)
        guard let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int else {
            throw ValidationError("--run \(folder) has no \(RunManifest.fileName): give the folder a simulate --out wrote")
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

    /// The run's cloud store: a file in the folder, a PostgreSQL URL, or a
    /// served cloud's store as the run was given it.
    static func cloudStore(_ manifest: RunManifest, folder: String) -> String {
        let store = manifest.cloudStore
        if PostgresLocation.isPostgresURL(store) || store.hasPrefix("/") { return store }
        return (folder as NSString).appendingPathComponent(store)
    }
}
