import Crypto
import Foundation
import IndexModel

/// Apple's count-mean sketch, a local differential privacy frequency oracle
/// ("Learning with Privacy at Scale", Apple's Differential Privacy Team,
/// 2017): each device sends one randomised report of one item, and a server
/// that adds up many reports estimates how many devices hold each item
/// without learning any one device's.
///
/// An item is a 32-byte hash (a public hash, in Sightline). `k` hash
/// functions map it into `m` buckets; a report picks one of them at random
/// and randomises the item's bucket:
/// - **CMS** (`Mode.full`): the report is the one-hot vector of the bucket
///   in {−1, +1}^m with each entry flipped with probability
///   1 / (1 + e^(ε/2)): m bits a report.
/// - **HCMS** (`Mode.hadamard`): the report is one entry, at a random row
///   `l`, of the bucket's column of the m × m Hadamard matrix, flipped with
///   probability 1 / (1 + e^ε): one bit and two indexes. `m` is a power
///   of two.
///
/// Either report is ε-differentially private for its device. The server's
/// sketch is k × m; an item's estimate is
/// `m / (m − 1) · (1/k · Σ_j M[j][h_j(item)] − n / m)` over `n` reports,
/// unbiased for the item's count.
public struct CountMeanSketch: Sendable {
    public enum Mode: String, Sendable, CaseIterable {
        case full
        case hadamard
    }

    public struct Parameters: Hashable, Sendable {
        public let epsilon: Double
        /// Hash functions (rows of the sketch).
        public let k: Int
        /// Buckets of each (columns of the sketch); a power of two.
        public let m: Int
        public let mode: Mode

        /// Checks the ranges: ε in (0, 20], k in 1…65,536, m a power of two in 2…65,536.
        public init(epsilon: Double, k: Int, m: Int, mode: Mode) throws(CountMeanSketchError) {
            guard epsilon.isFinite, epsilon > 0, epsilon <= 20 else {
                throw CountMeanSketchError("ε must be a number in (0, 20], not \(epsilon)")
            }
            guard (1...65_536).contains(k) else { throw CountMeanSketchError("k must be 1 to 65,536 hash functions, not \(k)") }
            guard (2...65_536).contains(m), m & (m - 1) == 0 else {
                throw CountMeanSketchError("m must be a power of two from 2 to 65,536, not \(m)")
            }
            self.epsilon = epsilon
            self.k = k
            self.m = m
            self.mode = mode
        }

        /// Parameters whose ranges were checked already.
        init(checkedEpsilon epsilon: Double, k: Int, m: Int, mode: Mode) {
            self.epsilon = epsilon
            self.k = k
            self.m = m
            self.mode = mode
        }

        /// The probability a report's bit is flipped.
        public var flipProbability: Double {
            mode == .full ? 1 / (1 + exp(epsilon / 2)) : 1 / (1 + exp(epsilon))
        }

        /// The de-biasing constant c_ε of the server's update.
        var scale: Double {
            let e = mode == .full ? exp(epsilon / 2) : exp(epsilon)
            return (e + 1) / (e - 1)
        }

        /// Bucket of `item` under hash function `j`: the first eight bytes of
        /// SHA-256(`"sightline cms v1"` ‖ j as 4 bytes big-endian ‖ item), modulo m.
        public func bucket(_ item: [UInt8], hash j: Int) -> Int {
            var hasher = SHA256()
            hasher.update(data: Array("sightline cms v1".utf8))
            withUnsafeBytes(of: UInt32(j).bigEndian) { hasher.update(bufferPointer: $0) }
            hasher.update(data: item)
            let digest = hasher.finalize()
            let value = digest.withUnsafeBytes { bytes in
                bytes.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            }
            return Int(value & UInt64(m - 1))
        }
    }

    /// One device's randomised report.
    public enum Report: Hashable, Sendable {
        /// CMS: the hash function, and the m randomised bits (bit i of word
        /// i / 64 set for +1).
        case full(hash: Int, bits: [UInt64])
        /// HCMS: the hash function, the Hadamard row, and the randomised entry.
        case hadamard(hash: Int, row: Int, positive: Bool)
    }

    public let parameters: Parameters
    /// The sketch, row after row (k × m).
    private var sketch: [Double]
    /// Reports added.
    public private(set) var reports = 0
    private var transformed: [Double]?

    public init(_ parameters: Parameters) {
        self.parameters = parameters
        sketch = Array(repeating: 0, count: parameters.k * parameters.m)
    }

    /// The HCMS sketch of `reports` reports whose signs summed to `total`
    /// in each cell (hash function × m + row), as a store keeps it: the same
    /// sketch `add` makes of them, in any order. A cell out of range, or
    /// more signs than reports, is refused.
    public init(_ parameters: Parameters, cells: [(cell: Int, total: Int64)], reports: Int) throws(CountMeanSketchError) {
        guard parameters.mode == .hadamard else { throw CountMeanSketchError("stored cells are an HCMS sketch's") }
        guard reports >= 0 else { throw CountMeanSketchError("a sketch of \(reports) reports") }
        self.init(parameters)
        let weight = Double(parameters.k) * parameters.scale
        var signs: Int64 = 0
        for (cell, total) in cells {
            guard sketch.indices.contains(cell) else {
                throw CountMeanSketchError("cell \(cell) is outside a \(parameters.k) × \(parameters.m) sketch")
            }
            let size = total == .min ? Int64.max : abs(total)
            guard size <= Int64(reports) - signs else {
                throw CountMeanSketchError("the cells' signs add up to more than their \(reports) reports")
            }
            signs += size
            sketch[cell] += Double(total) * weight
        }
        self.reports = reports
    }

