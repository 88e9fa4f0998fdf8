import ArgumentParser
import CloudSQLite
import CSQLiteTuning
import DeviceStore
import IndexModel
import Snapshot
import SyncWire

@main
struct Sightline: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sightline",
        abstract: "Event-sourced sync between on-device search indexes and a cloud index.",
        discussion: """
            Stores are named with --db, or in a run's folder with --run DIR [--device N]. Exit status: 0 success; 1 a verification, \
            check or comparison failed; 2 invalid input (an operations line, a query); \
            3 a store could not be opened or read; 4 sync stopped (the cloud refused or could \
            not be reached); 64 a usage error.
            """,
        version: Sightline.formats,
        subcommands: [SimulateCommand.self, DrillCommand.self, DeviceCommand.self, JournalCommand.self, SyncCommand.self, CloudCommand.self,
                      SnapshotFilesCommand.self, TraceCommand.self, InspectCommand.self,
                      BenchCommand.self]
    )

    /// What `--version` prints: the formats this build writes, which say what
    /// it can exchange with another build.
    static let formats = "sightline: device store format \(DeviceStore.formatVersion), journal events format "
        + "\(JournalEvent.formatVersion), cloud store format \(CloudSchema.formatVersion), wire version \(UploadFrame.version), "
        + "snapshot container version \(SnapshotFile.headerMagic.last ?? 0)"

    /// Makes the process-wide SQLite settings first, while SQLite is unused,
    /// then runs the command.
    static func main() async {
        _ = sightline_disable_sqlite_memory_statistics()
        _ = sightline_use_sqlite_multithread_mode()
        await main(nil)
    }
}
