import SyncWire

/// How much of a device's signals for one hash count, the same for every
/// backend (`docs/CLOUD.md`, "Popularity").
///
/// - A signal counts only from a device whose vote for the hash is live when
///   the signal is folded: popularity has the same Sybil bound as the
///   threshold, since one enrolled device is one voter.
/// - One message carries at most `WireLimits.maximumSignalCount` of each count
///   (the decoder refuses more).
/// - One device adds at most `maximumPerDevicePerDay` of each count to one
///   hash per day of cloud time (the day the frame was accepted, from the
///   cloud log, so a rebuild counts the same); the rest is dropped.
/// - A hash's sums saturate at `maximumCount` instead of overflowing (in the
///   backend's SQL: `min(views + added, maximumCount)`).
public enum PopularityRule {
    /// Each of views, shown and engaged, per device, hash and day.
    public static let maximumPerDevicePerDay: UInt64 = 10_000
    /// The largest count a hash holds: 2^53 − 1, exact as a `Double` and in JSON.
    public static let maximumCount: UInt64 = (1 << 53) - 1
    /// Milliseconds in a day of cloud time.
    public static let dayMilliseconds: Int64 = 86_400_000

    /// What a device has added to one hash on one day.
    public struct Allowance: Hashable, Sendable {
        /// Days since 1970 of cloud time.
        public var day: Int64
        public var used: Popularity

        public init(day: Int64, used: Popularity) {
            self.day = day
            self.used = used
        }
    }

    /// The day of cloud time a frame accepted at `milliseconds` counts towards.
    public static func day(milliseconds: Int64) -> Int64 {
        milliseconds >= 0 ? milliseconds / dayMilliseconds : -1 - (-1 - milliseconds) / dayMilliseconds
    }

    /// Of `offered` (a frame's signals for one hash, from a live voter) on
    /// `day`, what counts, and the device's allowance afterwards. `allowance`
    /// is what the device used before, on whatever day it last sent.
    public static func admit(_ offered: Popularity, on day: Int64, after allowance: Allowance) -> (counted: Popularity, allowance: Allowance) {
        let used = allowance.day == day ? allowance.used : Popularity()
        func take(_ offered: UInt64, _ used: UInt64) -> UInt64 {
            min(offered, maximumPerDevicePerDay - min(used, maximumPerDevicePerDay))
        }
        let counted = Popularity(views: take(offered.views, used.views), shown: take(offered.shown, used.shown),
                                 engaged: take(offered.engaged, used.engaged))
        var after = used
        after += counted
        return (counted, Allowance(day: day, used: after))
    }
}
