import Crypto
import IndexModel
import SyncWire

/// What a device's private reports may spend (`docs/SYNC.md`, "Private
/// popularity"). The ledger (`privacy_budget`) is a projection of the
/// journal, so a snapshot, a restore and a rebuild keep it, and a restored
/// device cannot spend again what its backup had spent.
public enum PrivacyBudget {
    /// The most ε a device spends in a day of its own clock, in thousandths,
    /// whatever budget the cloud gives: the device's own protection against
    /// a cloud that asks for more.
    public static let ceilingThousandths = 16_000

    /// The ε the device may spend a day under `settings`: the cloud's budget,
    /// at most the ceiling.
    public static func dailyThousandths(_ settings: PrivatePopularity) -> Int {
        min(settings.dailyBudgetThousandths, ceilingThousandths)
    }

    /// The seed of the coins of the report at `position`: the first eight
    /// bytes of HMAC-SHA256 under the vote secret (never sent) of
    /// `"sightline private report v1"` and the position's epoch and seq.
    /// Unpredictable to the cloud, the same in every rebuild, and different
    /// for every report: a restored device begins a new epoch.
    public static func coins(secret: [UInt8], at position: OutboxPosition) -> UInt64 {
        var writer = BinaryWriter(capacity: 48)
        writer.string("sightline private report v1")
        writer.uvarint(position.epoch.rawValue)
        writer.uvarint(position.seq.rawValue)
        let mac = HMAC<SHA256>.authenticationCode(for: writer.bytes, using: SymmetricKey(data: secret))
        return mac.withUnsafeBytes { bytes in bytes.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
    }
}
