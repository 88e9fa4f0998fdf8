import ArgumentParser
import CloudCore
import Foundation
import IndexModel

struct RebuildCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rebuild",
        abstract: "Verify the cloud log, replay it into fresh projections, and check they equal the incremental state.",
        discussion: "Exit status 1 when the log does not verify or the rebuilt projections differ from the ones it replaced."
    )

    @OptionGroup var store: CloudStoreOption
    @OptionGroup var output: JSONOption

    func run() throws {
        let cloud = try store.open(readOnly: false)
        let verification: CloudLogVerification
        let before: String
        let after: String
        let elapsed: Duration
        do {
            verification = try cloud.verifyLog()
            before = try cloud.projectionDigest()
            var rebuilt = ""
            elapsed = try ContinuousClock().measure {
                try cloud.rebuildProjections()
                rebuilt = try cloud.projectionDigest()
            }
            after = rebuilt
        } catch let error as CloudError {
            Output.error("error: \(error.commandLineMessage)")
            throw ExitStatus.storeUnavailable
        }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        if output.json {
            Output.json(.object([
                "logRows": .integer(Int64(verification.verifiedRows)),
                "messages": .integer(Int64(verification.messages)),
                "logValid": .bool(verification.isValid),
                "problem": verification.firstProblem.map(JSONValue.string) ?? .null,
                "digestBefore": .string(before),
                "digestAfter": .string(after),
                "equal": .bool(before == after),
                "seconds": .double(seconds),
            ]))
        } else {
            Output.line("cloud log: \(verification.verifiedRows) rows, \(verification.messages) messages"
                        + (verification.firstProblem.map { ", first problem: \($0)" } ?? ", verified"))
            Output.line("projections rebuilt in \(String(format: "%.3f", seconds)) s; digest \(before == after ? "unchanged" : "CHANGED") (\(after))")
        }
        if !verification.isValid || before != after { throw ExitStatus.checkFailed }
    }
}
