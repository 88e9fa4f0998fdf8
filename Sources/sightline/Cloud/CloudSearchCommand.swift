import ArgumentParser
import CloudCore
import Foundation
import IndexModel
import IndexQuery

struct CloudSearchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "search",
        abstract: "Search an app's public index, ranked by relevance, popularity and engagement."
    )

    @OptionGroup var store: CloudStoreOption
    @OptionGroup var output: JSONOption
    @OptionGroup var budget: QueryBudgetOption

    @Option(name: .long, help: ArgumentHelp("The app whose public index to search.", valueName: "name"))
    var app: AppID

    @Option(name: .long, help: "The most results to return.")
    var limit: Int = 20

    @Option(name: .long, help: ArgumentHelp(
        "Keep only items this Core Spotlight query matches (docs/QUERY.md), e.g. 'engaged >= 10 && title == \"pot*\"cd'.",
        valueName: "query"))
    var query: String?

    @Flag(name: .long, help: "Explain each result's score (the words' fields, popularity, engagement) and how it became public (K, live votes, content agreement).")
    var explain = false

    @Argument(help: ArgumentHelp("What to search for (empty: the whole public index).", valueName: "text"))
    var text: String = ""

    func validate() throws {
        guard (1...1000).contains(limit) else { throw ValidationError("--limit must be between 1 and 1000") }
    }

    func run() throws {
        let expression = try query.map(QueryCommand.parse)
        let cloud = try store.open(readOnly: true)
        let filter = expression.map { CompiledQuery($0, now: cloud.now) }
        let results: [PublicResult]
        do {
            results = try cloud.search(app: app, text: text, filter: filter, limit: limit, explain: explain, budget: budget.make())
        } catch {
            Output.error("error: \(error.commandLineMessage)")
            throw error.code == .queryTooExpensive ? ExitStatus.invalidInput : ExitStatus.storeUnavailable
        }
        if output.json {
            Output.json(.object(["results": .array(results.map(\.jsonValue))]))
            return
        }
        if results.isEmpty {
            Output.line("no results")
            return
        }
        var rows = [["#", "score", "title", "devices", "engaged", "shown", "url"]]
        for (rank, result) in results.enumerated() {
            let entry = result.entry
            rows.append([String(rank + 1), String(format: "%.4g", result.score), entry.shownTitle ?? "-",
                         String(entry.voters),
                         entry.estimatedEngaged.map { "≈" + String(format: "%.0f", $0) } ?? String(entry.popularity.engaged),
                         String(entry.popularity.shown),
                         entry.content?.webpageURL ?? "-"])
        }
        Output.table(rows)
        for (rank, result) in results.enumerated() {
            guard let page = result.entry.page else { continue }
            var parts = ["from its crawled page"]
            if let deepLink = page.deepLink { parts.append("deep link \(deepLink)") }
            if let rating = page.rating {
                parts.append("rated \(String(format: "%g", rating))" + (page.ratingCount.map { " by \($0)" } ?? ""))
            }
            if let price = page.price { parts.append("price \(price)") }
            if let image = page.image { parts.append("image \(image)") }
            Output.line("#\(rank + 1): " + TextRule.printable(parts.joined(separator: "; "), limit: 8_192))
        }
        guard explain else { return }
        for (rank, result) in results.enumerated() {
            guard let explanation = result.explanation else { continue }
            let number = { (value: Double) in String(format: "%.4g", value) }
            Output.line("")
            Output.line("#\(rank + 1) \(TextRule.printable(result.entry.shownTitle ?? "-", limit: 4_096)): score \(number(explanation.score)) = relevance "
                        + "\(number(explanation.relevance)) × popularity \(number(explanation.popularityFactor)) × engagement "
                        + number(explanation.engagementFactor))
            for word in explanation.words {
                let typed = word.isPrefix ? "\"\(word.typed)…\"" : "\"\(word.typed)\""
                Output.line("  \(TextRule.printable(typed, limit: 1_024)) matched \"\(TextRule.printable(word.matched, limit: 1_024))\" in the \(word.field): \(number(word.weight))")
            }
            let engaged = explanation.estimatedEngaged.map {
                "engaged an estimated \(number($0)) times (private reports; below 0 counts as 0)"
            } ?? "engaged \(explanation.engaged) times"
            Output.line("  popularity: \(engaged), 1 + ln(1 + engaged); engagement: shown \(explanation.shown) "
                        + "times, 0.5 + (engaged + 1) / (shown + 2)")
            Output.line("  public: \(explanation.liveVotes) live votes of K = \(explanation.threshold); "
                        + (explanation.contentSource == "page"
                           ? "content from its crawled page, named by a live voter's offer"
                           : "content from devices, \(explanation.agreement) identical offers needed"))
        }
    }
}
