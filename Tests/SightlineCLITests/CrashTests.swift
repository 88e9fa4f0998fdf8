import DeviceStore
import Foundation
import IndexModel
import Testing
import Workloads

/// Kills `device apply` with SIGKILL at random moments, hundreds of times, and
/// checks after each kill that nothing committed was lost and nothing half-done
/// is visible.
@Suite struct CrashTests {
    @Test func sigkillAtRandomMomentsLosesNoCommittedCall() throws {
        let seed: UInt64 = 20261122
        var random = SplitMix64(seed: seed)
        let directory = try temporaryDirectory()
        let ops = directory.appendingPathComponent("ops.jsonl")
        var workload = SyntheticWorkload(seed: seed)
        let lines = (0..<6000).map { _ in workload.nextOperation().unconditional.jsonLine }
        try write(lines, to: ops)

        var kills = 0
        let rounds = 4
        let killsPerRound = 55
        for round in 0..<rounds {
            let db = directory.appendingPathComponent("round-\(round).sqlite").path
            var nextLine = 1
            var reported: [(call: Int64, first: Int64, last: Int64)] = []
            for attempt in 0..<killsPerRound {
                let process = Process()
                process.executableURL = CLIRunner.binary
                process.arguments = ["device", "apply", "--db", db, "--json", "--from-line", String(nextLine), ops.path]
                let out = Pipe()
                process.standardOutput = out
                process.standardError = FileHandle.nullDevice
                try process.run()
                // Half the kills land anywhere from start-up on (opening, creating
                // the schema), half while calls are being committed. What the
                // wait for the first output reads is kept: it may end in the
                // middle of a line that the rest of the output finishes.
                var output = Data()
                if attempt % 2 == 1 {
                    output = out.fileHandleForReading.availableData
                }
                usleep(UInt32(1_000 + random.next() % 60_000))
                kill(process.processIdentifier, SIGKILL)
                output += out.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                kills += 1

                for line in String(decoding: output, as: UTF8.self).split(separator: "\n") {
                    let json = try JSONReader.parse(String(line))
                    let number = try #require(json["line"]?.integer)
                    nextLine = Int(number) + 1
                    if let first = json["firstSeq"]?.integer, let last = json["lastSeq"]?.integer {
                        reported.append((try #require(json["call"]?.integer), first, last))
                    }
                }
                if nextLine > lines.count { nextLine = 1 }
                guard FileManager.default.fileExists(atPath: db) else { continue }

                let store = try DeviceStore(at: .file(db), options: StoreOptions(readOnly: true))
                let context = "seed \(seed) round \(round) kill \(attempt)"
                let verification = try store.verifyJournal()
                #expect(verification.isValid, "\(context): \(verification.firstProblem?.message ?? "")")
                var calls: [Int64: Int64] = [:]
                try store.scanJournal { record in
                    calls[Int64(record.seq.rawValue)] = Int64(record.call.rawValue)
                    return true
                }
                for commit in reported {
                    for seq in commit.first...commit.last {
                        #expect(calls[seq] == commit.call, "\(context): reported call \(commit.call) lost seq \(seq)")
                    }
                }
                #expect(try store.projectionDigest() == store.rebuiltProjectionDigest(), "\(context): projections differ from a rebuild")
            }
        }
        #expect(kills >= 200)
    }
}
