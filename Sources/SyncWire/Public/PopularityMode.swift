import IndexModel
import LocalPrivacy

/// How an app's devices tell the cloud what is popular. The cloud chooses it
/// per app (`cloud serve --popularity`) and says it in every ack, so devices
/// learn it as they sync (`docs/CLOUD.md`, "Popularity under local
/// differential privacy").
public enum PopularityMode: Hashable, Sendable {
    /// Signals: exact views, shown and engaged deltas per hash.
    case exact
    /// Randomised reports of engaged hashes, through the count-mean sketch.
    case ldp(PrivatePopularity)

    public var name: String {
        switch self {
        case .exact: "exact"
        case .ldp: "ldp"
        }
    }

    /// The settings of the `ldp` mode, or nil.
    public var privateSettings: PrivatePopularity? {
        if case .ldp(let settings) = self { return settings }
        return nil
    }
}

/// The settings of an app's private popularity: ε per report, how much of it
/// a device may spend in a day of its own time, and the shape of the sketch
/// (Hadamard count-mean sketch, `CountMeanSketch.Mode.hadamard`).
///
/// ε and the budget are whole thousandths, so that they cross the wire and a
/// store exactly and two settings compare equal only when they are.
public struct PrivatePopularity: Hashable, Sendable {
    /// ε per report, in thousandths: 1 to 20,000.
    public let epsilonThousandths: Int
    /// ε a device may spend in one day of its own clock, in thousandths: at
    /// least one report's, at most 100,000.
    public let dailyBudgetThousandths: Int
    /// The sketch the reports are made for (ε, k hash functions, m buckets).
    public let sketch: CountMeanSketch.Parameters

    /// The largest daily budget a setting may give, in thousandths of ε.
    public static let maximumDailyBudgetThousandths = 100_000

    /// Checks every range, and says which one failed.
    public init(epsilonThousandths: Int, dailyBudgetThousandths: Int, hashes: Int, buckets: Int) throws(CountMeanSketchError) {
        guard (1...20_000).contains(epsilonThousandths) else {
            throw CountMeanSketchError("ε must be from 0.001 to 20, not \(Self.decimal(epsilonThousandths))")
        }
        guard (epsilonThousandths...PrivatePopularity.maximumDailyBudgetThousandths).contains(dailyBudgetThousandths) else {
            throw CountMeanSketchError("""
                the daily budget must hold at least one report (ε \(Self.decimal(epsilonThousandths))) and be at most \
                \(Self.decimal(PrivatePopularity.maximumDailyBudgetThousandths)), not \(Self.decimal(dailyBudgetThousandths))
                """)
        }
        sketch = try CountMeanSketch.Parameters(epsilon: Double(epsilonThousandths) / 1000, k: hashes, m: buckets, mode: .hadamard)
        self.epsilonThousandths = epsilonThousandths
        self.dailyBudgetThousandths = dailyBudgetThousandths
    }

    /// Reports a device may make in a day: the budget over ε, rounded down.
    public var reportsPerDay: Int { dailyBudgetThousandths / epsilonThousandths }

    /// Whether `report` was made for this sketch (the same ε, k and m).
    public func fits(_ report: PrivateReport) -> Bool {
        report.epsilonThousandths == epsilonThousandths && report.hashes == sketch.k && report.buckets == sketch.m
    }

    /// Thousandths as a decimal, "4" or "0.5".
    public static func decimal(_ thousandths: Int) -> String {
        let whole = thousandths / 1000, fraction = thousandths % 1000
        guard fraction != 0 else { return String(whole) }
        var digits = String(fraction + 1000).dropFirst()
        while digits.hasSuffix("0") { digits.removeLast() }
        return "\(whole).\(digits)"
    }

    /// A decimal ε or budget ("4", "0.5") in whole thousandths, or nil when
    /// it is not a positive number with at most three decimals.
    public static func thousandths(_ text: String) -> Int? {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty, whole.count <= 6, whole.allSatisfy(\.isASCIIDigit),
              let wholeValue = Int(whole) else { return nil }
        var fractionValue = 0
        if parts.count == 2 {
            let fraction = parts[1]
            guard (1...3).contains(fraction.count), fraction.allSatisfy(\.isASCIIDigit),
                  let value = Int(fraction + String(repeating: "0", count: 3 - fraction.count)) else { return nil }
            fractionValue = value
        }
        return wholeValue * 1000 + fractionValue
    }
}

private extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}

/// One randomised report of an engaged public hash (`CountMeanSketch`,
/// Hadamard mode): which hash function, which row of the Hadamard matrix,
/// and the randomised sign. It names the sketch it was made for, so a cloud
/// whose settings changed counts only reports of its current sketch.
public struct PrivateReport: Hashable, Sendable {
    public let epsilonThousandths: Int
    /// k of the sketch.
    public let hashes: Int
    /// m of the sketch.
    public let buckets: Int
    /// The hash function, below k.
    public let function: Int
    /// The Hadamard row, below m.
    public let row: Int
    public let positive: Bool

    /// A report made under `settings`.
    public init(settings: PrivatePopularity, function: Int, row: Int, positive: Bool) {
        epsilonThousandths = settings.epsilonThousandths
        hashes = settings.sketch.k
        buckets = settings.sketch.m
        self.function = function
        self.row = row
        self.positive = positive
    }

