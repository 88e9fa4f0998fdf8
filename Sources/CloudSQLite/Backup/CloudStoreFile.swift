import CloudCore
import Foundation
import GRDB
import IndexModel
import Snapshot
import SQLiteSupport

/// A cloud store file filled or read table by table: how another backend's
/// store becomes the SQLite file a cloud snapshot holds, and how a restored
/// snapshot's rows reach another backend. The file has this build's schema
/// (`CloudSchema`), so `CloudIndex` opens and verifies it like its own.
package final class CloudStoreFile {
    private let queue: DatabaseQueue
    package let path: String

    /// What `cloud_meta` holds besides the application and version.
    package struct Meta: Sendable {
        package var threshold: Int
        /// Nil: the agreement follows K.
        package var agreement: Int?
        package var secret: [UInt8]
        package var createdAt: Int64

        package init(threshold: Int, agreement: Int?, secret: [UInt8], createdAt: Int64) {
            self.threshold = threshold
            self.agreement = agreement
            self.secret = secret
            self.createdAt = createdAt
        }
    }

    /// A new store file at `path` (which must not exist yet) with `meta`
    /// and empty tables.
    package init(creating path: String, meta: Meta) throws(CloudError) {
        self.path = path
        do {
            guard StoreFiles.createPrivate(path) else { throw CloudError(.database, "cannot create \(path) (errno \(errno))") }
            queue = try DatabaseQueue(path: path)
            try queue.write { db in
                try CloudSchema.create(db, threshold: meta.threshold, voterSecret: meta.secret, createdAt: meta.createdAt)
                if let agreement = meta.agreement {
                    try db.execute(sql: "INSERT INTO cloud_meta (key, value) VALUES ('agreement', ?)", arguments: [agreement])
                }
            }
        } catch let error as CloudError {
            throw error
        } catch {
            throw CloudError(.database, "cannot create the cloud store file \(path): \(SQLiteErrorText.describe(error))")
        }
    }

    /// Adds `rows` (each `table`'s columns in order) to `table`.
    package func insert(_ table: StoreTables.Table, rows: [[StoreValue]]) throws(CloudError) {
        do {
            try queue.write { db in
                let columns = table.columns.joined(separator: ", ")
                let places = Array(repeating: "?", count: table.columns.count).joined(separator: ", ")
                let statement = try db.cachedStatement(sql: "INSERT INTO \(table.name) (\(columns)) VALUES (\(places))")
                for row in rows {
                    try statement.execute(arguments: StatementArguments(row.map(\.databaseValue)))
                }
            }
        } catch {
            throw CloudError(.database, "cannot write \(table.name) to \(path): \(SQLiteErrorText.describe(error))")
        }
    }

    /// Closes the file, which is then a whole cloud store.
    package func close() throws(CloudError) {
        do {
            try queue.close()
        } catch {
            throw CloudError(.database, "cannot close \(path): \(SQLiteErrorText.describe(error))")
        }
    }

    /// The meta of the cloud store file at `path`, which a restore checked.
    package static func meta(at path: String) throws(CloudError) -> Meta {
        do {
            return try SchemaCheck.read(path) { db in
                func integer(_ key: String) throws -> Int64? {
                    try Int64.fetchOne(db, sql: "SELECT value FROM cloud_meta WHERE key = ?", arguments: [key])
                }
                guard let threshold = try integer("threshold"), let created = try integer("created_at"),
                      let secret = try Data.fetchOne(db, sql: "SELECT value FROM cloud_meta WHERE key = 'voter_secret'"),
                      secret.count == 32 else {
                    throw CloudError(.corruptStore, "the cloud store \(path) has no threshold, creation time or voter secret")
                }
                return Meta(threshold: Int(clamping: threshold), agreement: try integer("agreement").map { Int(clamping: $0) },
                            secret: [UInt8](secret), createdAt: created)
            }
        } catch let error as CloudError {
            throw error
        } catch {
            throw CloudError(.database, "cannot read the meta of \(path): \(SQLiteErrorText.describe(error))")
        }
    }

    /// Reads every row of the store file at `path`, table by table in
    /// `StoreTables.all` order, in batches of up to `batch` rows.
    package static func read(at path: String, batch: Int,
                             _ body: (StoreTables.Table, [[StoreValue]]) throws -> Void) throws {
        try SchemaCheck.read(path) { db in
            for table in StoreTables.all {
                let cursor = try Row.fetchCursor(db, sql: "SELECT \(table.columns.joined(separator: ", ")) FROM \(table.name)")
                var rows: [[StoreValue]] = []
                rows.reserveCapacity(batch)
                while let row = try cursor.next() {
                    rows.append(try row.databaseValues.map { value throws(CloudError) in try StoreValue(value, table: table.name) })
                    if rows.count >= batch {
                        try body(table, rows)
                        rows.removeAll(keepingCapacity: true)
                    }
                }
                if !rows.isEmpty { try body(table, rows) }
            }
        }
    }
}

extension StoreValue {
    package var databaseValue: DatabaseValue {
        switch self {
        case .null: .null
        case .integer(let integer): integer.databaseValue
        case .text(let text): text.databaseValue
        case .blob(let bytes): Data(bytes).databaseValue
        }
    }

    /// A SQLite value as a cloud store holds it; a REAL is no value of any
    /// cloud table.
    package init(_ value: DatabaseValue, table: String) throws(CloudError) {
        switch value.storage {
        case .null: self = .null
        case .int64(let integer): self = .integer(integer)
        case .string(let text): self = .text(text)
        case .blob(let data): self = .blob([UInt8](data))
        case .double(let double): throw CloudError(.corruptStore, "\(table) holds the real number \(double), which no cloud table has")
        }
    }
}
