import Foundation
import GRDB
import IndexModel

/// Private in-memory databases with a store's schema, for replaying a journal
/// beside the store: the rebuild check, the outbox a journal implies, and the
/// messages a rewound device makes again.
///
/// A fresh one costs more than replaying a small journal: thirty schema
/// statements, then compiling every statement of the fold on first use. The
/// simulator replays thousands of small journals (each restore, and every
/// device at the end of a run), so databases are kept after use, emptied, and
/// handed out again. One that grew past `keptBytes` is closed instead, so a
/// process that replayed a large journal does not keep its pages.
final class ScratchProjections: @unchecked Sendable {
    static let shared = ScratchProjections()

    /// A scratch database whose pages take more than this after a replay is
    /// not kept.
    static let keptBytes = 8 << 20
    /// At most this many are kept (restores replay on several threads).
    static let keptCount = 4

    private struct Scratch {
        let queue: DatabaseQueue
        /// The tables a replay may fill, emptied before the database is kept.
        let tables: [String]
    }

    private let lock = NSLock()
    private var idle: [Scratch] = []

    /// Runs `work` in a transaction on an empty scratch database whose
    /// `store_meta` names `deviceID`, `app` and `voteSecret`.
    func with<T>(deviceID: DeviceID, app: AppID, voteSecret: [UInt8], _ work: (Database) throws -> T) throws -> T {
        let scratch = try take()
        var keep = false
        defer { if keep { give(scratch) } }
        let result = try scratch.queue.cachedWrite { db in
            try StoreSchema.insertMeta(db, deviceID: deviceID, app: app, voteSecret: voteSecret, createdAt: 0)
            return try work(db)
        }
        keep = (try? empty(scratch)) == true
        return result
    }

    private func take() throws -> Scratch {
        if let scratch = lock.withLock({ idle.popLast() }) { return scratch }
        // As the store's own connections: the schema declares no foreign keys.
        var configuration = Configuration()
        configuration.foreignKeysEnabled = false
        configuration.prepareDatabase { db in
            // The scratch database is thrown away: nothing needs rolling
            // back, and Debian's SQLite (built with SECURE_DELETE) would
            // zero every deleted row of a replay that deletes hundreds of
            // thousands.
            _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = OFF")
            try db.execute(sql: "PRAGMA secure_delete = OFF")
        }
        let queue = try DatabaseQueue(configuration: configuration)
        let tables = try queue.write { db in
            try StoreSchema.createTables(db)
            for index in StoreSchema.indexesOutsideTheFold {
                try db.execute(sql: "DROP INDEX \(index)")
            }
            return try String.fetchAll(db, sql: "SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'table'")
                .filter { !$0.hasPrefix("sqlite_") }
        }
        return Scratch(queue: queue, tables: tables)
    }

    /// Empties `scratch` and says whether it is small enough to keep.
    private func empty(_ scratch: Scratch) throws -> Bool {
        try scratch.queue.cachedWrite { db in
            let pages = try Int.fetchOne(db.cachedStatement(sql: "PRAGMA page_count")) ?? 0
            let pageSize = try Int.fetchOne(db.cachedStatement(sql: "PRAGMA page_size")) ?? 4096
            guard pages * pageSize <= ScratchProjections.keptBytes else { return false }
            for table in scratch.tables {
                try db.cachedStatement(sql: "DELETE FROM \(table)").execute()
            }
            return true
        }
    }

    private func give(_ scratch: Scratch) {
        lock.withLock {
            if idle.count < ScratchProjections.keptCount { idle.append(scratch) }
        }
    }
}
