import ArgumentParser
import IndexModel

/// The private popularity settings `--epsilon` and `--daily-budget` give
/// (`cloud serve`, `simulate`), every range checked as a usage error.
enum PopularityOptions {
    /// ε per report (default 4) and the daily budget (default twice ε),
    /// each a decimal with at most three places, and the sketch's shape.
    static func settings(epsilon: String?, dailyBudget: String?, hashes: Int, buckets: Int) throws -> PrivatePopularity {
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
