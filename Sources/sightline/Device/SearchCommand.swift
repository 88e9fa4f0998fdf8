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
            results = try device.search(text, limit: limit)
        } catch {
            Output.error("error: \(error.message)")
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
    }
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
        return .object(object)
    }
}
