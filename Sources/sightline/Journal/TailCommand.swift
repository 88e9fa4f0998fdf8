import ArgumentParser
import DeviceStore
import Foundation
import IndexModel

struct TailCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tail",
        abstract: "Print the last events of a journal, or the last rows of each app's cloud log.",
        discussion: "On a damaged store it prints the last events it could read and says where it stopped (exit status 1)."
    )

    @OptionGroup var store: StoreOption
    @OptionGroup var output: JSONOption

    @Option(name: [.customShort("n"), .customLong("limit"), .customLong("count")],
            help: "How many of the last rows (--count is the same; every journal tool's -n is --limit).")
    var count: Int = 10

    @Flag(name: [.customShort("f"), .long], help: ArgumentHelp(
        "Then keep printing what is appended, until interrupted (with --json: one JSON object a line)."))
    var follow = false

    @Option(name: .long, help: ArgumentHelp("With --follow: seconds between looks (0.05…60).", valueName: "seconds"))
    var interval: Double = 0.5

    func validate() throws {
        guard count >= 1 else { throw ValidationError("--limit must be 1 or more") }
        guard interval.isFinite, (0.05...60).contains(interval) else { throw ValidationError("--interval must be between 0.05 and 60 seconds") }
    }

    func run() throws {
        if CloudJournal.isCloudStore(store.db) {
            try CloudJournal.tail(store.db, count: count, json: output.json && !follow, lines: follow && output.json)
            if follow { try CloudJournal.follow(store.db, json: output.json, interval: interval) }
            return
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
        if output.json && !follow {
            Output.json(.object(["events": .array(window.map { RecordFormat.json($0, app: device.app) })]))
        } else {
            for record in window { print(record, device: device) }
        }
        if RecordFormat.reportStop(scan) { throw ExitStatus.checkFailed }
        guard follow else { return }
        // What a writer commits after the last row printed, as it comes.
        var last = window.last?.seq.rawValue ?? 0
        while true {
            Thread.sleep(forTimeInterval: interval)
            let more: JournalScan
            do {
                more = try device.scanJournal(from: Seq(last + 1)) { record in
                    print(record, device: device)
                    last = record.seq.rawValue
                    return true
                }
            } catch {
                throw error.exit()
            }
            if RecordFormat.reportStop(more) { throw ExitStatus.checkFailed }
        }
    }

    /// One row: a line of text, or with `--json` (following) a JSON object.
    private func print(_ record: JournalRecord, device: DeviceStore) {
        Output.line(output.json ? JSONWriter.compact(RecordFormat.json(record, app: device.app)) : RecordFormat.line(record))
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
            Output.json(.object(["events": .array(records.map { RecordFormat.json($0, app: device.app) })]))
        } else {
            for (index, record) in records.enumerated() {
                if index > 0 { Output.line("") }
                Output.line(RecordFormat.line(record))
                for (name, value) in ShowCommand.fields(RecordFormat.json(record, app: device.app)) { Output.line("  \(name): \(value)") }
            }
        }
    }
}

extension ShowCommand {
    /// An event's fields as `name: value` lines: nested objects by dotted
    /// names, lists of plain values on one line, the event's position (in
    /// the heading line) left out.
    static func fields(_ record: JSONValue) -> [(String, String)] {
        var lines: [(String, String)] = []
        func add(_ value: JSONValue, _ name: String) {
            switch value {
            case .object(let object):
                for member in object.members { add(member.value, name.isEmpty ? member.key : name + "." + member.key) }
            case .array(let values) where values.allSatisfy({ if case .object = $0 { false } else if case .array = $0 { false } else { true } }):
                lines.append((name, values.isEmpty ? "(none)" : values.map(text).joined(separator: ", ")))
            case .array(let values):
                for (index, element) in values.enumerated() { add(element, "\(name)[\(index)]") }
            default:
                lines.append((name, text(value)))
            }
        }
        guard case .object(let object) = record else { return [] }
        for member in object.members where !["seq", "epoch", "call", "time"].contains(member.key) {
            let names = ["event": "", "hash": "chain hash", "publicHash": "public hash"]
            add(member.value, names[member.key] ?? member.key)
        }
        return lines
    }

    private static func text(_ value: JSONValue) -> String {
        switch value {
        case .string(let string): TextRule.printable(string)
        default: JSONWriter.compact(value)
        }
    }
}
