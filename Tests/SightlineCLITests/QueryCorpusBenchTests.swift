import Foundation
import IndexModel
import Testing

/// `bench query --corpus FILE [--queries FILE]`: the search benchmark on a
/// user's own items and queries. The figures are not judged (a test is no
/// place for timing); what is checked is that the user's items are the ones
/// searched, the user's queries the ones timed, and that a bad corpus or
/// queries file is refused with the file and the line.
@Suite struct QueryCorpusBenchTests {
    /// A small catalogue as a TSV: every line an item, one ID given twice
    /// (the later line replaces the item), one line without a description.
    static let catalogue = (0..<1200).map { index in
        "pkg-\(index)\t\(["harbour", "lantern", "orchard", "meadow"][index % 4]) tool \(index)\tfor \(["sailing", "reading", "gardening"][index % 3]) and more"
    }.joined(separator: "\n") + "\npkg-7\tlantern replaced\nlonely\ttitle only\n"

    @Test func aTSVCorpusIsIndexedAndTheQueriesOfAFileAreTimedOnBothSides() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let corpus = directory.appendingPathComponent("catalogue.tsv")
        try Self.catalogue.write(to: corpus, atomically: true, encoding: .utf8)
        let queries = directory.appendingPathComponent("queries.txt")
        try "harbour\n\nlantern sail\n  orch  \nnothing-like-it\n".write(to: queries, atomically: true, encoding: .utf8)
        let result = try CLIRunner.run(["bench", "query", "--corpus", corpus.path, "--queries", queries.path, "--json",
                                        "--dir", directory.appendingPathComponent("work").path])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let report = try JSONReader.parse(result.stdout)
        // 1,202 item lines, one of which indexes an ID again.
        #expect(report["items"] == .integer(1202))
        #expect(report["corpus"]?["format"] == .string("TSV"))
        #expect(report["corpus"]?["lines"] == .integer(1202))
        #expect(report["queriesFile"] == .string(queries.path))
        let kinds = try #require(report["kinds"]?.array)
        #expect(kinds.count == 1)
        #expect(kinds.first?["kind"] == .string("queries of queries.txt"))
        #expect(kinds.first?["examples"] == .array([.string("harbour"), .string("lantern sail"), .string("orch")]))
        // "harbour" is in 300 titles: both sides fill their page.
        #expect((kinds.first?["fullPages"]?.integer ?? 0) >= 1)
        for side in ["sightline", "naive"] {
            #expect((number(kinds.first?[side]?["p99Ms"]) ?? 0) > 0)
        }
    }

    @Test func queriesAreDrawnFromTheCorpusWordsAndCanBeSaved() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let corpus = directory.appendingPathComponent("catalogue.tsv")
        try Self.catalogue.write(to: corpus, atomically: true, encoding: .utf8)
        let saved = directory.appendingPathComponent("saved.txt")
        let result = try CLIRunner.run(["bench", "query", "--corpus", corpus.path, "--queries", "10", "--save-queries", saved.path,
                                        "--json"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let report = try JSONReader.parse(result.stdout)
        #expect(report["kinds"]?.array?.map { $0["kind"] } == [.string("prefix"), .string("single-term"), .string("two-term")])
        let lines = try String(contentsOf: saved, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(lines.count == 30)
        let words = Set(Self.catalogue.lowercased().split { !($0.isLetter || $0.isNumber) }.map(String.init))
        for (position, query) in lines.enumerated() {
            let parts = query.split(separator: " ").map(String.init)
            switch position / 10 {
            case 0: #expect(parts.count == 1 && (1...4).contains(query.count) && words.contains { $0.hasPrefix(query) }, "\(query)")
            case 1: #expect(parts.count == 1 && words.contains(query), "\(query)")
            default: #expect(parts.count == 2 && parts[0] != parts[1] && parts.allSatisfy(words.contains), "\(query)")
            }
        }
        // The saved file is what --queries FILE reads: the same queries, the same order.
        let again = try CLIRunner.run(["bench", "query", "--corpus", corpus.path, "--queries", saved.path, "--json"])
        #expect(again.status == 0, "stderr: \(again.stderr)")
        #expect(try JSONReader.parse(again.stdout)["kinds"]?.array?.first?["examples"] == .array(lines.prefix(3).map { .string($0) }))
    }

    @Test func anOperationsFileIsACorpusToo() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let corpus = directory.appendingPathComponent("ops.jsonl")
        let items = (0..<1500).map { #"{"id":"n\#($0)","title":"note \#($0 % 7) about harbour"}"# }
        try [
            #"{"op":"index","index":"notes","items":[\#(items[..<1000].joined(separator: ","))]}"#,
            #"{"op":"index","index":"notes","items":[\#(items[1000...].joined(separator: ","))]}"#,
            #"{"op":"delete","index":"notes","ids":["n3"]}"#,
        ].joined(separator: "\n").write(to: corpus, atomically: true, encoding: .utf8)
        let result = try CLIRunner.run(["bench", "query", "--corpus", corpus.path, "--queries", "10", "--json"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let report = try JSONReader.parse(result.stdout)
        #expect(report["corpus"]?["format"] == .string("operations file"))
        #expect(report["corpus"]?["lines"] == .integer(3))
        #expect(report["items"] == .integer(1500))
    }

    /// Each bad input: its file's contents, and what the message must say.
    static let badCorpora: [(name: String, bytes: [UInt8], message: String)] = [
        ("fields.tsv", Array("a\tb\tc\td\n".utf8), "fields.tsv line 1: 4 tab-separated fields"),
        ("id.tsv", Array("ok\ttitle\n\tno id\n".utf8), "id.tsv line 2: the ID (the first field) is empty"),
        ("utf8.tsv", Array("x\tt".utf8) + [0xFF, 0xFE, 0x0A], "utf8.tsv line 1: not valid UTF-8 (byte 4)"),
        ("empty.tsv", Array("ok\t\t\n".utf8), "empty.tsv line 1: the item has neither a title nor a description"),
        ("long-id.tsv", Array((String(repeating: "x", count: 2000) + "\tt\n").utf8), "long-id.tsv line 1: id: is 2000 bytes"),
        ("nothing.tsv", Array("\n \n".utf8), "the corpus"),
        ("ops.jsonl", Array(#"{"op":"index","index":"i","items":[{"id":"a","title":"hello"}]}"#.utf8) + [0x0A]
            + Array(#"{"op":"nope"}"#.utf8), "ops.jsonl line 2: op: unknown operation \"nope\""),
    ]

    /// Writes `bad`'s bytes to a file of its name, runs `bench query` with
    /// `arguments(path)`, and expects exit 2 with the message.
    private func expectRefused(_ bad: (name: String, bytes: [UInt8], message: String), _ arguments: (String) -> [String],
                               sourceLocation: SourceLocation = #_sourceLocation) throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent(bad.name).path
        #expect(FileManager.default.createFile(atPath: path, contents: Data(bad.bytes)), sourceLocation: sourceLocation)
        let result = try CLIRunner.run(["bench", "query"] + arguments(path))
        #expect(result.status == 2, "stdout: \(result.stdout)", sourceLocation: sourceLocation)
        #expect(result.stderr.contains(bad.message), "stderr: \(result.stderr)", sourceLocation: sourceLocation)
    }

    @Test(arguments: badCorpora.indices)
    func aBadCorpusLineIsRefusedWithItsFileAndLine(_ index: Int) throws {
        try expectRefused(Self.badCorpora[index]) { ["--corpus", $0, "--queries", "10"] }
    }

    static let badQueries: [(name: String, bytes: [UInt8], message: String)] = [
        ("utf8.txt", Array("fine\n".utf8) + [0x6F, 0x6B, 0xFF, 0x0A], "utf8.txt line 2: not valid UTF-8"),
        ("long.txt", Array((String(repeating: "a", count: 2000) + "\n").utf8), "long.txt line 1: a query is at most 1024 bytes"),
        ("blank.txt", Array("\n  \n".utf8), "blank.txt holds no query"),
    ]

    @Test(arguments: badQueries.indices)
    func aBadQueriesFileIsRefusedWithItsFileAndLine(_ index: Int) throws {
        try expectRefused(Self.badQueries[index]) { ["--items", "1000", "--queries", $0] }
    }

    @Test func itemsAndACorpusExcludeEachOther() throws {
        let result = try CLIRunner.run(["bench", "query", "--items", "2000", "--corpus", "any.tsv"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--items and --corpus exclude each other"))
        let missing = try CLIRunner.run(["bench", "query", "--corpus", "/nonexistent/corpus.tsv"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("cannot open the corpus /nonexistent/corpus.tsv"))
    }
}
