import ArgumentParser
import CloudCore
import CloudSQLite
import DeviceStore
import Foundation
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

    @Option(name: .long, help: ArgumentHelp("""
        Set the store's automatic purge: from now on device snapshot, device apply and sync purge what a backup covers \
        of items deleted at least this long ago (a number then ms, s, m, h or d, as 7d); off turns it off.
        """, valueName: "delay"))
    var auto: String?

    func validate() throws {
        if let auto, PurgeDelay.milliseconds(auto) == nil {
            throw ValidationError("--auto takes a delay such as 90s, 12h or 7d (at most 100 years), or off; not \"\(auto)\"")
        }
        if auto != nil && dryRun { throw ValidationError("--auto sets an option; it cannot be a dry run") }
    }

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
            if let auto, let delay = PurgeDelay.milliseconds(auto) {
                try device.setAutomaticPurge(afterMilliseconds: delay)
                Output.error(delay == nil ? "automatic purge: off" : "automatic purge: on, after \(auto)")
                guard let due = try device.purgeIfDue() else { return }
                report = due
            } else {
                report = try device.purge(dryRun: dryRun)
            }
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
                "waitingForDelay": .array(report.waitingForDelay.map(Self.json)),
                "activities": .array(report.activities.map(JSONValue.string)),
                "references": .integer(Int64(report.references)),
                "activitiesWaiting": .array(report.activitiesWaiting.map {
                    .object(["key": .string($0.key), "waitsFor": .string($0.reason.rawValue)])
                }),
                "walEmptied": .bool(report.walEmptied),
            ]))
            return
        }
        let verb = dryRun ? "would purge" : "purged"
        let events = report.purgedSeqs.count
        let activities = report.activities.count
        Output.line("\(verb) \(events) event\(events == 1 ? "" : "s") of \(report.items.count) deleted "
                    + "item\(report.items.count == 1 ? "" : "s")"
                    + (activities == 0 ? "" : " and \(activities) deleted activit\(activities == 1 ? "y" : "ies")")
                    + " (\(report.bytes) bytes of content)"
                    + (report.items.isEmpty ? "" : ": " + Output.list(report.items.map(\.description), whole: "--json lists them all")))
        if !report.activities.isEmpty || report.references > 0 {
            let count = report.activities.count
            Output.line("\(verb) the content of \(count) deleted activit\(count == 1 ? "y" : "ies") and the reference of "
                        + "\(report.references) engagement event\(report.references == 1 ? "" : "s")"
                        + (report.activities.isEmpty ? "" : ": " + Output.list(report.activities, whole: "--json lists them all")))
        }
        let backup = report.backedUpThrough == .none ? "no backup snapshot of this store yet" : "backed up through seq \(report.backedUpThrough)"
        let waiting = report.waitingForBackup.count
        Output.line(backup + (waiting == 0 ? "" : "; \(waiting) deleted item\(waiting == 1 ? " waits" : "s wait") for a backup "
                                                + "that covers the deletion (device snapshot)"))
        if !report.waitingForDelay.isEmpty {
            Output.line("\(report.waitingForDelay.count) deleted item(s) wait for the automatic purge's delay")
        }
        for reason in [ActivityWait.Reason.backup, .delay, .cloud, .sharedURL] {
            let count = report.activitiesWaiting.count { $0.reason == reason }
            guard count > 0 else { continue }
            let why = switch reason {
            case .backup: "a backup that covers the deletion (device snapshot)"
            case .delay: "the automatic purge's delay"
            case .cloud: "the cloud's backup to hold what was sent before the deletion (sync)"
            case .sharedURL: "the activities and items that name the same web page URL to go"
            }
            Output.line("\(count) deleted activit\(count == 1 ? "y waits" : "ies wait") for \(why)")
        }
        if !report.walEmptied {
            Output.error("warning: another connection kept the WAL open, so it may still hold purged pages until its next checkpoint")
        }
    }

    private static func json(_ key: ItemKey) -> JSONValue {
        .object(["index": .string(key.index), "id": .string(key.identifier)])
    }
}

/// An automatic purge delay as `journal purge --auto` takes it.
enum PurgeDelay {
    /// Milliseconds for "NUMBER UNIT" (ms, s, m, h, d), `.some(nil)` for
    /// "off", nil for anything else or more than 100 years.
    static func milliseconds(_ text: String) -> Int64?? {
        if text == "off" { return .some(nil) }
        let units: [(String, Int64)] = [("ms", 1), ("s", 1_000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000)]
        for (suffix, factor) in units where text.hasSuffix(suffix) {
            let digits = text.dropLast(suffix.count)
            guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber), digits.count <= 12,
                  let number = Int64(digits) else { return nil }
            let (value, overflow) = number.multipliedReportingOverflow(by: factor)
            guard !overflow, value <= 100 * 365 * 86_400_000 else { return nil }
            return .some(value)
        }
        return nil
    }
}

/// The automatic purge the CLI runs after the commands that write a store
/// (`DeviceStore.purgeIfDue`). What it purged goes to stderr, so a command's
/// `--json` output stays one document. A failure is said and changes
/// nothing the command did.
enum AutomaticPurge {
    static func run(_ device: DeviceStore) {
        do {
            guard let report = try device.purgeIfDue(), !report.purgedSeqs.isEmpty else { return }
            Output.error("automatic purge: purged \(report.purgedSeqs.count) event(s) of \(report.items.count) deleted item(s) "
                         + (report.activities.isEmpty ? "" : "and \(report.activities.count) deleted activit(ies) ")
                         + "(\(report.bytes) bytes of content)")
        } catch {
            Output.error("warning: the automatic purge failed and purged nothing: \(error.message)")
        }
    }
}
