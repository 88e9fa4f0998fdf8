import ArgumentParser
import DeviceStore
import Foundation
import IndexModel
import IndexQuery
import WebMarkup

/// `bench linear`: that no parser of outside bytes, and no query, does work
/// that grows faster than its input. Each case times the same work on an
/// input of size n (the baseline) and of `factor` × n, and reports the ratio
/// of the two times: linear work has a ratio near the factor, quadratic work
/// near its square. The target is at most 1.5 × the factor.
struct LinearBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "linear",
        abstract: "Parser and query work against input size: each case at n and at factor × n, and the ratio of their times.",
        discussion: """
            Cases: an operations line holding one object of n members (the JSON reader and the \
            operations parser); a snapshot manifest of n client states (the JSON reader); a page \
            of 200 nested microdata properties over n KiB of text, and one of n sibling items \
            (the markup reader); and a query of 20 wildcard predicates over n items (the query \
            engine), which also reports the nanoseconds one unit of QueryBudget takes. Each \
            time is the median of --rounds runs. The target is a ratio of at most 1.5 times \
            the factor.
            """
    )

    @Option(name: .long, help: "The baseline size of the cases (members, client states; a tenth of it sibling items, a hundredth KiB of page text, a twentieth store items).")
    var size = 20_000

    @Option(name: .long, help: "How much larger the second input is.")
    var factor = 4

    @Option(name: .long, help: "Timed runs of each input; the median counts.")
    var rounds = 5

    @Flag(name: .long, help: "Exit with status 1 when a case misses its target.")
    var check = false

    @OptionGroup var output: JSONOption

    func validate() throws {
        guard (100...1_000_000).contains(size) else { throw ValidationError("--size must be between 100 and 1000000") }
        guard (2...16).contains(factor) else { throw ValidationError("--factor must be between 2 and 16") }
        guard (1...100).contains(rounds) else { throw ValidationError("--rounds must be between 1 and 100") }
    }

    func run() throws {
        let results = try LinearBenchmark(size: size, factor: factor, rounds: rounds).run()
        if output.json {
            Output.json(.object([
                "benchmark": .string("linear"),
                "size": .integer(Int64(size)),
                "factor": .integer(Int64(factor)),
                "rounds": .integer(Int64(rounds)),
                "cases": .array(results.map { result in
                    var object: JSONObject = [
                        "name": .string(result.name),
                        "baselineSize": .integer(Int64(result.baselineSize)),
                        "baselineSeconds": .double(result.baselineSeconds),
                        "largerSize": .integer(Int64(result.largerSize)),
                        "largerSeconds": .double(result.largerSeconds),
                        "ratio": .double(result.ratio),
                        "target": .double(result.target),
                        "met": .bool(result.meetsTarget),
                    ]
                    if let unit = result.nanosecondsPerUnit { object["nanosecondsPerUnit"] = .double(unit) }
                    return .object(object)
                }),
            ]))
        } else {
            Output.line("bench linear  factor=\(factor)  rounds=\(rounds)  (ratio of the times at factor × n and at n)")
            var rows = [["case", "n", "seconds", "\(factor) × n", "seconds", "ratio", "target", ""]]
            for result in results {
                rows.append([result.name, String(result.baselineSize), String(format: "%.4f", result.baselineSeconds),
                             String(result.largerSize), String(format: "%.4f", result.largerSeconds), String(format: "%.2f", result.ratio),
                             String(format: "≤ %.1f", result.target), result.meetsTarget ? "met" : "MISSED"])
            }
            Output.table(rows)
            for result in results {
                if let unit = result.nanosecondsPerUnit {
                    Output.line("  \(result.name): one QueryBudget unit took \(String(format: "%.2f", unit)) ns")
                }
            }
        }
        if check && results.contains(where: { !$0.meetsTarget }) {
            Output.error("a case missed its target")
            throw ExitStatus.checkFailed
        }
    }
}

struct LinearBenchmark {
    let size: Int
    let factor: Int
    let rounds: Int

    struct Result {
        let name: String
        let baselineSize: Int
        let baselineSeconds: Double
        let largerSize: Int
        let largerSeconds: Double
        /// For the query: what one unit of its budget took at the larger size.
        let nanosecondsPerUnit: Double?

        var ratio: Double { largerSeconds / max(baselineSeconds, 1e-9) }
        var target: Double { 1.5 * Double(largerSize) / Double(baselineSize) }
        var meetsTarget: Bool { ratio <= target }
    }

    /// One case: how to make its input of a size, and the work timed on it
    /// (which returns the query units it spent, if any).
    struct Case {
        let name: String
        /// The baseline size, from `size`.
        let baseline: (Int) -> Int
        let make: (Int) throws -> Any
        let work: (Any) throws -> Int?
    }

