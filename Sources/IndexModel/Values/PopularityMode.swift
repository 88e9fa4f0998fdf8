/// How an app's devices tell the cloud what is popular. The cloud chooses it
/// per app (`cloud serve --popularity`) and says it in every ack, and a
/// device journals it when it changes (`JournalEvent.popularityModeLearned`),
/// so its outbox stays a function of its journal (`docs/CLOUD.md`,
/// "Popularity under local differential privacy").
public enum PopularityMode: Hashable, Sendable {
    /// Signals: exact views, shown and engaged deltas per hash.
    case exact
    /// Randomised reports of engagements, through the count-mean sketch.
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
/// (Hadamard count-mean sketch: k hash functions × m buckets).
///
/// ε and the budget are whole thousandths, so that they cross the wire and a
/// store exactly and two settings compare equal only when they are.
public struct PrivatePopularity: Hashable, Sendable {
    /// ε per report, in thousandths: 1 to 20,000.
    public let epsilonThousandths: Int
    /// ε a device may spend in one day of its own clock, in thousandths: at
    /// least one report's, at most `maximumDailyBudgetThousandths`.
    public let dailyBudgetThousandths: Int
    /// k: the sketch's hash functions, 1 to 65,536.
    public let hashes: Int
    /// m: the sketch's buckets, a power of two from 2 to 65,536.
    public let buckets: Int

    /// The largest daily budget a setting may give, in thousandths of ε.
    public static let maximumDailyBudgetThousandths = 100_000
    /// The most cells (k × m) a sketch may have: 2^22, 32 MiB of doubles
    /// for a reader that builds it (k 4,096 × m 1,024, or k 64 × m 65,536).
    /// Settings from an ack, a journal or a store that ask for more would
    /// make every read allocate gigabytes.
    public static let maximumCells = 1 << 22

    /// Checks every range, and says which one failed.
    public init(epsilonThousandths: Int, dailyBudgetThousandths: Int, hashes: Int, buckets: Int) throws(PopularityError) {
        guard (1...20_000).contains(epsilonThousandths) else {
            throw PopularityError("ε must be from 0.001 to 20, not \(Self.decimal(epsilonThousandths))")
        }
        guard (epsilonThousandths...PrivatePopularity.maximumDailyBudgetThousandths).contains(dailyBudgetThousandths) else {
            throw PopularityError("""
                the daily budget must hold at least one report (ε \(Self.decimal(epsilonThousandths))) and be at most \
                \(Self.decimal(PrivatePopularity.maximumDailyBudgetThousandths)), not \(Self.decimal(dailyBudgetThousandths))
                """)
        }
        guard (1...65_536).contains(hashes) else { throw PopularityError("k must be 1 to 65,536 hash functions, not \(hashes)") }
        guard (2...65_536).contains(buckets), buckets & (buckets - 1) == 0 else {
            throw PopularityError("m must be a power of two from 2 to 65,536, not \(buckets)")
        }
        guard hashes * buckets <= PrivatePopularity.maximumCells else {
            throw PopularityError("a sketch of k \(hashes) × m \(buckets) has more than \(PrivatePopularity.maximumCells) cells")
        }
        self.epsilonThousandths = epsilonThousandths
        self.dailyBudgetThousandths = dailyBudgetThousandths
        self.hashes = hashes
        self.buckets = buckets
    }

    /// Reports a device may make in a day: the budget over ε, rounded down.
    public var reportsPerDay: Int { dailyBudgetThousandths / epsilonThousandths }

    /// Thousandths as a decimal, "4" or "0.5".
    public static func decimal(_ thousandths: Int) -> String {
        let sign = thousandths < 0 ? "-" : ""
        let magnitude = thousandths.magnitude
        let whole = magnitude / 1000, fraction = magnitude % 1000
        guard fraction != 0 else { return sign + String(whole) }
        var digits = String(fraction + 1000).dropFirst()
        while digits.hasSuffix("0") { digits.removeLast() }
        return "\(sign)\(whole).\(digits)"
    }

    /// A decimal ε or budget ("4", "0.5") in whole thousandths, or nil when
    /// it is not a number with at most six digits before the point and three
    /// after.
    public static func thousandths(_ text: String) -> Int? {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, (1...6).contains(whole.count), whole.allSatisfy(\.isASCIIDigit),
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

/// A popularity setting out of range, in words.
public struct PopularityError: Error, Hashable, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

private extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}

extension PopularityMode {
    /// The mode's bytes, in an ack and in a journal event (`Journal/FORMAT.md`):
    /// 0 for exact; 1, then ε, the daily budget (both in thousandths), k and m.
    public func encode(to writer: inout BinaryWriter) {
        switch self {
        case .exact:
            writer.byte(0)
        case .ldp(let settings):
            writer.byte(1)
            writer.uvarint(UInt64(settings.epsilonThousandths))
            writer.uvarint(UInt64(settings.dailyBudgetThousandths))
            writer.uvarint(UInt64(settings.hashes))
            writer.uvarint(UInt64(settings.buckets))
        }
    }

    public var encoded: [UInt8] {
        var writer = BinaryWriter(capacity: 16)
        encode(to: &writer)
        return writer.bytes
    }

    /// Reads a mode at the reader's position, every number range-checked.
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

    /// A mode that is the whole of `bytes`.
    public static func decode(_ bytes: [UInt8]) throws(CodecError) -> PopularityMode {
        var reader = BinaryReader(bytes)
        let mode = try decode(from: &reader)
        guard reader.isAtEnd else {
            throw CodecError(.trailingBytes, at: reader.offset, "\(reader.remaining) bytes follow the popularity mode")
        }
        return mode
    }
}

extension BinaryReader {
    /// A uvarint no greater than `maximum`, as an `Int`.
    public mutating func boundedInt(_ maximum: Int, _ field: String) throws(CodecError) -> Int {
        let at = offset
        let value = try uvarint()
        guard value <= UInt64(maximum) else {
            throw CodecError(.limitExceeded, at: at, "the \(field) is \(value), above \(maximum)")
        }
        return Int(value)
    }
}
