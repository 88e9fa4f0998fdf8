import ArgumentParser

struct DeviceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device",
        abstract: "Apply app calls to a device store, search it, query it, snapshot and restore it.",
        subcommands: [ApplyCommand.self, SearchCommand.self, QueryCommand.self, SnapshotCommand.self, RestoreCommand.self,
                      ReindexCommand.self]
    )
}