    func run() throws -> [Result] {
        try cases.map { benchmarkCase in
            let small = benchmarkCase.baseline(size)
            let large = small * factor
            let (smallSeconds, _) = try time(benchmarkCase, small)
            let (largeSeconds, units) = try time(benchmarkCase, large)
            return Result(name: benchmarkCase.name, baselineSize: small, baselineSeconds: smallSeconds, largerSize: large,
                          largerSeconds: largeSeconds, nanosecondsPerUnit: units.map { largeSeconds * 1e9 / Double(max($0, 1)) })
        }
    }

    /// The median time of `rounds` runs of the case's work on one input.
    private func time(_ benchmarkCase: Case, _ size: Int) throws -> (Double, Int?) {
        let input = try benchmarkCase.make(size)
        var seconds: [Double] = []
        var units: Int?
        for _ in 0..<rounds {
            let start = ContinuousClock.now
            units = try benchmarkCase.work(input)
            let elapsed = ContinuousClock.now - start
            seconds.append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        }
        return (seconds.sorted()[seconds.count / 2], units)
    }

    var cases: [Case] {
        [
            Case(name: "operations line, one object of n members", baseline: { $0 }, make: { count in
                var line = #"{"op":"index","index":"i","items":[{"id":"1"}],"#
                for member in 0..<count { line += #""m\#(member)":\#(member),"# }
                line += #""last":0}"#
                return Array(line.utf8)
            }, work: { input in
                // Refused at its first unknown member, once the whole line is read.
                _ = try? OperationParser.parse(line: input as! [UInt8])
                return nil
            }),
            Case(name: "snapshot manifest, n client states", baseline: { $0 }, make: { count in
                var states = JSONObject()
                for index in 0..<count { states["index-\(index)"] = .string("AQID") }
                let manifest: JSONObject = ["format": .string("sightline-snapshot"), "version": .integer(1), "kind": .string("device"),
                                            "clientStates": .object(states)]
                return Array(JSONWriter.pretty(.object(manifest)).utf8)
            }, work: { input in
                guard case .object(let manifest) = try JSONReader.parse(input as! [UInt8]), case .object(let states)? = manifest["clientStates"] else {
                    throw BenchError(message: "the manifest did not read back")
                }
                for key in states.keys where states[key] == nil { throw BenchError(message: "a client state is lost") }
                return nil
            }),
            // Pages stay within WebMarkupReader.maximumBytes at factor × n.
            Case(name: "page, 200 nested itemprops over n KiB of text", baseline: { min(max($0 / 100, 4), 1_900 / factor) }, make: { kibibytes in
                let open = String(repeating: #"<div itemprop="name">"#, count: 200)
                let text = String(repeating: String(repeating: "word ", count: 204) + "\n", count: kibibytes)
                let page = #"<html><body><div itemscope itemtype="https://schema.org/Thing">"# + open + text
                    + String(repeating: "</div>", count: 201) + "</body></html>"
                return Array(page.utf8)
            }, work: { input in
                _ = try WebMarkupReader.read(input as! [UInt8]).preview
                return nil
            }),
            Case(name: "page, n sibling microdata properties", baseline: { min($0 / 10, 2_000_000 / (48 * factor)) }, make: { count in
                var page = #"<html><body><div itemscope itemtype="https://schema.org/Thing">"#
                for index in 0..<count { page += #"<span itemprop="name">name \#(index)</span>"# }
                page += "</div></body></html>"
                return Array(page.utf8)
            }, work: { input in
                _ = try WebMarkupReader.read(input as! [UInt8]).preview
                return nil
            }),
            Case(name: "query, 20 wildcard predicates over n items", baseline: { max($0 / 20, 100) }, make: { count in
                let store = try DeviceStore(at: .memory, options: StoreOptions(random: SeededRandom(seed: 1)))
                var items: [SearchableItem] = []
                for number in 0..<count {
                    var attributes = AttributeSet()
                    attributes.title = "item " + String(repeating: "abcdefghijklm ", count: 30)
                    attributes.contentDescription = String(repeating: "nopqrstuvwxyz ", count: 30)
                    items.append(SearchableItem(uniqueIdentifier: "\(number)", attributes: attributes))
                    if items.count == 5_000 {
                        _ = try store.perform(.index(index: "bench", items: items))
                        items.removeAll(keepingCapacity: true)
                    }
                }
                if !items.isEmpty { _ = try store.perform(.index(index: "bench", items: items)) }
                return store
            }, work: { input in
                let store = input as! DeviceStore
                let query = try QueryParser.parse((0..<20).map { _ in #"** == "*a*e*i*m*z*"cd"# }.joined(separator: " || "))
                let budget = QueryBudget(units: .max)
                let found = try store.query(query, budget: budget)
                guard found.isEmpty else { throw BenchError(message: "the query matched \(found.count) items") }
                return budget.spent
            }),
        ]
    }
}
