import Foundation
import ArgumentParser
import CloudIndex
import DeviceStore
import IndexModel

struct PurgeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge",
        abstract: "Purge deleted items' content from a device store's journal once a backup covers their deletion.",
        discussion: """
            Every journal row that indexed or updated an item deleted (or expired) since keeps its seq, kind, \
            time and hashes, and its payload becomes the item's index and identifier only; the chain still \
            verifies. Only deletions that a backup snapshot of the store covers (`device snapshot`) are purged, \
            so restoring the latest backup never brings the item back. The store file and its WAL keep no copy \
            of what went (secure_delete, then a checkpoint that empties the WAL). --dry-run says what would go. \
            Exit status 3: the store cannot be opened or written.
            """
    )

    @OptionGroup var store: StoreOption
    @OptionGroup var output: JSONOption

    @Flag(name: .long, help: "Say what would be purged and change nothing.")
    var dryRun = false

    func run() throws {
        if CloudJournal.isCloudStore(store.db) {
            Output.error("""
                error: \(store.db) is a cloud store; journal purge works on device stores (a cloud store's withdrawn \
                content is not purged)
                """)
            throw ExitStatus.invalidInput
        }
        // A purge never creates a store: a missing one is refused as the read-only commands refuse it.
        let device = dryRun || !FileManager.default.fileExists(atPath: store.db)
            ? try store.openReadOnly() : try StoreOption.open(store.db, options: StoreOptions(clock: SystemClock()))
        let report: PurgeReport
        do {
            report = try device.purge(dryRun: dryRun)
        } catch {
            throw error.exit()
        }
        if output.json {
            Output.json(.object([
                "dryRun": .bool(dryRun),
                "purgedSeqs": .array(report.purgedSeqs.map { .integer(Int64($0.rawValue)) }),
                "items": .array(report.items.map(Self.json)),
                "bytes": .integer(Int64(report.bytes)),
                "backedUpThrough": .integer(Int64(report.backedUpThrough.rawValue)),
                "waitingForBackup": .array(report.waitingForBackup.map(Self.json)),
                "walEmptied": .bool(report.walEmptied),
            ]))
            return
        }
        let verb = dryRun ? "would purge" : "purged"
        let events = report.purgedSeqs.count
        Output.line("\(verb) \(events) event\(events == 1 ? "" : "s") of \(report.items.count) deleted "
                    + "item\(report.items.count == 1 ? "" : "s") (\(report.bytes) bytes of content)"
                    + (report.items.isEmpty ? "" : ": " + report.items.map(\.description).joined(separator: ", ")))
        let backup = report.backedUpThrough == .none ? "no backup snapshot of this store yet" : "backed up through seq \(report.backedUpThrough)"
        let waiting = report.waitingForBackup.count
        Output.line(backup + (waiting == 0 ? "" : "; \(waiting) deleted item\(waiting == 1 ? " waits" : "s wait") for a backup "
                                                + "that covers the deletion (device snapshot)"))
        if !report.walEmptied {
            Output.error("warning: another connection kept the WAL open, so it may still hold purged pages until its next checkpoint")
        }
    }

    private static func json(_ key: ItemKey) -> JSONValue {
        .object(["index": .string(key.index), "id": .string(key.identifier)])
    }
}
