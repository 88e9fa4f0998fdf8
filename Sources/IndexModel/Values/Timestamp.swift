/// An instant, in whole milliseconds since 1970-01-01T00:00:00Z.
///
/// Sightline keeps time as an integer so that events encode, hash and compare
/// exactly; `Date` (a `Double`) would not round-trip through the journal.
public struct Timestamp: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let millisecondsSince1970: Int64

    public init(millisecondsSince1970: Int64) {
        self.millisecondsSince1970 = millisecondsSince1970
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        lhs.millisecondsSince1970 < rhs.millisecondsSince1970
    }

    /// Milliseconds in a day.
    public static let millisecondsPerDay: Int64 = 86_400_000

    /// Whole days since 1970-01-01, rounded down (before 1970 too): the day
    /// a daily allowance or budget counts the instant toward.
    public var daysSince1970: Int64 {
        let milliseconds = millisecondsSince1970, length = Timestamp.millisecondsPerDay
        return milliseconds >= 0 ? milliseconds / length : -1 - (-1 - milliseconds) / length
    }

    public func adding(milliseconds: Int64) -> Timestamp {
        Timestamp(millisecondsSince1970: millisecondsSince1970 &+ milliseconds)
    }

    /// The ISO 8601 form, `2027-01-01T00:00:00Z`, with milliseconds only when nonzero.
    public var description: String { ISO8601.format(self) }
}
