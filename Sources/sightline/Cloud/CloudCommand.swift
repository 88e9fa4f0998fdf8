import ArgumentParser

struct CloudCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cloud",
        abstract: "Run the cloud aggregator and inspect its store.",
        subcommands: [ServeCommand.self, CloudStatsCommand.self, CloudSearchCommand.self, RebuildCommand.self, CloudPurgeCommand.self,
                      CloudSnapshotCommand.self, CloudRestoreCommand.self, CrawlCommand.self]
    )
}
