import Foundation
import IndexModel
import LocalPrivacy
import Testing

/// The count-mean sketch estimates counts it never saw in the clear, and
/// refuses parameters and reports out of range.
@Suite struct CountMeanSketchTests {
    private func item(_ number: Int) -> [UInt8] {
        Array("item-\(number)".utf8) + [UInt8](repeating: 0, count: 32 - "item-\(number)".utf8.count)
    }

    /// 20,000 devices over 5 items held 8,000 / 6,000 / 4,000 / 2,000 / 0
    /// times, ε = 4: each estimate is within 600 of the true count, four
    /// standard deviations or more. One report adds about c²/4 to an
    /// estimate's variance with CMS and c² with HCMS (c = (e^(ε/2) + 1) /
    /// (e^(ε/2) − 1), and e^ε for HCMS), so at n = 20,000 the standard
    /// deviation is about 95 and 150.
    @Test(arguments: CountMeanSketch.Mode.allCases)
    func estimatesAreNearTheTrueCounts(mode: CountMeanSketch.Mode) throws {
        let parameters = try CountMeanSketch.Parameters(epsilon: 4, k: 64, m: 256, mode: mode)
        var sketch = CountMeanSketch(parameters)
        let random = SeededRandom(seed: 7)
        let counts = [8_000, 6_000, 4_000, 2_000, 0]
        for (number, count) in counts.enumerated() {
            for _ in 0..<count { try sketch.add(CountMeanSketch.report(item(number), parameters: parameters, random: random)) }
        }
        #expect(sketch.reports == 20_000)
        for (number, count) in counts.enumerated() {
            let estimate = sketch.estimate(item(number))
            #expect(abs(estimate - Double(count)) < 600, "\(mode) item \(number): \(estimate) for \(count)")
        }
    }

    /// One device's report of an item says little about it: over many
    /// reports of the same item by CMS, each bit is +1 about as often as
    /// e^(ε/2) / (1 + e^(ε/2)) at the item's bucket and 1 / (1 + e^(ε/2))
    /// elsewhere.
    @Test func aReportFlipsEachBitWithTheProbabilityEpsilonGives() throws {
        let parameters = try CountMeanSketch.Parameters(epsilon: 2, k: 1, m: 64, mode: .full)
        let bucket = parameters.bucket(item(1), hash: 0)
        let random = SeededRandom(seed: 3)
        var atBucket = 0, elsewhere = 0
        let reports = 20_000
        for _ in 0..<reports {
            guard case .full(_, let bits) = CountMeanSketch.report(item(1), parameters: parameters, random: random) else { return }
            if bits[0] >> UInt64(bucket) & 1 == 1 { atBucket += 1 }
            let other = (bucket + 1) % 64
            if bits[0] >> UInt64(other) & 1 == 1 { elsewhere += 1 }
        }
        let p = parameters.flipProbability
        #expect(abs(Double(atBucket) / Double(reports) - (1 - p)) < 0.02)
        #expect(abs(Double(elsewhere) / Double(reports) - p) < 0.02)
    }

    @Test func parametersOutOfRangeAreRefusedSayingWhich() {
        #expect(throws: CountMeanSketchError.self) { try CountMeanSketch.Parameters(epsilon: 0, k: 4, m: 16, mode: .full) }
        #expect(throws: CountMeanSketchError.self) { try CountMeanSketch.Parameters(epsilon: .infinity, k: 4, m: 16, mode: .full) }
        #expect(throws: CountMeanSketchError.self) { try CountMeanSketch.Parameters(epsilon: 4, k: 0, m: 16, mode: .full) }
        #expect(throws: CountMeanSketchError.self) { try CountMeanSketch.Parameters(epsilon: 4, k: 4, m: 24, mode: .hadamard) }
        let error = #expect(throws: CountMeanSketchError.self) { try CountMeanSketch.Parameters(epsilon: 4, k: 4, m: 1 << 17, mode: .full) }
        #expect(error?.message.contains("power of two") == true)
    }

    @Test func aReportThatDoesNotFitTheSketchIsRefusedAndCountsNothing() throws {
        var full = CountMeanSketch(try CountMeanSketch.Parameters(epsilon: 4, k: 4, m: 128, mode: .full))
        var hadamard = CountMeanSketch(try CountMeanSketch.Parameters(epsilon: 4, k: 4, m: 128, mode: .hadamard))
        #expect(throws: CountMeanSketchError.self) { try full.add(.full(hash: 4, bits: [0, 0])) }
        #expect(throws: CountMeanSketchError.self) { try full.add(.full(hash: 0, bits: [0])) }
        #expect(throws: CountMeanSketchError.self) { try full.add(.hadamard(hash: 0, row: 0, positive: true)) }
        #expect(throws: CountMeanSketchError.self) { try hadamard.add(.hadamard(hash: 0, row: 128, positive: true)) }
        #expect(throws: CountMeanSketchError.self) { try hadamard.add(.hadamard(hash: -1, row: 0, positive: true)) }
        #expect(full.reports == 0 && hadamard.reports == 0)
    }

    /// A store keeps an HCMS sketch as each cell's sum of signs: the sketch
    /// made from those sums estimates exactly what the sketch that added
    /// the reports one by one does.
    @Test func aSketchFromStoredCellsEstimatesAsTheOneThatAddedTheReports() throws {
        let parameters = try CountMeanSketch.Parameters(epsilon: 4, k: 16, m: 128, mode: .hadamard)
        var added = CountMeanSketch(parameters)
        var totals: [Int: Int64] = [:]
        let random = SeededRandom(seed: 11)
        for number in 0..<500 {
            let report = CountMeanSketch.report(item(number % 7), parameters: parameters, random: random)
            try added.add(report)
            guard case .hadamard(let function, let row, let positive) = report else { return }
            totals[function * 128 + row, default: 0] += positive ? 1 : -1
        }
        var stored = try CountMeanSketch(parameters, cells: totals.map { ($0.key, $0.value) }, reports: 500)
        for number in 0..<8 {
            #expect(abs(stored.estimate(item(number)) - added.estimate(item(number))) < 1e-6)
        }
    }

    @Test func storedCellsOutOfRangeAreRefused() throws {
        let parameters = try CountMeanSketch.Parameters(epsilon: 4, k: 2, m: 4, mode: .hadamard)
        let outside = #expect(throws: CountMeanSketchError.self) { try CountMeanSketch(parameters, cells: [(8, 1)], reports: 1) }
        #expect(outside?.message.contains("outside a 2 × 4 sketch") == true)
        #expect(throws: CountMeanSketchError.self) { try CountMeanSketch(parameters, cells: [(-1, 1)], reports: 1) }
        let signs = #expect(throws: CountMeanSketchError.self) { try CountMeanSketch(parameters, cells: [(0, 2), (1, -2)], reports: 3) }
        #expect(signs?.message.contains("more than their 3 reports") == true)
        #expect(throws: CountMeanSketchError.self) { try CountMeanSketch(parameters, cells: [(0, Int64.min)], reports: 5) }
        #expect(throws: CountMeanSketchError.self) { try CountMeanSketch(parameters, cells: [], reports: -1) }
        let full = try CountMeanSketch.Parameters(epsilon: 4, k: 2, m: 4, mode: .full)
        #expect(throws: CountMeanSketchError.self) { try CountMeanSketch(full, cells: [], reports: 0) }
    }
}
