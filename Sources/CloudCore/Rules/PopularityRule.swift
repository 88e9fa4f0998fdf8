import IndexModel
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
    public static let dayMilliseconds = Timestamp.millisecondsPerDay

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
        Timestamp(millisecondsSince1970: milliseconds).daysSince1970
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

/// How many of a device's private reports count, the same for every backend
/// (`docs/CLOUD.md`, "Popularity under local differential privacy").
///
/// - A report counts only when it was made for the app's current sketch
///   (`PrivatePopularity.fits`): the same ε, k and m. Others are dropped,
///   and the frame is still accepted (an honest device may hold reports
///   made before the cloud changed the settings).
/// - One device adds at most `PrivatePopularity.reportsPerDay` reports per
///   day of cloud time (the frame's receive time, as for signals): the
///   budget the cloud gave devices, so a device that ignores it gains
///   nothing by sending more. The rest are dropped.
public enum ReportRule {
    /// What a device has reported on its last day of reports.
    public struct Allowance: Hashable, Sendable {
        /// Days since 1970 of cloud time.
        public var day: Int64
        public var used: Int64

        public init(day: Int64, used: Int64) {
            self.day = day
            self.used = used
        }
    }

    /// Of `offered` fitting reports on `day`, how many count, and the
    /// device's allowance afterwards; `allowance` is what it used before, on
    /// whatever day it last reported (nil: never).
    public static func admit(_ offered: Int, on day: Int64, after allowance: Allowance?, perDay: Int) -> (counted: Int, allowance: Allowance) {
        let used = allowance.flatMap { $0.day == day ? $0.used : nil } ?? 0
        let counted = max(0, min(Int64(offered), Int64(perDay) - used))
        return (Int(counted), Allowance(day: day, used: used + counted))
    }
}

/// One cell of an app's sketch: the reports that fell in it, and the sum of
/// their signs (+1 or −1 each).
public struct SketchCell: Hashable, Sendable {
    public var reports: Int64
    public var total: Int64

    public init(reports: Int64 = 0, total: Int64 = 0) {
        self.reports = reports
        self.total = total
    }
}
