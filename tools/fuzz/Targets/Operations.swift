// Fuzz target operations: IndexModel's operations parser (one JSON Lines line),
// which `device apply` feeds with lines from a file.
//
// A line either parses to an operation that validates, holds no NUL in any of
// its strings, prints as one JSON line and parses back from it to the same
// operation, or is refused with an `OperationError`.
import Foundation
import IndexModel
import Workloads

enum Target {
    static func run(_ bytes: [UInt8]) {
        guard let operation = try? OperationParser.parse(line: bytes) else { return }
        let printed = Array(operation.jsonLine.utf8)
        // JSONWriter escapes every control character and line separator.
        contract(!printed.contains(0x0A) && !printed.contains(0x0D), "an operation prints as more than one line")
        contract(!operation.jsonLine.contains("\\u0000"), "an operation holds a NUL")
        contract((try? OperationParser.parse(line: printed)) == operation, "an operation does not parse back from its printed line")
    }

    /// Lines the synthetic workload writes, of every kind it makes.
    static func seeds() throws -> [(String, [UInt8])] {
        var workload = SyntheticWorkload(seed: 1, options: {
            var options = SyntheticWorkload.Options()
            options.itemsPerIndex = 3
            options.includeClock = true
            return options
        }())
        var seeds: [(String, [UInt8])] = []
        var kinds: [String: Int] = [:]
        for _ in 0..<400 where seeds.count < 24 {
            let operation = workload.nextOperation()
            guard kinds[operation.name, default: 0] < 2 else { continue }
            kinds[operation.name, default: 0] += 1
            seeds.append(("\(operation.name)-\(kinds[operation.name]!)", Array(operation.jsonLine.utf8)))
        }
        return seeds
    }
}
