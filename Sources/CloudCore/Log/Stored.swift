import IndexModel
import SyncWire

/// The limits of what a cloud store holds, and the checks of values read
/// from it, in every backend. A store is outside bytes like a frame: anyone
/// who can write it can put a NULL, a negative number or a string where a
/// count belongs, and nothing read from it may trap. A value out of range is
/// a `corruptStore` (or, in the cloud log, `corruptLog`) error naming the
/// table and column (`docs/SECURITY.md`).
package enum Stored {
    /// The largest count a projection holds (views, shown, engaged, votes):
    /// 2^53 − 1. Sums saturate here instead of overflowing, and a count stays
    /// exact as an `Int64`, a `Double` and a JSON number.
    package static let maximumCount = Int64(PopularityRule.maximumCount)

    /// `value` as an epoch or seq: 0 through `WireLimits.maximumPosition`.
    package static func position(_ value: Int64, _ what: @autoclosure () -> String) throws(CloudError) -> UInt64 {
        guard value >= 0, UInt64(value) <= WireLimits.maximumPosition else {
            throw CloudError(.corruptStore, "\(what()) is \(value), not a position between 0 and \(WireLimits.maximumPosition)")
        }
        return UInt64(value)
    }

    /// `value` as a count: 0 through `maximumCount`.
    package static func count(_ value: Int64, _ what: @autoclosure () -> String) throws(CloudError) -> Int64 {
        guard (0...maximumCount).contains(value) else {
            throw CloudError(.corruptStore, "\(what()) is \(value), not a count between 0 and \(maximumCount)")
        }
        return value
    }

    /// `apps.popularity` of `app`: NULL for exact, else the encoding of an
    /// `ldp` mode (`PopularityMode.encoded`); anything else is refused.
    package static func popularity(_ bytes: [UInt8]?, app: AppID) throws(CloudError) -> PopularityMode {
        guard let bytes else { return .exact }
        let mode: PopularityMode
        do {
            mode = try PopularityMode.decode(bytes)
        } catch {
            throw CloudError(.corruptStore, "apps.popularity of \(app) is not a popularity mode: \(error)")
        }
        guard mode != .exact else {
            throw CloudError(.corruptStore, "apps.popularity of \(app) holds the exact mode, which is stored as NULL")
        }
        return mode
    }

    /// `mode` as `apps.popularity` holds it: nil for exact.
    package static func popularityValue(_ mode: PopularityMode) -> [UInt8]? {
        mode == .exact ? nil : mode.encoded
    }
}
