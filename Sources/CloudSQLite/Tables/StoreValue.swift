import CloudCore
import Crypto
import GRDB
import IndexModel
import SQLiteSupport

/// One value of a cloud store row as both backends hold it: SQLite's
/// storage classes without REAL, which no cloud table has. What moves rows
/// between backends (a snapshot of one restored into the other) and what
/// the projection digest is taken over.
package enum StoreValue: Hashable, Sendable {
    case null
    case integer(Int64)
    case text(String)
    case blob([UInt8])
}

/// The tables of a cloud store of format 9 and their columns, in the order
/// both backends define them (`Journal/FORMAT.md`, "Cloud store"). A copy
/// from one backend to the other moves them in this order.
package enum StoreTables {
    package struct Table: Sendable {
        package let name: String
        package let columns: [String]
        /// The columns a row is ordered and identified by.
        package let key: [String]
    }

    /// Every table but `cloud_meta`, whose values each backend keeps in its
    /// own types.
    package static let all: [Table] = [
        Table(name: "apps", columns: ["app", "secret_hash", "maximum_devices", "popularity"], key: ["app"]),
        Table(name: "devices", columns: ["app", "device", "key", "enrolled_at", "backed_up_epoch", "backed_up_seq", "enrolment_proof"],
              key: ["app", "device"]),
        Table(name: "cloud_log", columns: ["app", "seq", "device", "epoch", "first_seq", "last_seq", "accepted_from", "codec",
                                           "uncompressed_length", "digest", "payload", "received_at", "prev_hash", "hash"],
              key: ["app", "seq"]),
        Table(name: "flags", columns: ["app", "device", "epoch", "first_seq", "last_seq", "reason", "flagged_at"],
              key: ["app", "device", "epoch", "first_seq", "last_seq", "reason", "flagged_at"]),
    ] + projections

    /// The projections, in the order the projection digest takes them.
    package static let projections: [Table] = [
        Table(name: "device_epochs", columns: ["app", "device", "epoch", "last_seq"], key: ["app", "device", "epoch"]),
        Table(name: "hashes", columns: ["app", "key", "hash", "live_votes", "voters", "views", "shown", "engaged", "wanted_seq",
                                        "has_content"], key: ["app", "key"]),
        Table(name: "votes", columns: ["app", "key", "voter", "token", "live", "signal_day", "day_views", "day_shown", "day_engaged"],
              key: ["app", "key", "voter"]),
        Table(name: "public_content", columns: ["app", "key", "activity_type", "title", "keywords", "description", "url", "log_seq"],
              key: ["app", "key"]),
        Table(name: "app_state", columns: ["app", "wanted_seq"], key: ["app"]),
        Table(name: "content_offers", columns: ["app", "key", "voter", "digest"], key: ["app", "key", "voter"]),
        Table(name: "pages", columns: ["app", "url", "page", "log_seq"], key: ["app", "url"]),
        Table(name: "sketch_cells", columns: ["app", "cell", "reports", "total"], key: ["app", "cell"]),
        Table(name: "report_allowances", columns: ["app", "device", "day", "reports"], key: ["app", "device"]),
    ]

    /// The query a backend reads a projection's rows for the digest with:
    /// every column, in key order (bytewise for text and blobs).
    package static func digestQuery(_ table: Table) -> String {
        "SELECT \(table.columns.joined(separator: ", ")) FROM \(table.name) ORDER BY \(table.key.joined(separator: ", "))"
    }
}

/// The projection digest, the same bytes whichever backend reads the rows:
/// SHA-256 over each projection table in `StoreTables.projections` order,
/// each its position as a `uvarint` then every value of its rows in key
/// order, each value as `RowDigest.encode` writes it.
package struct ProjectionDigest {
    private var hasher = SHA256()
    private var writer = BinaryWriter(capacity: 1 << 16)

    package init() {}

    /// Starts the rows of the projection at `index` of `StoreTables.projections`.
    package mutating func table(_ index: Int) {
        writer.uvarint(UInt64(index))
    }

    package mutating func value(_ value: StoreValue) {
        RowDigest.encode(value.databaseValue, into: &writer)
        if writer.bytes.count > 1 << 16 {
            hasher.update(data: writer.bytes)
            writer = BinaryWriter(capacity: 1 << 16)
        }
    }

    /// The digest in lowercase hexadecimal, as `projectionDigest()` reports it.
    package consuming func finish() -> String {
        hasher.update(data: writer.bytes)
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }
}
