import ArgumentParser
import CloudCore
import CloudSQLite
import DeviceStore
import IndexModel

struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Verify a journal's hash chain and events, and that the projections equal a rebuild.",
        discussion: """
            Checks every row: seqs dense from 1, the SHA-256 chain, each payload decodes. \
            Then replays the journal into a scratch database and compares the projection \
            digest with the store's. Exit status 1 names \
            the first bad seq. On a cloud store it verifies the cloud log (chain, digests, \
            message counts) and that the cloud projections equal a replay of it.
            """
    )

    @OptionGroup var store: StoreOption
    @OptionGroup var output: JSONOption

    @Flag(name: .long, help: "Check the hash chain and events only, not the projections.")
    var chainOnly = false

    func run() throws {
        if CloudJournal.isCloudStore(store.db) {
            return try CloudJournal.verify(store.db, json: output.json)
        }
        let device = try store.openReadOnly()
        let verification: JournalVerification
        do {
            verification = try device.verifyJournal()
        } catch {
            throw error.exit()
        }
        var projectionProblem: String?
        var digests: (String, String)?
        if verification.isValid && !chainOnly {
            do {
                let stored = try device.projectionDigest()
                let rebuilt = try device.rebuiltProjectionDigest()
                digests = (stored, rebuilt)
                if stored != rebuilt {
                    projectionProblem = "the projections differ from a rebuild of the journal (digest \(stored.prefix(16)) != \(rebuilt.prefix(16)))"
                }
            } catch {
                projectionProblem = error.message
            }
        }
        let valid = verification.isValid && projectionProblem == nil
        if output.json {
            var object: JSONObject = [
                "valid": .bool(valid),
                "verifiedRows": .integer(Int64(verification.verifiedRows)),
                "headSeq": .integer(Int64(verification.head.rawValue)),
                "headHash": .string(verification.headHash.hex),
            ]
            if let problem = verification.firstProblem {
                object["firstBadSeq"] = problem.seq.map { .integer(Int64($0.rawValue)) } ?? .null
                object["problem"] = .string(problem.message)
            }
            if let digests {
                object["projectionDigest"] = .string(digests.0)
                object["rebuiltDigest"] = .string(digests.1)
            }
            if let projectionProblem { object["projectionProblem"] = .string(projectionProblem) }
            Output.json(.object(object))
        } else if valid {
            Output.line("ok: \(verification.verifiedRows) events verified, head seq \(verification.head) hash \(verification.headHash.hex)"
                        + (chainOnly ? "" : "; projections equal a rebuild"))
        }
        if let problem = verification.firstProblem {
            let seq = problem.seq.map { "first bad seq \($0): " } ?? ""
            Output.error("verify failed: \(seq)\(problem.message)")
            throw ExitStatus.checkFailed
        }
        if let projectionProblem {
            Output.error("verify failed: \(projectionProblem)")
            throw ExitStatus.checkFailed
        }
    }
}
