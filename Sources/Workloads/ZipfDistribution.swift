import Foundation
import IndexModel

/// Zipf's law over ranks 0..<count (rank 0 the most popular), sampled by
/// inverting the cumulative weights: the synthetic workloads, the search
/// corpus and the simulator's catalogue all draw from it.
public struct ZipfDistribution: Sendable {
    private let cumulative: [Double]

    /// - Parameters:
    ///   - count: the number of ranks (at least one is made).
    ///   - exponent: s; 1.0 is natural language's.
    public init(count: Int, exponent: Double) {
        var total = 0.0
        var sums: [Double] = []
        sums.reserveCapacity(max(count, 1))
        for rank in 1...max(count, 1) {
            total += 1 / pow(Double(rank), exponent)
            sums.append(total)
        }
        cumulative = sums.map { $0 / total }
    }

    /// The number of ranks (at least one).
    public var count: Int { cumulative.count }

    /// The rank at `unit`, a uniform draw in [0, 1).
    public func rank(at unit: Double) -> Int {
        var low = 0
        var high = cumulative.count - 1
        while low < high {
            let middle = (low + high) / 2
            if cumulative[middle] < unit { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// A rank drawn with `generator` (53 bits of one draw).
    public func draw(_ generator: inout SplitMix64) -> Int {
        rank(at: Double(generator.next() >> 11) / Double(1 << 53))
    }
}
