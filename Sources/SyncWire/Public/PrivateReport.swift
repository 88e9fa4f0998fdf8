import IndexModel
import LocalPrivacy

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
        hashes = settings.hashes
        buckets = settings.buckets
        self.function = function
        self.row = row
        self.positive = positive
    }

    /// Checks the report's ranges: ε 1 to 20,000 thousandths, k 1 to 65,536,
    /// m a power of two from 2 to 65,536, the function below k and the row
    /// below m.
    public init(epsilonThousandths: Int, hashes: Int, buckets: Int, function: Int, row: Int,
                positive: Bool) throws(PopularityError) {
        guard (1...20_000).contains(epsilonThousandths) else {
            throw PopularityError("a report's ε is \(epsilonThousandths) thousandths, not 1 to 20,000")
        }
        guard (1...65_536).contains(hashes), (2...65_536).contains(buckets), buckets & (buckets - 1) == 0 else {
            throw PopularityError("a report's sketch is \(hashes) × \(buckets), not 1–65,536 × a power of two 2–65,536")
        }
        guard (0..<hashes).contains(function), (0..<buckets).contains(row) else {
            throw PopularityError("a report's function \(function) or row \(row) is outside its \(hashes) × \(buckets) sketch")
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

extension PrivatePopularity {
    /// Whether `report` was made for this sketch (the same ε, k and m).
    public func fits(_ report: PrivateReport) -> Bool {
        report.epsilonThousandths == epsilonThousandths && report.hashes == hashes && report.buckets == buckets
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
