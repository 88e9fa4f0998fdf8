import ArgumentParser
import CloudCore
import IndexModel

struct CloudStatsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "stats", abstract: "Totals of a cloud store.")

    @OptionGroup var store: CloudStoreOption
    @OptionGroup var output: JSONOption

    func run() throws {
        let cloud = try store.open(readOnly: true)
        let stats: CloudStats
        do {
            stats = try cloud.stats()
        } catch {
            Output.error("error: \(error.commandLineMessage)")
            throw ExitStatus.storeUnavailable
        }
        if output.json {
            Output.json(stats.jsonValue)
            return
        }
        Output.table([
            ["threshold K", String(stats.threshold)],
            ["content agreement", String(stats.agreement)],
            ["apps", String(stats.apps)],
            ["devices", String(stats.devices)],
            ["cloud log rows", String(stats.logRows)],
            ["messages", String(stats.messages)],
            ["hashes counted", String(stats.hashes)],
            ["public items", String(stats.publicItems)],
            ["content wanted", String(stats.wanted)],
            ["crawled pages", String(stats.pages)],
            ["private reports", String(stats.reports)],
        ] + stats.privateApps.sorted { $0.key.rawValue < $1.key.rawValue }.map { app, settings in
            ["popularity of \(app)", ServeCommand.describe(.ldp(settings))]
        } + [
            ["equivocations", String(stats.equivocations)],
        ])
    }
}
