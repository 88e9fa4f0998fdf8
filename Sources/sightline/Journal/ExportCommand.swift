import ArgumentParser
import CloudCore
import CloudSQLite
import DeviceStore
import IndexModel

struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export events as JSON Lines: one {seq, epoch, call, time, event, hash} object per line (--json: one document).",
        discussion: """
            On a damaged store it exports every event it can read, then says where it stopped (exit status 1). \
            On a cloud store it exports the cloud log: one {app, seq, device, epoch, firstSeq, lastSeq, acceptedFrom, \
            receivedAt, messages, hash} object per accepted frame, each app's chain in order (--app: one app's); \
            --from and --to are seqs of each app's chain.
            """
    )

    @OptionGroup var store: StoreOption

    @Option(name: .long, help: ArgumentHelp("The first seq to export.", valueName: "seq"))
    var from: UInt64 = 1

    @Option(name: .long, help: ArgumentHelp("The last seq to export.", valueName: "seq"))
    var to: UInt64?

    @Option(name: .long, help: ArgumentHelp("On a cloud store: export this app's log only.", valueName: "name"))
    var app: AppID?

    @Flag(name: .long, help: "Print one JSON document instead, {\"events\": [...]} (a cloud store's: {\"rows\": [...]}), written as it is read.")
    var json = false

    func run() throws {
        if CloudJournal.isCloudStore(store.db) {
            return try CloudJournal.export(store.db, app: app, from: from, to: to, json: json)
        }
        if app != nil {
            Output.error("error: --app selects an app of a cloud store; \(store.db) is a device store")
            throw ExitStatus.invalidInput
        }
        let device = try store.openReadOnly()
        let last = to ?? UInt64.max
        var document = json ? Output.JSONArrayStream(name: "events") : nil
        let scan: JournalScan
        do {
            scan = try device.scanJournal(from: Seq(max(from, 1))) { record in
                guard record.seq.rawValue <= last else { return false }
                if document != nil { document!.element(RecordFormat.json(record)) } else {
                    Output.line(JSONWriter.compact(RecordFormat.json(record)))
                }
                return true
            }
        } catch {
            document?.end()
            throw error.exit()
        }
        document?.end()
        if RecordFormat.reportStop(scan) { throw ExitStatus.checkFailed }
    }
}
