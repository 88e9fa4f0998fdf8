import ArgumentParser
import DeviceStore
import Foundation
import IndexModel

struct ApplyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apply",
        abstract: "Apply an operations file (JSON Lines, one app call per line) to a device store.",
        discussion: """
            Each line is one call in its own transaction; one line is printed per committed \
            call. A bad line stops the run with `line N: <field>: <what is wrong>` on stderr \
            and exit status 2: nothing of that line is applied and earlier lines stay \
            committed. Resume after fixing it with --from-line N. The store is created if \
            it does not exist. The format is in docs/CLI.md.
            """
    )

    @OptionGroup var store: StoreOption
    @OptionGroup var clockOption: ClockOption
    @OptionGroup var output: JSONOption

    @Option(name: .long, help: ArgumentHelp("Skip the lines before this 1-based line number.", valueName: "n"))
    var fromLine: Int = 1

    @Option(name: .long, help: ArgumentHelp(
        "The app a new store belongs to (its tenant in the cloud; it salts public hashes). An existing store keeps its own.",
        valueName: "name"))
    var app: AppID = StoreOptions.defaultApp

    @Argument(help: ArgumentHelp("The operations file, or - for stdin.", valueName: "ops.jsonl"))
    var operations: String

    func validate() throws {
        guard fromLine >= 1 else { throw ValidationError("--from-line must be 1 or more") }
        if operations != "-" && !FileManager.default.fileExists(atPath: operations) {
            throw ValidationError("no operations file at \(operations)")
        }
    }

    func run() throws {
        let clock = clockOption.makeClock()
        let device = try store.openForWriting(clock: clock, app: app)
        try clockOption.catchUp(clock, with: device)
        var reader: LineReader
        do {
            reader = try LineReader(path: operations)
        } catch {
            Output.error("error: \(error)")
            throw ExitStatus.invalidInput
        }
        var applied = 0
        while let line = try reader.next() {
            let number = reader.lineNumber
            guard number >= fromLine else { continue }
            let bytes: [UInt8]
            switch line {
            case .tooLong:
                fail(line: number, "line is longer than \(Limits.lineBytes) bytes", applied: applied)
            case .text(let text):
                bytes = text
            }
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            let operation: AppOperation
            do {
                operation = try OperationParser.parse(line: bytes)
            } catch {
                fail(line: number, error.description, applied: applied)
            }
            let outcome: CallOutcome
            do {
                outcome = try device.perform(operation)
            } catch {
                let prefix = error.code == .invalidOperation ? "" : "\(operation.name): "
                fail(line: number, prefix + error.message, applied: applied)
            }
            applied += 1
            report(line: number, operation: operation, outcome: outcome)
        }
        AutomaticPurge.run(device)
    }

    private func report(line: Int, operation: AppOperation, outcome: CallOutcome) {
        if output.json {
            var object: JSONObject = [
                "line": .integer(Int64(line)),
                "op": .string(operation.name),
                "call": .integer(Int64(outcome.call.rawValue)),
            ]
            if let index = operation.indexName { object["index"] = .string(index) }
            if let seqs = outcome.seqs {
                object["firstSeq"] = .integer(Int64(seqs.lowerBound.rawValue))
                object["lastSeq"] = .integer(Int64(seqs.upperBound.rawValue))
            }
            for (key, count) in [("indexed", outcome.indexed), ("updated", outcome.updated), ("ignored", outcome.ignored),
                                 ("deleted", outcome.deleted), ("expired", outcome.expired),
                                 ("activities", outcome.activities), ("engagements", outcome.engagements),
                                 ("clientStates", outcome.clientStates)] where count > 0 {
                object[key] = .integer(Int64(count))
            }
            Output.json(.object(object), pretty: false)
        } else {
            let target = operation.indexName.map { " \($0)" } ?? ""
            Output.line("line \(line): \(operation.name)\(target): \(outcome.summary)")
        }
    }

    private func fail(line: Int, _ message: String, applied: Int) -> Never {
        Output.error("line \(line): \(message)")
        Output.error("stopped at line \(line); \(applied) earlier line(s) of this run stay committed; fix it and resume with --from-line \(line)")
        Foundation.exit(ExitStatus.invalidInput.rawValue)
    }
}
