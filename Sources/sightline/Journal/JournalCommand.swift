import ArgumentParser
import DeviceStore
import IndexModel
import SyncWire

struct JournalCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "journal",
        abstract: "Inspect an event journal, and purge deleted items' content from it.",
        discussion: "Every subcommand but purge opens the store read-only.",
        subcommands: [StatsCommand.self, TailCommand.self, ShowCommand.self, VerifyCommand.self,
                      ExportCommand.self, GrepCommand.self, DiffCommand.self, PurgeCommand.self]
    )
}

/// How journal records are printed by tail, show, export and grep.
enum RecordFormat {
    /// A journal row as JSON. Given the store's `app`, a recorded public
    /// activity also carries `publicHash`: the hash the cloud knows it by,
    /// which joins it to the cloud's log (`sightline trace`).
    static func json(_ record: JournalRecord, app: AppID? = nil) -> JSONValue {
        var object: JSONObject = [
            "seq": .integer(Int64(record.seq.rawValue)),
            "epoch": .integer(Int64(clamping: record.epoch.rawValue)),
            "call": .integer(Int64(record.call.rawValue)),
            "time": .string(record.time.description),
        ]
        do {
            let event = try record.event()
            object["event"] = event.jsonValue
            if let app, case .activityRecorded(let activity) = event,
               let hash = PublicContent(activity).flatMap({ PublicHash.of(app: app, content: $0) }) {
                object["publicHash"] = .string(hash.hex)
            }
        } catch {
            object["kind"] = .integer(Int64(record.kind))
            object["undecodable"] = .string(error.message)
        }
        object["hash"] = .string(record.hash.hex)
        if let purged = record.purgedPayloadHash {
            // The event above is the residue the purge left.
            object["purged"] = .bool(true)
            object["purgedPayloadSHA256"] = .string(purged.hex)
        }
        return .object(object)
    }

    static func line(_ record: JournalRecord) -> String {
        let head = "seq \(record.seq)  epoch \(record.epoch)  call \(record.call)  \(record.time)  "
        guard let event = try? record.event() else {
            return head + "kind \(record.kind)  (undecodable)"
        }
        var subject = ""
        if let index = event.indexName { subject = index }
        if let id = event.subject { subject += subject.isEmpty ? id : "/" + id }
        return head + event.kind.name + (subject.isEmpty ? "" : "  " + subject) + (record.isPurged ? "  (payload purged)" : "")
    }

    /// Reports a scan that stopped early on stderr and says the output is partial.
    static func reportStop(_ scan: JournalScan) -> Bool {
        guard let stop = scan.stop else { return false }
        let after = scan.lastSeq.map { "after seq \($0)" } ?? "before the first row"
        Output.error("stopped \(after): \(stop.message)")
        return true
    }
}

extension DeviceStoreError {
    /// Prints the error and turns it into the CLI's exit status.
    func exit() -> ExitCode {
        Output.error("error: \(commandLineMessage)")
        switch code {
        case .corruptJournal: return ExitStatus.checkFailed
        case .invalidOperation, .clientStateMismatch, .clockNotSimulated, .clockWentBackwards, .queryTooExpensive:
            return ExitStatus.invalidInput
        default: return ExitStatus.storeUnavailable
        }
    }
}
