import ArgumentParser
import DeviceStore
import IndexModel

struct TailCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tail",
        abstract: "Print the last events of a journal, or the last rows of each app's cloud log.",
        discussion: "On a damaged store it prints the last events it could read and says where it stopped (exit status 1)."
    )

    @OptionGroup var store: StoreOption
    @OptionGroup var output: JSONOption

    @Option(name: [.customShort("n"), .long], help: "How many events.")
    var count: Int = 10

    func validate() throws {
        guard count >= 1 else { throw ValidationError("--count must be 1 or more") }
    }

    func run() throws {
        if CloudJournal.isCloudStore(store.db) {
            return try CloudJournal.tail(store.db, count: count, json: output.json)
        }
        let device = try store.openReadOnly()
        var window: [JournalRecord] = []
        let scan: JournalScan
        do {
            let head = try device.journalHead().seq
            let start = head.rawValue > UInt64(count) ? Seq(head.rawValue - UInt64(count) + 1) : Seq(1)
            scan = try device.scanJournal(from: start) { record in
                window.append(record)
                if window.count > count { window.removeFirst() }
                return true
            }
        } catch {
            throw error.exit()
        }
        if output.json {
            Output.json(.object(["events": .array(window.map(RecordFormat.json))]))
        } else {
            for record in window { Output.line(RecordFormat.line(record)) }
        }
        if RecordFormat.reportStop(scan) { throw ExitStatus.checkFailed }
    }
}

struct ShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Print events in full, by seq."
    )

    @OptionGroup var store: StoreOption
    @OptionGroup var output: JSONOption

    @Argument(help: ArgumentHelp("The first seq to show.", valueName: "seq"))
    var seq: UInt64

    @Option(name: .long, help: ArgumentHelp("The last seq to show (default: the same as seq).", valueName: "seq"))
    var to: UInt64?

    func validate() throws {
        guard seq >= 1 else { throw ValidationError("seq starts at 1") }
        if let to, to < seq { throw ValidationError("--to \(to) is before seq \(seq)") }
    }

    func run() throws {
        try CloudJournal.refuse("show", store.db)
        let device = try store.openReadOnly()
        let records: [JournalRecord]
        do {
            records = try device.records(Seq(seq)...Seq(to ?? seq))
        } catch {
            throw error.exit()
        }
        guard !records.isEmpty else {
            Output.error("error: no event with seq \(seq) (the journal's head is \((try? device.journalHead().seq.description) ?? "unknown"))")
            throw ExitStatus.checkFailed
        }
        if output.json {
            Output.json(records.count == 1 && to == nil ? RecordFormat.json(records[0]) : .array(records.map(RecordFormat.json)))
        } else {
            for record in records {
                Output.line(JSONWriter.pretty(RecordFormat.json(record)))
            }
        }
    }
}
