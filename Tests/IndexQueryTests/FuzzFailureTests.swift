import Foundation
import IndexModel
import IndexQuery
import Testing

/// The inputs `tools/fuzz/run query-parser` saved as failures
/// (`tools/fuzz/failures/query-parser/`), checked as the fuzz target checks
/// them, so CI replays them without building the fuzz targets.
@Suite struct FuzzFailureTests {
    static let failures: [String] = {
        var directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: directory.appendingPathComponent("Package.swift").path) {
            directory = directory.deletingLastPathComponent()
        }
        let failures = directory.appendingPathComponent("tools/fuzz/failures/query-parser")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: failures.path)) ?? []
        return names.filter { !$0.hasPrefix(".") && !$0.hasPrefix("README") }.sorted()
            .map { failures.appendingPathComponent($0).path }
    }()

    @Test func everySavedQueryParserFailureIsThere() {
        #expect(FuzzFailureTests.failures.count >= 3)
    }

    /// A query that parses prints to text that parses back to the same
    /// expression; one that does not renders its error as three lines.
    @Test(arguments: FuzzFailureTests.failures)
    func aSavedQueryParserFailureParsesAndPrintsBackOrFailsInThreeLines(path: String) throws {
        let query = String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
        do {
            let expression = try QueryParser.parse(query)
            #expect(try QueryParser.parse(expression.description) == expression)
            _ = try? CompiledQuery(expression, now: Timestamp(millisecondsSince1970: 1_795_000_000_000))
                .matches(SearchableItem(uniqueIdentifier: "1"), budget: .unlimited)
        } catch {
            #expect(error.rendered(query: query).split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).count == 3)
        }
    }
}
