import CloudCore
import Foundation
import GRDB
import IndexModel
import SQLiteSupport
import SyncWire

/// Ingest's reads and writes in a SQLite cloud store, inside the store's
/// write transaction: one process writes the file at a time, so nothing
/// needs a lock of its own.
struct SQLiteIngestTransaction: IngestTransaction {
    let db: Database
    /// The statements kept for `db`.
    let statements: StatementSlots

    var wantsEntries: Bool { false }

    func heldEpochs(app: AppID, device: DeviceID) throws -> [(epoch: Epoch, last: OutboxSeq)] {
        let read = try statements.statement(.epochs, db)
        read.bind(1, app)
        read.bind(2, device)
        var epochs: [(epoch: Epoch, last: OutboxSeq)] = []
        defer { read.reset() }
        while try read.step() {
            epochs.append((Epoch(try Stored.position(read.int64(0), "device_epochs.epoch of \(device)")),
                           OutboxSeq(try Stored.position(read.int64(1), "device_epochs.last_seq of \(device)"))))
        }
        return epochs
    }

    func holdsFrame(app: AppID, _ frame: UploadFrame) throws -> Bool {
        let same = try statements.statement(.sameFrame, db)
        same.bind(1, app)
        same.bind(2, frame.device)
        same.bind(3, frame.epoch)
        same.bind(4, frame.firstSeq)
        same.bind(5, frame.lastSeq)
        same.bind(6, frame.digest)
        defer { same.reset() }
        return try same.step() && same.int64(0) != 0
    }

    func loggedRows(app: AppID, device: DeviceID, epoch: Epoch, from: OutboxSeq, through: OutboxSeq) throws -> [StoredLogRow] {
        try Row.fetchAll(db.cachedStatement(sql: """
            SELECT \(StoredLogRow.columns) FROM cloud_log
            WHERE app = ? AND device = ? AND epoch = ? AND last_seq >= ? AND accepted_from <= ? ORDER BY accepted_from
            """), arguments: [app, device, epoch, from, through]).map { row throws(CloudError) in try StoredLogRow(row) }
    }

    func foldRows(app: AppID, entries: [FoldMemory.Entry]) throws -> SQLiteFoldRows {
        SQLiteFoldRows(db: db, statements: statements)
    }

    func appendLog(app: AppID, _ frame: UploadFrame, acceptedFrom: OutboxSeq, receivedAt: Timestamp) throws -> Int64 {
        try CloudIndex.appendLog(app: app, frame, acceptedFrom: acceptedFrom, receivedAt: receivedAt, db: db, statements: statements)
    }

    func finishFold(_ rows: SQLiteFoldRows) throws {}

    func backedUp(app: AppID, device: DeviceID) throws -> OutboxPosition {
        let registry = try statements.statement(.registry, db)
        registry.bind(1, app)
        registry.bind(2, device)
        defer { registry.reset() }
        guard try registry.step() else { return .nothing }
        return OutboxPosition(epoch: Epoch(try Stored.position(registry.optionalInt64(0) ?? 0, "devices.backed_up_epoch of \(device)")),
                              seq: OutboxSeq(try Stored.position(registry.optionalInt64(1) ?? 0, "devices.backed_up_seq of \(device)")))
    }

    func wantedHashes(app: AppID) throws -> [(hash: PublicHash, key: Data, wantedSeq: Int64)] {
        let wanted = try statements.statement(.wanted, db)
        wanted.bind(1, app)
        defer { wanted.reset() }
        var hashes: [(hash: PublicHash, key: Data, wantedSeq: Int64)] = []
        while try wanted.step() {
            guard let hash = PublicHash(wanted.blob(0)) else {
                throw CloudError(.corruptStore, "hashes.hash of a wanted hash of app \(app) is not a public hash")
            }
            hashes.append((hash, Data(wanted.blob(1)), wanted.int64(2)))
        }
        return hashes
    }

    func askState(app: AppID, key: Data, voter: [UInt8]) throws -> AskState? {
        let ask = try statements.statement(.voterAsk, db)
        defer { ask.reset() }
        ask.bind(1, app)
        ask.bind(2, key)
        ask.bind(3, voter)
        guard try ask.step() else { return nil }
        return AskState(wantedSeq: ask.optionalInt64(0), liveVotes: try Stored.count(ask.int64(1), "hashes.live_votes"),
                        hasContent: ask.int64(2) != 0, isLive: ask.optionalInt64(3) == 1, hasOffer: ask.int64(4) != 0)
    }

    func popularity(app: AppID) throws -> PopularityMode {
        let read = try statements.statement(.popularity, db)
        defer { read.reset() }
        read.bind(1, app)
        guard try read.step(), !read.isNull(0) else { return .exact }
        return try Stored.popularity(read.blob(0), app: app)
    }
}
