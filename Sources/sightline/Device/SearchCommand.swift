import ArgumentParser
import Foundation
import DeviceStore
import IndexModel

struct SearchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "search",
        abstract: "Search a device store as a user types: prefix matching, ranked by relevance and engagement."
    )

    @OptionGroup var store: StoreOption
    @OptionGroup var clockOption: ClockOption
    @OptionGroup var output: JSONOption

    @Option(name: .long, help: "The most results to return.")
    var limit: Int = 20

    @Flag(name: .long, help: "Explain each result's score: each word's relevance and weight, rankingHint, views, engagement and expiry.")
    var explain = false

    @Argument(help: ArgumentHelp("What the user typed.", valueName: "text"))
    var text: String

    func validate() throws {
        guard (1...1000).contains(limit) else { throw ValidationError("--limit must be between 1 and 1000") }
    }

    func run() throws {
        let clock = clockOption.makeClock()
        // Search folds new journal entries into the search index first, so it
        // opens the store for writing; it never creates one.
        guard FileManager.default.fileExists(atPath: store.db) else {
            Output.error("error: no store at \(store.db): check the path (search never creates a store)")
            throw ExitStatus.storeUnavailable
        }
        let device = try store.openForWriting(clock: clock)
        try clockOption.catchUp(clock, with: device)
        let results: [SearchResult]
        do {
            results = try device.search(text, limit: limit, explain: explain)
        } catch {
            Output.error("error: \(error.commandLineMessage)")
            throw ExitStatus.storeUnavailable
        }
        if output.json {
            Output.json(.object(["results": .array(results.map(\.jsonValue))]))
            return
        }
        if results.isEmpty {
            Output.line("no results")
            return
        }
        var rows = [["#", "score", "title", "members", "url"]]
        for (rank, result) in results.enumerated() {
            rows.append([
                String(rank + 1), String(format: "%.4g", result.score), result.title ?? "-",
                result.members.map(\.label).joined(separator: " + "), result.url ?? "-",
            ])
        }
        Output.table(rows)
        guard explain else { return }
        for (rank, result) in results.enumerated() {
            guard let explanation = result.explanation else { continue }
            Output.line("")
            Output.line("#\(rank + 1) \(result.title ?? "-"): score \(SearchCommand.number(explanation.score)), from \(explanation.member.label)")
            for word in explanation.words {
                let typed = word.isPrefix ? "\"\(word.typed)…\"" : "\"\(word.typed)\""
                Output.line("  \(typed) matched \"\(word.matched)\": relevance \(SearchCommand.number(word.relevance)) (BM25F)"
                            + " × weight \(SearchCommand.number(word.weight)) (idf) × multiplier = \(SearchCommand.number(word.points))")
            }
            Output.line("  multiplier \(SearchCommand.number(explanation.multiplier)) = " + [
                explanation.rankingHint.map { "rankingHint \(SearchCommand.number($0)): \(SearchCommand.number(explanation.hintFactor))" }
                    ?? (explanation.views == nil ? "no rankingHint: 1" : nil),
                explanation.views.map { "\($0) views: \(SearchCommand.number(explanation.viewFactor))" },
                "engaged \(explanation.engaged), shown \(explanation.shown): \(SearchCommand.number(explanation.engagementFactor))",
                "tie-break \(String(format: "%.9f", explanation.tieBreak))",
            ].compactMap { $0 }.joined(separator: " × "))
            Output.line("  " + (explanation.expires.map { "expires \($0) (then no longer shown; expiry does not change the score)" }
                                ?? "no expiry"))
        }
    }

    static func number(_ value: Double) -> String { String(format: "%.4g", value) }
}

extension SearchResult.Member {
    var label: String {
        switch self {
        case .item(let index, let identifier): "item \(index)/\(identifier)"
        case .activity(let key): "activity \(key)"
        }
    }

    var jsonValue: JSONValue {
        switch self {
        case .item(let index, let identifier):
            .object(["kind": .string("item"), "index": .string(index), "id": .string(identifier)])
        case .activity(let key):
            .object(["kind": .string("activity"), "key": .string(key)])
        }
    }
}

extension SearchResult {
    var jsonValue: JSONValue {
        var object: JSONObject = ["members": .array(members.map(\.jsonValue))]
        if let title { object["title"] = .string(title) }
        if let contentDescription { object["description"] = .string(contentDescription) }
        if let url { object["url"] = .string(url) }
        object["score"] = .double(score)
        object["shown"] = .integer(Int64(shown))
        object["engaged"] = .integer(Int64(engaged))
        if let explanation { object["explanation"] = explanation.jsonValue }
        return .object(object)
    }
}

extension SearchExplanation {
    var jsonValue: JSONValue {
        var object: JSONObject = [
            "member": member.jsonValue,
            "words": .array(words.map { word in
                .object(["typed": .string(word.typed), "prefix": .bool(word.isPrefix), "matched": .string(word.matched),
                         "relevance": .double(word.relevance), "weight": .double(word.weight), "points": .double(word.points)])
            }),
        ]
        object["rankingHint"] = rankingHint.map(JSONValue.double) ?? .null
        object["hintFactor"] = .double(hintFactor)
        object["views"] = views.map(JSONValue.integer) ?? .null
        object["viewFactor"] = .double(viewFactor)
        object["shown"] = .integer(Int64(shown))
        object["engaged"] = .integer(Int64(engaged))
        object["engagementFactor"] = .double(engagementFactor)
        object["tieBreak"] = .double(tieBreak)
        object["multiplier"] = .double(multiplier)
        object["expires"] = expires.map { .string(ISO8601.format($0)) } ?? .null
        object["score"] = .double(score)
        return .object(object)
    }
}
