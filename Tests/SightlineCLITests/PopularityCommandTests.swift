import Foundation
import IndexModel
import Testing

/// `cloud serve --popularity`: an operator chooses how an app counts
/// popularity, and every option out of range is a usage error that says
/// which and why.
@Suite struct PopularityCommandTests {
    @Test(arguments: [
        (["--popularity", "ldp"], "--popularity sets the mode of the app given with --app"),
        (["--epsilon", "2"], "--epsilon, --daily-budget and --sketch-* need --popularity ldp"),
        (["--app", "com.example.app", "--popularity", "exact", "--sketch-buckets", "512"],
         "--epsilon, --daily-budget and --sketch-* need --popularity ldp"),
        (["--app", "com.example.app", "--popularity", "fuzzy"], "--popularity must be exact or ldp (got \"fuzzy\")"),
        (["--app", "com.example.app", "--popularity", "ldp", "--epsilon", "1.2345"],
         "--epsilon must be a positive number with at most 3 decimals (got \"1.2345\")"),
        (["--app", "com.example.app", "--popularity", "ldp", "--epsilon", "30"], "ε must be from 0.001 to 20, not 30"),
        (["--app", "com.example.app", "--popularity", "ldp", "--epsilon", "4", "--daily-budget", "2"],
         "the daily budget must hold at least one report (ε 4)"),
        (["--app", "com.example.app", "--popularity", "ldp", "--sketch-buckets", "1000"], "m must be a power of two"),
        (["--app", "com.example.app", "--popularity", "ldp", "--sketch-hashes", "0"], "k must be 1 to 65,536"),
        (["--app", "com.example.app", "--popularity", "ldp", "--sketch-hashes", "65536", "--sketch-buckets", "65536"],
         "a sketch of k 65536 × m 65536 has more than 4194304 cells"),
    ]) func aPopularityOptionOutOfRangeIsAUsageError(options: [String], says: String) throws {
        let result = try CLIRunner.run(["cloud", "serve", "--db", "cloud.sqlite"] + options)
        #expect(result.status == 64, "\(options): \(result.stderr)")
        #expect(result.stderr.contains(says), "\(options): \(result.stderr)")
    }

    /// The server says the mode it serves; a device hears it in its first
    /// ack, journals it, and reports its later engagements privately within
    /// the day's budget.
    @Test func aServerCountsAnAppsPopularityPrivatelyAndSaysSo() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try servedCloud(directory, threshold: 2,
                                     extra: ["--popularity", "ldp", "--epsilon", "2", "--daily-budget", "10.5"])
        let announced = String(decoding: FileManager.default.contents(atPath: server.stderr.path) ?? Data(), as: UTF8.self)
        #expect(announced.contains("app com.example.app: popularity ldp (ε 2 a report, 10.5 a day: 5 reports; sketch 64 × 1024)"),
                "\(announced)")
        let operations = directory.appendingPathComponent("ops.jsonl")
        let url = "https://recipes.example.com/potato-soup"
        try Data("""
            {"op":"activity","type":"com.example.recipes/browseRecipe","title":"Potato Soup","url":"\(url)","searchable":true,"public":true}
            {"op":"engage","ref":"\(url)"}

            """.utf8).write(to: operations)
        let store = directory.appendingPathComponent("device.sqlite").path
        #expect(try CLIRunner.run(["device", "apply", "--db", store, operations.path]).status == 0)
        let secret = directory.appendingPathComponent("secret").path
        let sync = try CLIRunner.run(["sync", "--db", store, "--cloud", server.url, "--enrolment-secret-file", secret])
        #expect(sync.status == 0, "\(sync.stderr)")
        #expect(sync.stdout.contains("the app now counts popularity privately: a randomised report per engagement, ε 2 each, "
                                     + "at most ε 10.5 a day"), "\(sync.stdout)")
        // The engagement before the mode was heard went as a signal; the next
        // ones go as reports, five a day.
        try Data(String(repeating: #"{"op":"engage","ref":"\#(url)"}"# + "\n", count: 7).utf8).write(to: operations)
        #expect(try CLIRunner.run(["device", "apply", "--db", store, operations.path]).status == 0)
        let again = try CLIRunner.json(["sync", "--db", store, "--cloud", server.url, "--enrolment-secret-file", secret, "--json"])
        #expect(again["messagesAcknowledged"] == .integer(5) && again["popularityLearned"] == nil, "\(again)")
        server.process.terminate()
        server.process.waitUntilExit()
        let cloud = directory.appendingPathComponent("cloud.sqlite").path
        let stats = try CLIRunner.json(["cloud", "stats", "--db", cloud, "--json"])
        #expect(stats["devices"] == .integer(1) && stats["reports"] == .integer(5), "\(stats)")
        #expect(stats["privatePopularity"]?["com.example.app"]?["dailyBudget"] == .string("10.5"), "\(stats)")
        let export = try CLIRunner.run(["journal", "export", "--db", store])
        #expect(export.stdout.contains(#""kind":"popularityModeLearned","mode":"ldp","epsilon":"2","dailyBudget":"10.5""#),
                "\(export.stdout)")
    }
}
