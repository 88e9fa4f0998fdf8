import CloudCore
import Foundation
import GRDB
import IndexModel
import SQLiteSupport
import SyncWire

extension CloudLog {
    /// Checks the single chain of a store of format versions 1 to 6 (seqs
    /// dense from 1, each previous hash and hash), without decoding payloads,
    /// and returns its row count and head hash. A broken chain is a
    /// `corruptLog` error: such a store is not migrated.
    package static func verifyFormat6Chain(_ db: Database) throws -> (rows: Int64, head: [UInt8]) {
        var previous = genesis
        var rows: Int64 = 0
        let cursor = try Row.fetchCursor(db, sql: """
            SELECT seq, device, epoch, first_seq, last_seq, accepted_from, digest, received_at, prev_hash, hash
            FROM cloud_log ORDER BY seq
            """)
        while let row = try cursor.next() {
            let seq: Int64 = try Stored.column(row, 0, "cloud_log.seq")
            func position(_ index: Int, _ name: String) throws -> UInt64 {
                try Stored.position(Stored.column(row, index, "cloud_log.\(name) of seq \(seq)"), "cloud_log.\(name) of seq \(seq)")
            }
            guard seq == rows + 1 else {
                throw CloudError(.corruptLog, "the format-6 cloud log lacks seq \(rows + 1) (the next row is \(seq))")
            }
            guard [UInt8](try Stored.column(row, 8, "cloud_log.prev_hash") as Data) == previous else {
                throw CloudError(.corruptLog, "the format-6 cloud log's chain is broken at seq \(seq)")
            }
            let hash = format6ChainHash(previous: previous, device: try Stored.column(row, 1, "cloud_log.device"),
                                        epoch: try position(2, "epoch"), firstSeq: try position(3, "first_seq"),
                                        lastSeq: try position(4, "last_seq"), acceptedFrom: try position(5, "accepted_from"),
                                        digest: [UInt8](try Stored.column(row, 6, "cloud_log.digest") as Data),
                                        receivedAt: try Stored.column(row, 7, "cloud_log.received_at"))
            guard hash == [UInt8](try Stored.column(row, 9, "cloud_log.hash") as Data) else {
                throw CloudError(.corruptLog, "the format-6 cloud log's row \(seq) does not match its hash (row altered)")
            }
            previous = hash
            rows = seq
        }
        return (rows, previous)
    }

    /// Copies the rows of `format6_cloud_log` (a chain `verifyFormat6Chain`
    /// checked) into `cloud_log`, each app's numbered from 1 and chained
    /// anew in the order of the old chain, each device named by its name in
    /// its app (`names`, by its id of version 6).
    package static func rechainFormat6Log(_ db: Database, names: [String: (app: String, name: String)]) throws {
        var heads: [String: (seq: Int64, hash: [UInt8])] = [:]
        let insert = try db.makeStatement(sql: """
            INSERT INTO cloud_log (app, seq, device, epoch, first_seq, last_seq, accepted_from, codec, uncompressed_length,
                                   digest, payload, received_at, prev_hash, hash)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        let cursor = try Row.fetchCursor(db, sql: """
            SELECT seq, device, epoch, first_seq, last_seq, accepted_from, codec, uncompressed_length, digest, payload, received_at
            FROM format6_cloud_log ORDER BY seq
            """)
        while let row = try cursor.next() {
            let oldSeq: Int64 = try Stored.column(row, 0, "cloud_log.seq")
            let id: String = try Stored.column(row, 1, "cloud_log.device of seq \(oldSeq)")
            guard let owner = names[id] else {
                throw CloudError(.corruptLog, "format-6 log seq \(oldSeq) is from device \(id), which is not enrolled")
            }
            let stored = try StoredLogRow(app: AppID(owner.app), seq: oldSeq, device: DeviceID(owner.name),
                                          epoch: Stored.column(row, 2, "cloud_log.epoch"),
                                          firstSeq: Stored.column(row, 3, "cloud_log.first_seq"),
                                          lastSeq: Stored.column(row, 4, "cloud_log.last_seq"),
                                          acceptedFrom: Stored.column(row, 5, "cloud_log.accepted_from"),
                                          codec: Stored.column(row, 6, "cloud_log.codec"),
                                          uncompressedLength: Stored.column(row, 7, "cloud_log.uncompressed_length"),
                                          digest: [UInt8](Stored.column(row, 8, "cloud_log.digest") as Data),
                                          payload: [UInt8](Stored.column(row, 9, "cloud_log.payload") as Data),
                                          receivedAt: Stored.column(row, 10, "cloud_log.received_at"))
            let previous = heads[owner.app] ?? (0, genesis)
            let seq = previous.seq + 1
            let hash = chainHash(previous: previous.hash, app: stored.app, device: stored.device, epoch: stored.epoch,
                                 firstSeq: stored.firstSeq, lastSeq: stored.lastSeq, acceptedFrom: stored.acceptedFrom,
                                 digest: stored.digest, receivedAt: stored.receivedAt)
            try insert.execute(arguments: [owner.app, seq, owner.name, stored.epoch, stored.firstSeq, stored.lastSeq,
                                           stored.acceptedFrom, stored.codec, stored.uncompressedLength, Data(stored.digest),
                                           Data(stored.payload), stored.receivedAt.millisecondsSince1970,
                                           Data(previous.hash), Data(hash)])
            heads[owner.app] = (seq, hash)
        }
    }
}
