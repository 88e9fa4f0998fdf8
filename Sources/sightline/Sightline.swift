import ArgumentParser
import CSQLiteTuning

@main
struct Sightline: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sightline",
        abstract: "Event-sourced sync between on-device search indexes and a cloud index.",
        discussion: """
            Stores are always named with --db. Exit status: 0 success; 1 a verification, \
            check or comparison failed; 2 invalid input (an operations line, a query); \
            3 a store could not be opened or read; 4 sync stopped (the cloud refused or could \
            not be reached); 64 a usage error.
            """,
        subcommands: [SimulateCommand.self, DrillCommand.self, DeviceCommand.self, JournalCommand.self, SyncCommand.self, CloudCommand.self,
                      BenchCommand.self]
    )

    /// Makes the process-wide SQLite settings first, while SQLite is unused,
    /// then runs the command.
    static func main() async {
        _ = sightline_disable_sqlite_memory_statistics()
        _ = sightline_use_sqlite_multithread_mode()
        await main(nil)
    }
}
