import ArgumentParser
import CloudCore
import IndexModel

struct CloudSnapshotCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "snapshot",
        abstract: "Write a backup snapshot of a cloud store while it keeps serving.",
        discussion: """
            The same container as device snapshots (Journal/FORMAT.md). Afterwards each \
            device's backed-up position is what the snapshot holds of it: acks carry it and \
            devices keep every message after it, so a restore of this snapshot is brought up \
            to date by the devices resending.
            """
    )

    @OptionGroup var store: CloudStoreOption
    @OptionGroup var keyOption: KeyFileOption
    @OptionGroup var output: JSONOption

    @Option(name: .long, help: ArgumentHelp("The snapshot file to write.", valueName: "path"))
    var out: String

    func run() throws {
        let key = try keyOption.key()
        let cloud = try store.open(readOnly: false)
        let manifest: CloudSnapshotManifest
        let purge: CloudPurgeReport
        do {
            manifest = try cloud.snapshot(to: out, key: key)
            // What this backup made durable below K goes from the log.
            purge = try cloud.purgeWithdrawnContent(dryRun: false)
        } catch {
            Output.error("error: \(error.commandLineMessage)")
            throw ExitStatus.storeUnavailable
        }
        if purge.contentMessages > 0 { Output.error(CloudPurgeCommand.summary(purge, dryRun: false)) }
        if output.json {
            Output.json(.object([
                "logRows": .integer(manifest.logRows), "logHeadHash": .string(manifest.logHeadHash),
                "devices": .integer(manifest.devices), "threshold": .integer(manifest.threshold),
                "createdAt": .string(manifest.createdAt.description), "contentBytes": .integer(manifest.contentBytes),
                "encrypted": .bool(manifest.encrypted),
            ]))
        } else {
            Output.line("snapshot \(out): \(manifest.logRows) cloud log rows, \(manifest.devices) devices, "
                        + "\(manifest.contentBytes) bytes" + (manifest.encrypted ? ", encrypted" : ""))
        }
    }
}
