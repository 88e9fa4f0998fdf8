import ArgumentParser
import CloudCore
import CloudPostgres
import CloudSQLite
import Foundation
import IndexModel

struct CloudRestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Restore a cloud store from a snapshot, verifying everything first.",
        discussion: """
            Checks the manifest, checksum and key, SQLite's integrity check, the cloud log's \
            chain and payloads against the manifest, and that the projections equal a replay \
            of the log, and only then replaces --db in one rename (an existing store needs \
            --force and is kept beside it). A postgres:// --db must hold no cloud store yet: \
            the rows are copied in one transaction, which commits only once the database's \
            own log and projections check out. A snapshot of either backend restores into \
            either. Devices then learn from gaps what the restored cloud lacks and send it \
            again. --to-time restores the cloud as it was at an instant: the checked snapshot's \
            log is cut on a frame boundary (each app keeps the rows it received by then) and \
            the projections are folded from what is kept. A bad snapshot exits 1 and leaves \
            --db as it was.
            """
    )

    @Option(name: .long, help: ArgumentHelp("The snapshot to restore.", valueName: "path"))
    var snapshot: String

    @OptionGroup var store: CloudStoreOption
    @OptionGroup var keyOption: KeyFileOption
    @OptionGroup var progressOption: ProgressOption

    @Flag(name: .long, help: "Replace an existing store file (it is kept beside the restored one); a PostgreSQL database must be empty.")
    var force = false

    @Option(name: .long, help: ArgumentHelp(
        "Restore the cloud as it was at this ISO 8601 instant: each app's log keeps the frames received by then.", valueName: "instant"))
    var toTime: String?

    func validate() throws {
        if let toTime, ISO8601.parse(toTime) == nil {
            throw ValidationError("--to-time must be an ISO 8601 instant such as 2026-11-22T09:30:00Z (got \"\(toTime)\")")
        }
    }

    func run() throws {
        let key = try keyOption.key()
        let instant = toTime.flatMap(ISO8601.parse)
        let line = ProgressLine(mode: progressOption.mode, phase: "restoring \(snapshot)", total: nil, unit: "")
        defer { line.finish() }
        do throws(CloudError) {
            let manifest: CloudSnapshotManifest
            var cut: CloudLogCut?
            if PostgresLocation.isPostgresURL(store.db) {
                let location = try store.postgres.settings.location(store.db)
                let password = try store.postgres.settings.password()
                manifest = try PostgresCloud.restore(snapshot: snapshot, to: location, password: password, key: key, through: instant)
                if let instant {
                    let restored = try PostgresCloud(at: location, password: password,
                                                     options: store.postgres.settings.options(store: CloudOptions(readOnly: true)))
                    defer { restored.close() }
                    let heads = try restored.logHeads()
                    let kept = Int(heads.reduce(0) { $0 + $1.rows })
                    cut = CloudLogCut(through: instant, heads: heads, rowsBefore: Int(manifest.logRows),
                                      rowsRemoved: Int(manifest.logRows) - kept)
                }
            } else {
                (manifest, cut) = try CloudIndex.restore(snapshot: snapshot, to: store.db, through: instant, force: force, key: key)
            }
            line.finish()
            if let cut {
                Output.line("restored \(store.displayName) from \(snapshot) as at \(ISO8601.format(cut.through)): "
                            + "\(cut.rowsKept) of \(cut.rowsBefore) cloud log rows kept, \(manifest.devices) devices")
            } else {
                Output.line("restored \(store.displayName) from \(snapshot): \(manifest.logRows) cloud log rows, \(manifest.devices) devices")
            }
        } catch {
            line.finish()
            Output.error("error: \(error.commandLineMessage)")
            throw [.snapshot, .keyRequired, .destinationExists].contains(error.code) ? ExitStatus.checkFailed : ExitStatus.storeUnavailable
        }
    }
}