    // MARK: The device

    /// A device's report of `item`, randomised with `random`.
    public static func report(_ item: [UInt8], parameters: Parameters, random: some RandomSource) -> Report {
        let k = parameters.k, m = parameters.m
        let j = Int(random.next() % UInt64(k))
        let bucket = parameters.bucket(item, hash: j)
        // A flip is a draw below the probability, in 53-bit fixed point.
        let threshold = UInt64(parameters.flipProbability * Double(UInt64(1) << 53))
        func flips() -> Bool { random.next() >> 11 < threshold }
        switch parameters.mode {
        case .full:
            var bits = [UInt64](repeating: 0, count: (m + 63) / 64)
            for i in 0..<m {
                let positive = (i == bucket) != flips()
                if positive { bits[i >> 6] |= 1 << UInt64(i & 63) }
            }
            return .full(hash: j, bits: bits)
        case .hadamard:
            let row = Int(random.next() & UInt64(m - 1))
            // H[row][bucket] of the Sylvester Hadamard matrix: +1 when
            // row & bucket has an even number of set bits.
            let entry = (row & bucket).nonzeroBitCount % 2 == 0
            return .hadamard(hash: j, row: row, positive: entry != flips())
        }
    }

    // MARK: The server

    /// Adds a report, checked against the parameters (a report is outside
    /// bytes: a hash function, row or bit count out of range is refused).
    public mutating func add(_ report: Report) throws(CountMeanSketchError) {
        let k = parameters.k, m = parameters.m
        let weight = Double(k) * parameters.scale
        switch (report, parameters.mode) {
        case (.full(let j, let bits), .full):
            guard (0..<k).contains(j), bits.count == (m + 63) / 64 else {
                throw CountMeanSketchError("a CMS report needs a hash function below \(k) and \(m) bits")
            }
            // k · (c/2 · v_i + 1/2) for v_i = ±1: k(c + 1)/2 for +1, k(1 − c)/2 for −1.
            let plus = Double(k) * (parameters.scale + 1) / 2, minus = Double(k) * (1 - parameters.scale) / 2
            let base = j * m
            for i in 0..<m {
                sketch[base + i] += bits[i >> 6] >> UInt64(i & 63) & 1 == 1 ? plus : minus
            }
        case (.hadamard(let j, let row, let positive), .hadamard):
            guard (0..<k).contains(j), (0..<m).contains(row) else {
                throw CountMeanSketchError("an HCMS report needs a hash function below \(k) and a row below \(m)")
            }
            sketch[j * m + row] += positive ? weight : -weight
        default:
            throw CountMeanSketchError("a \(report) report does not fit a \(parameters.mode.rawValue) sketch")
        }
        reports += 1
        transformed = nil
    }

    /// Makes the Hadamard transform estimates read, if it is not made: a
    /// sketch kept for many estimates makes it once, and its copies share it.
    public mutating func prepareEstimates() {
        if parameters.mode == .hadamard && transformed == nil {
            transformed = Self.transform(sketch, rows: parameters.k, m: parameters.m)
        }
    }

    /// The estimated number of reports of `item`.
    public mutating func estimate(_ item: [UInt8]) -> Double {
        let k = parameters.k, m = parameters.m
        prepareEstimates()
        let matrix = parameters.mode == .hadamard ? transformed ?? sketch : sketch
        var sum = 0.0
        for j in 0..<k { sum += matrix[j * m + parameters.bucket(item, hash: j)] }
        return Double(m) / Double(m - 1) * (sum / Double(k) - Double(reports) / Double(m))
    }

    /// Each row times the Hadamard matrix (symmetric, so its transpose), by
    /// the fast Walsh–Hadamard transform: k · m · log2 m additions.
    static func transform(_ sketch: [Double], rows: Int, m: Int) -> [Double] {
        var out = sketch
        out.withUnsafeMutableBufferPointer { values in
            for row in 0..<rows {
                let base = row * m
                var width = 1
                while width < m {
                    var start = 0
                    while start < m {
                        for i in start..<(start + width) {
                            let a = values[base + i], b = values[base + i + width]
                            values[base + i] = a + b
                            values[base + i + width] = a - b
                        }
                        start += 2 * width
                    }
                    width *= 2
                }
            }
        }
        return out
    }
}

/// A parameter or report out of range, in words.
public struct CountMeanSketchError: Error, Hashable, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

extension PrivatePopularity {
    /// The Hadamard sketch these settings describe (their ranges are the
    /// sketch's own).
    public var sketch: CountMeanSketch.Parameters {
        CountMeanSketch.Parameters(checkedEpsilon: Double(epsilonThousandths) / 1000, k: hashes, m: buckets, mode: .hadamard)
    }
}
