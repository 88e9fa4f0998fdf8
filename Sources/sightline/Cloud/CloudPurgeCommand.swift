import ArgumentParser
import CloudCore
import CloudPostgres
import Foundation
import IndexModel

struct CloudPurgeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge",
        abstract: "Take the content of hashes below K out of the cloud log once a backup holds their withdrawal.",
        discussion: """
            Each content message of a hash with fewer than K live votes becomes its residue \
            (the hash and a keyed digest) once the cloud's last backup holds the row in which \
            the hash last fell below K. The log's chain still verifies and a rebuild folds the \
            same projections. `cloud snapshot` and a serving cloud's periodic snapshots \
            purge on their own; this command purges now, or with --dry-run \
            says what it would. docs/CLOUD.md, "Purging withdrawn content".
            """
    )

    @OptionGroup var store: CloudStoreOption
    @OptionGroup var output: JSONOption

    @Flag(name: .long, help: "Say what would be purged and change nothing.")
    var dryRun = false

    func run() throws {
        if !PostgresLocation.isPostgresURL(store.db), !FileManager.default.fileExists(atPath: store.db) {
            Output.error("error: no cloud store at \(store.db)")
            throw ExitStatus.storeUnavailable
        }
        let cloud = try store.open(readOnly: dryRun)
        let report: CloudPurgeReport
        do {
            report = try cloud.purgeWithdrawnContent(dryRun: dryRun)
        } catch {
            Output.error("error: \(error.commandLineMessage)")
            throw ExitStatus.storeUnavailable
        }
        if output.json {
            Output.json(.object([
                "dryRun": .bool(dryRun),
                "rows": .array(report.rows.map { .object(["app": .string($0.app.rawValue), "seq": .integer($0.seq)]) }),
                "contentMessages": .integer(Int64(report.contentMessages)),
                "hashes": .integer(Int64(report.hashes)),
                "bytes": .integer(Int64(report.bytes)),
                "waitingForBackup": .integer(Int64(report.waitingForBackup)),
            ]))
        } else {
            Output.line(CloudPurgeCommand.summary(report, dryRun: dryRun))
        }
    }

    /// One line on what a purge did or would do.
    static func summary(_ report: CloudPurgeReport, dryRun: Bool) -> String {
        var line = "\(dryRun ? "would purge" : "purged") \(report.contentMessages) content message(s) of \(report.hashes) hash(es) "
            + "below K from \(report.rows.count) cloud log row(s), \(report.bytes) bytes"
        if report.waitingForBackup > 0 {
            line += "; \(report.waitingForBackup) more wait for a backup to hold their withdrawal"
        }
        return line
    }
}
