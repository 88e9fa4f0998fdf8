import ArgumentParser
import Foundation
import DeviceStore
import IndexModel
import IndexQuery

struct QueryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Find the items a Core Spotlight query matches (docs/QUERY.md).",
        discussion: """
            Examples:
              sightline device query --db D 'title == "Paris"wc'
              sightline device query --db D 'rating >= 4 && startDate > $time.today(-7)' --fetch title,rating
              sightline device query --db D '** == "proj* upd*"cdt' --json
            """
    )

    @OptionGroup var store: StoreOption
    @OptionGroup var clockOption: ClockOption
    @OptionGroup var output: JSONOption
    @OptionGroup var budget: QueryBudgetOption

    @Option(name: .long, help: ArgumentHelp(
        "Attributes to print for each item, comma-separated (default: title).", valueName: "attr,attr"))
    var fetch: String = "title"

    @Option(name: .long, help: ArgumentHelp("Only items of this named index.", valueName: "name"))
    var index: String?

    @Option(name: .long, help: "The most items to return (1…100000; default all).")
    var limit: Int?

    @Argument(help: ArgumentHelp("The query, for example 'title == \"Paris\"wc'.", valueName: "query"))
    var query: String

    var fetched: [String] {
        fetch.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
    }

    func validate() throws {
        if let limit, !(1...100_000).contains(limit) { throw ValidationError("--limit must be between 1 and 100000") }
        if fetched.isEmpty || fetched.contains(where: \.isEmpty) {
            throw ValidationError("--fetch: expected attribute names separated by commas, such as title,rating")
        }
    }

    func run() throws {
        let expression = try QueryCommand.parse(query)
        let clock = clockOption.makeClock()
        let device = try store.openReadOnly(clock: clock)
        try clockOption.catchUp(clock, with: device)
        let matches: [QueryMatch]
        do {
            matches = try device.query(expression, index: index, limit: limit, budget: budget.make())
        } catch {
            throw error.exit()
        }
        let names = fetched
        if output.json {
            Output.json(.object([
                "query": .string(expression.description),
                "count": .integer(Int64(matches.count)),
                "items": .array(matches.map { match in
                    var attributes = JSONObject()
                    for name in names {
                        if let value = match.item.value(of: name) { attributes[name] = value.jsonValue }
                    }
                    return .object(["index": .string(match.index), "id": .string(match.item.uniqueIdentifier),
                                    "attributes": .object(attributes)])
                }),
            ]))
            return
        }
        if matches.isEmpty {
            Output.line("no items")
            return
        }
        var rows = [["index", "id"] + names]
        for match in matches {
            rows.append([match.index, match.item.uniqueIdentifier] + names.map { name in
                match.item.value(of: name).map(QueryCommand.text) ?? "-"
            })
        }
        Output.table(rows)
    }

    /// Parses a query or prints the error with a caret and exits with status 2.
    static func parse(_ query: String) throws -> QueryExpression {
        do {
            return try QueryParser.parse(query)
        } catch {
            Output.error(error.rendered(query: query))
            throw ExitStatus.invalidInput
        }
    }

    static func text(_ value: AttributeValue) -> String {
        switch value {
        case .string(let text): text
        case .strings(let list): list.joined(separator: ", ")
        case .number(let number): number.description
        case .date(let timestamp): timestamp.description
        case .bool(let flag): flag ? "true" : "false"
        }
    }
}
