import ArgumentParser
import DeviceStore
import IndexModel

struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export events as JSON Lines: one {seq, epoch, call, time, event, hash} object per line.",
        discussion: "On a damaged store it exports every event it can read, then says where it stopped (exit status 1)."
    )

    @OptionGroup var store: StoreOption

    @Option(name: .long, help: ArgumentHelp("The first seq to export.", valueName: "seq"))
    var from: UInt64 = 1

    @Option(name: .long, help: ArgumentHelp("The last seq to export.", valueName: "seq"))
    var to: UInt64?

    func run() throws {
        let device = try store.openReadOnly()
        let last = to ?? UInt64.max
        let scan: JournalScan
        do {
            scan = try device.scanJournal(from: Seq(max(from, 1))) { record in
                guard record.seq.rawValue <= last else { return false }
                Output.line(JSONWriter.compact(RecordFormat.json(record)))
                return true
            }
        } catch {
            throw error.exit()
        }
        if RecordFormat.reportStop(scan) { throw ExitStatus.checkFailed }
    }
}

struct GrepCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "grep",
        abstract: "Print the events whose JSON form contains a text (case-insensitive), optionally of one kind, index or identifier."
    )

    @OptionGroup var store: StoreOption
    @OptionGroup var output: JSONOption

    @Option(name: .long, help: ArgumentHelp("Only events of this kind (itemIndexed, itemDeleted, …).", valueName: "kind"))
    var kind: String?

    @Option(name: .long, help: ArgumentHelp("Only events of this named index.", valueName: "name"))
    var index: String?

    @Option(name: .long, help: ArgumentHelp("Only events about this item identifier, activity key or ref.", valueName: "id"))
    var id: String?

    @Argument(help: ArgumentHelp("The text to look for; empty matches every event.", valueName: "text"))
    var text: String = ""

    func validate() throws {
        if let kind, EventKind(name: kind) == nil {
            throw ValidationError("--kind: unknown event kind \"\(kind)\" (expected one of \(EventKind.allCases.map(\.name).joined(separator: ", ")))")
        }
    }

    func run() throws {
        let device = try store.openReadOnly()
        let needle = text.lowercased()
        var matches: [JSONValue] = []
        let scan: JournalScan
        do {
            scan = try device.scanJournal { record in
                guard let event = try? record.event() else { return true }
                if let kind, event.kind.name != kind { return true }
                if let index, event.indexName != index { return true }
                if let id, event.subject != id { return true }
                let json = RecordFormat.json(record)
                if !needle.isEmpty && !JSONWriter.compact(json).lowercased().contains(needle) { return true }
                if output.json { matches.append(json) } else { Output.line(RecordFormat.line(record)) }
                return true
            }
        } catch {
            throw error.exit()
        }
        if output.json { Output.json(.object(["events": .array(matches)])) }
        if RecordFormat.reportStop(scan) { throw ExitStatus.checkFailed }
    }
}