    /// Checks the report's ranges: ε 1 to 20,000 thousandths, k 1 to 65,536,
    /// m a power of two from 2 to 65,536, the function below k and the row
    /// below m.
    public init(epsilonThousandths: Int, hashes: Int, buckets: Int, function: Int, row: Int,
                positive: Bool) throws(CountMeanSketchError) {
        guard (1...20_000).contains(epsilonThousandths) else {
            throw CountMeanSketchError("a report's ε is \(epsilonThousandths) thousandths, not 1 to 20,000")
        }
        guard (1...65_536).contains(hashes), (2...65_536).contains(buckets), buckets & (buckets - 1) == 0 else {
            throw CountMeanSketchError("a report's sketch is \(hashes) × \(buckets), not 1–65,536 × a power of two 2–65,536")
        }
        guard (0..<hashes).contains(function), (0..<buckets).contains(row) else {
            throw CountMeanSketchError("a report's function \(function) or row \(row) is outside its \(hashes) × \(buckets) sketch")
        }
        self.epsilonThousandths = epsilonThousandths
        self.hashes = hashes
        self.buckets = buckets
        self.function = function
        self.row = row
        self.positive = positive
    }

    /// The sketch cell the report adds to: function × m + row.
    public var cell: Int { function * buckets + row }

    /// The report as the count-mean sketch takes it.
    public var sketchReport: CountMeanSketch.Report { .hadamard(hash: function, row: row, positive: positive) }
}

extension PopularityMode {
    /// The mode's bytes in an ack (`Journal/FORMAT.md`, "Replies"): 0 for
    /// exact; 1, then ε, the daily budget (both in thousandths), k and m.
    public func encode(to writer: inout BinaryWriter) {
        switch self {
        case .exact:
            writer.byte(0)
        case .ldp(let settings):
            writer.byte(1)
            writer.uvarint(UInt64(settings.epsilonThousandths))
            writer.uvarint(UInt64(settings.dailyBudgetThousandths))
            writer.uvarint(UInt64(settings.sketch.k))
            writer.uvarint(UInt64(settings.sketch.m))
        }
    }

    public var encoded: [UInt8] {
        var writer = BinaryWriter(capacity: 16)
        encode(to: &writer)
        return writer.bytes
    }

    /// Reads a mode, every number range-checked.
    public static func decode(from reader: inout BinaryReader) throws(CodecError) -> PopularityMode {
        let start = reader.offset
        switch try reader.byte() {
        case 0:
            return .exact
        case 1:
            let epsilon = try reader.boundedInt(20_000, "ε")
            let budget = try reader.boundedInt(PrivatePopularity.maximumDailyBudgetThousandths, "daily budget")
            let k = try reader.boundedInt(65_536, "sketch's k")
            let m = try reader.boundedInt(65_536, "sketch's m")
            do {
                return .ldp(try PrivatePopularity(epsilonThousandths: epsilon, dailyBudgetThousandths: budget, hashes: k, buckets: m))
            } catch {
                throw CodecError(.limitExceeded, at: start, "the popularity mode is out of range: \(error)")
            }
        case let other:
            throw CodecError(.unknownTag, at: start, "popularity mode \(other) is neither 0 (exact) nor 1 (ldp)")
        }
    }

    public static func decode(_ bytes: [UInt8]) throws(CodecError) -> PopularityMode {
        try BinaryReader.whole(bytes, "the popularity mode") { (reader: inout BinaryReader) throws(CodecError) in
            try decode(from: &reader)
        }
    }
}

extension PrivateReport {
    /// The report's fields after its tag (`Journal/FORMAT.md`, "Outbox
    /// messages"): ε in thousandths, k, m, the function, the row, and the
    /// sign as a byte (1 for +1).
    func encode(to writer: inout BinaryWriter) {
        writer.uvarint(UInt64(epsilonThousandths))
        writer.uvarint(UInt64(hashes))
        writer.uvarint(UInt64(buckets))
        writer.uvarint(UInt64(function))
        writer.uvarint(UInt64(row))
        writer.byte(positive ? 1 : 0)
    }

    static func decode(from reader: inout BinaryReader) throws(CodecError) -> PrivateReport {
        let start = reader.offset
        let epsilon = try reader.boundedInt(20_000, "report's ε")
        let k = try reader.boundedInt(65_536, "report's k")
        let m = try reader.boundedInt(65_536, "report's m")
        let function = try reader.boundedInt(65_535, "report's function")
        let row = try reader.boundedInt(65_535, "report's row")
        let positive = try reader.bool()
        do {
            return try PrivateReport(epsilonThousandths: epsilon, hashes: k, buckets: m, function: function, row: row,
                                     positive: positive)
        } catch {
            throw CodecError(.limitExceeded, at: start, error.message)
        }
    }
}

private extension BinaryReader {
    /// A uvarint no greater than `maximum`, as an `Int`.
    mutating func boundedInt(_ maximum: Int, _ field: String) throws(CodecError) -> Int {
        let at = offset
        let value = try uvarint()
        guard value <= UInt64(maximum) else {
            throw CodecError(.limitExceeded, at: at, "the \(field) is \(value), above \(maximum)")
        }
        return Int(value)
    }
}
