import ArgumentParser
import IndexModel

/// `--epsilon` and `--daily-budget`, which go with `--popularity ldp`
/// (`cloud serve`, `simulate`).
struct PopularityOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("With --popularity ldp: ε per report (default 4; at most 3 decimals).", valueName: "ε"))
    var epsilon: String?

    @Option(name: .long, help: ArgumentHelp(
        "With --popularity ldp: the ε a device may spend in a day of its own clock (default twice --epsilon).", valueName: "ε"))
    var dailyBudget: String?

    /// Whether either was given.
    var isGiven: Bool { epsilon != nil || dailyBudget != nil }

    /// The settings they give with the sketch's shape, every range checked
    /// as a usage error.
    func settings(hashes: Int, buckets: Int) throws -> PrivatePopularity {
        func thousandths(_ text: String, _ option: String) throws -> Int {
            guard let value = PrivatePopularity.thousandths(text) else {
                throw ValidationError("\(option) must be a positive number with at most 3 decimals (got \"\(text)\")")
            }
            return value
        }
        let perReport = try thousandths(epsilon ?? "4", "--epsilon")
        let budget = try dailyBudget.map { try thousandths($0, "--daily-budget") } ?? 2 * perReport
        do {
            return try PrivatePopularity(epsilonThousandths: perReport, dailyBudgetThousandths: budget, hashes: hashes, buckets: buckets)
        } catch {
            throw ValidationError("--popularity ldp: \(error.message)")
        }
    }
}
