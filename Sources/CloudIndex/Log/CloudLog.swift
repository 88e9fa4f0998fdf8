import ByteCoding
import Crypto
import Foundation
import GRDB
import IndexModel
import Snapshot
import SQLiteSupport
import SyncWire
import Threads

/// The cloud log: every accepted frame, as received, in acceptance order, each
/// row chained to the previous one by SHA-256 (`Journal/FORMAT.md`, "Cloud
/// store"). The projections are a fold over it.
enum CloudLog {
    /// Appends `frame` (whose messages from `acceptedFrom` on are new) and returns its log seq.
    static func append(_ frame: UploadFrame, acceptedFrom: OutboxSeq, receivedAt: Timestamp, db: Database,
                       statements: StatementSlots) throws -> Int64 {
        let head = try statements.statement(.logHead, db)
        var seq: Int64 = 1
        var previousHash = [UInt8](repeating: 0, count: 32)
        do {
            defer { head.reset() }
            if try head.step() {
                seq = head.int64(0) + 1
                previousHash = head.blob(1)
            }
        }
        let hash = chainHash(previous: previousHash, device: frame.device, epoch: frame.epoch, firstSeq: frame.firstSeq,
                             lastSeq: frame.lastSeq, acceptedFrom: acceptedFrom, digest: frame.digest, receivedAt: receivedAt)
        let insert = try statements.statement(.logAppend, db)
        insert.bind(1, seq)
        insert.bind(2, frame.device)
        insert.bind(3, frame.epoch)
        insert.bind(4, frame.firstSeq)
        insert.bind(5, frame.lastSeq)
        insert.bind(6, acceptedFrom)
        insert.bind(7, Int64(frame.codec.rawValue))
        insert.bind(8, Int64(frame.uncompressedLength))
        insert.bind(9, frame.digest)
        insert.bind(10, frame.payload)
        insert.bind(11, receivedAt.millisecondsSince1970)
        insert.bind(12, previousHash)
        insert.bind(13, hash)
        try insert.execute()
        return seq
    }

    /// SHA-256 over the previous row's hash, then the row's device, epoch, first
    /// and last seq, first accepted seq, payload digest and receive time.
    static func chainHash(previous: [UInt8], device: DeviceID, epoch: Epoch, firstSeq: OutboxSeq, lastSeq: OutboxSeq,
                          acceptedFrom: OutboxSeq, digest: [UInt8], receivedAt: Timestamp) -> [UInt8] {
        var writer = BinaryWriter(capacity: 128)
        writer.raw(previous)
        writer.string(device.rawValue)
        writer.uvarint(epoch.rawValue)
        writer.uvarint(firstSeq.rawValue)
        writer.uvarint(lastSeq.rawValue)
        writer.uvarint(acceptedFrom.rawValue)
        writer.raw(digest)
        writer.svarint(receivedAt.millisecondsSince1970)
        return Array(SHA256.hash(data: writer.bytes))
    }

    /// The `count` messages a logged payload holds, checked against its digest.
    static func messages(codec: Int64, uncompressedLength: Int, payload: [UInt8], digest: [UInt8],
                         count: Int) throws -> [OutboxMessage] {
        let plain: [UInt8]
        switch UploadFrame.Codec(rawValue: UInt8(clamping: codec)) {
        case .stored: plain = payload
        case .deflate: plain = try Deflate.decompress(payload, limit: uncompressedLength)
        case nil: throw CloudError(.corruptLog, "unknown codec \(codec) in the cloud log")
        }
        guard Array(SHA256.hash(data: plain)) == digest else {
            throw CloudError(.corruptLog, "a logged payload does not match its digest")
        }
        return try FramePayload.decode(plain, count: count)
    }
}

/// A row of the cloud log as a replay folds it: the messages that were new
/// when its frame was accepted.
package struct LoggedFrame: Sendable {
    package let seq: Int64
    package let device: DeviceID
    package let epoch: Epoch
    package let lastSeq: OutboxSeq
    /// When the cloud accepted the frame: the day its signals count towards.
    package let receivedAt: Timestamp
    package let messages: ArraySlice<OutboxMessage>

    package init(_ row: StoredLogRow, messages: [OutboxMessage]) {
        seq = row.seq
        device = row.device
        epoch = row.epoch
        lastSeq = row.lastSeq
        receivedAt = row.receivedAt
        self.messages = row.newMessages(of: messages)
    }
}

/// Folds cloud log rows, in log order, into projections made afresh: a
/// rebuild, or a restore's check of a snapshot's projections, in any backend.
package struct LogReplay<Rows: FoldRows> {
    package let fold: CloudFold<Rows>
    /// Each enrolled device's app.
    package var apps: [DeviceID: AppID] = [:]
    /// Each device's epochs and the last seq the log holds of each, written
    /// by `finish()`: nothing in the fold reads them, and an upsert per row
    /// was an eighth of a replay.
    private var epochs: [DeviceID: [Epoch: OutboxSeq]] = [:]
    /// The vote rows the replay has met (`FoldMemory`).
    private let memory = FoldMemory(limit: 1 << 20)

    package init(fold: CloudFold<Rows>) {
        self.fold = fold
    }

    package mutating func apply(_ frame: LoggedFrame) throws {
        guard let app = apps[frame.device] else {
            throw CloudError(.corruptLog, "log seq \(frame.seq) is from device \(frame.device), which is not enrolled")
        }
        try fold.apply(frame.messages, device: frame.device, app: app, logSeq: frame.seq, receivedAt: frame.receivedAt,
                       memory: memory)
        if memory.count > memory.limit {
            try fold.flush(memory, forgetting: true)
        }
        epochs[frame.device, default: [:]][frame.epoch] = frame.lastSeq
    }

    /// Writes the epochs the replayed rows held, and the allowances.
    package func finish() throws {
        try fold.flush(memory, forgetting: true)
        for (device, held) in epochs.sorted(by: { $0.key < $1.key }) {
            guard let app = apps[device] else { continue }
            for (epoch, lastSeq) in held.sorted(by: { $0.key < $1.key }) {
                try fold.rows.recordEpoch(app: app, device: device, epoch: epoch, lastSeq: lastSeq)
            }
        }
    }
}

/// The result of checking the cloud log row by row.
public struct CloudLogVerification: Sendable {
    public var verifiedRows = 0
    public var messages = 0
    public var firstProblem: String?
    public var isValid: Bool { firstProblem == nil }
}

extension CloudIndex {
    /// Checks every log row in order: seqs dense from 1, each previous hash equal
    /// to the predecessor's hash, each hash recomputed, each payload inflating to
    /// its digest and decoding to its count of messages. Stops at the first bad row.
    public func verifyLog() throws(CloudError) -> CloudLogVerification {
        try verifyLog(handingTo: nil)
    }

    /// `verifyLog()`, handing each verified row's newly accepted messages to
    /// `stream` for a replay on another thread (a restore's check of the
    /// projections), so that each payload is inflated and decoded once. The
    /// caller finishes the stream.
    func verifyLog(handingTo stream: RowStream<LoggedFrame>?) throws(CloudError) -> CloudLogVerification {
        try read { db in
            var result = CloudLogVerification()
            var previous = [UInt8](repeating: 0, count: 32)
            let rows = try Row.fetchCursor(db, sql: """
                SELECT \(StoredLogRow.columns), prev_hash, hash FROM cloud_log ORDER BY seq
                """)
            while let row = try rows.next() {
                do throws(CloudError) {
                    let stored = try StoredLogRow(row)
                    let seq = stored.seq
                    guard seq == Int64(result.verifiedRows + 1) else {
                        result.firstProblem = "log seq \(result.verifiedRows + 1) is missing (the next row is \(seq))"
                        break
                    }
                    guard [UInt8](try Stored.column(row, 11, "prev_hash") as Data) == previous else {
                        result.firstProblem = "log seq \(seq): previous hash does not match the hash of seq \(seq - 1) (chain broken)"
                        break
                    }
                    let recomputed = CloudLog.chainHash(previous: previous, device: stored.device, epoch: stored.epoch,
                                                        firstSeq: stored.firstSeq, lastSeq: stored.lastSeq,
                                                        acceptedFrom: stored.acceptedFrom, digest: stored.digest,
                                                        receivedAt: stored.receivedAt)
                    guard recomputed == [UInt8](try Stored.column(row, 12, "hash") as Data) else {
                        result.firstProblem = "log seq \(seq): stored hash does not match the row's content (row altered)"
                        break
                    }
                    let messages = try stored.messages()
                    result.messages += stored.acceptedFrom.count(through: stored.lastSeq)
                    stream?.append(LoggedFrame(stored, messages: messages))
                    previous = recomputed
                } catch {
                    result.firstProblem = error.message
                    break
                }
                result.verifiedRows += 1
            }
            return result
        }
    }

    /// A SHA-256 digest of every projection row in key order.
    public func projectionDigest() throws(CloudError) -> String {
        try read { db in try CloudIndex.digest(db) }
    }

    /// Replays the cloud log into fresh projections in a private in-memory
    /// database and returns their digest; the store is not modified.
    public func rebuiltProjectionDigest() throws(CloudError) -> String {
        try inScratchProjections { replay in
            try queue.snapshotRead { source in
                replay.apps = try CloudIndex.enrolledApps(source)
                try CloudIndex.readLog(from: source, into: &replay)
            }
        }
    }

    /// `rebuiltProjectionDigest()` over the frames of `stream`, which another
    /// thread reads, verifies and decodes meanwhile (`verifyLog(handingTo:)`,
    /// in a restore): the log is read once for both checks. A stream that ends
    /// early (the verification stopped at a bad row) gives the digest of the
    /// rows before it.
    func rebuiltProjectionDigest(replaying stream: RowStream<LoggedFrame>) throws(CloudError) -> String {
        defer { stream.abandon() }
        return try inScratchProjections { replay in
            replay.apps = try read { db in try CloudIndex.enrolledApps(db) }
            while let batch = stream.nextBatch() {
                for frame in batch { try replay.apply(frame) }
                stream.recycle(consume batch)
            }
        }
    }

    /// Makes fresh projections in a private in-memory database, lets `body`
    /// fold the log into them, and returns their digest.
    /// The fold into `db`'s projections, with statements kept for this fold only.
    private func fold(_ db: Database) -> CloudFold<SQLiteFoldRows> {
        CloudFold(rows: SQLiteFoldRows(db: db, statements: StatementSlots(count: CloudStatement.allCases.count)),
                  threshold: threshold, agreement: agreement, secrets: secrets)
    }

    private func inScratchProjections(_ body: (inout LogReplay<SQLiteFoldRows>) throws -> Void) throws(CloudError) -> String {
        do {
            let scratch = try DatabaseQueue()
            return try scratch.write { scratchDB in
                try CloudSchema.create(scratchDB, threshold: threshold, voterSecret: secrets.secret, createdAt: 0)
                var replay = LogReplay(fold: fold(scratchDB))
                try body(&replay)
                try replay.finish()
                return try CloudIndex.digest(scratchDB)
            }
        } catch let error as CloudError {
            throw error
        } catch {
            throw CloudError(.database, "rebuild failed: \(CloudIndex.describe(error))")
        }
    }

    /// Empties the projections and folds the whole cloud log into them again, in
    /// one transaction.
    public func rebuildProjections() throws(CloudError) {
        ingestMemory.forget()
        try write { db in
            for table in CloudSchema.projectionTables { try db.execute(sql: "DELETE FROM \(table)") }
            var replay = LogReplay(fold: fold(db))
            replay.apps = try CloudIndex.enrolledApps(db)
            try CloudIndex.readLog(from: db, into: &replay)
            try replay.finish()
        }
    }

    private static func enrolledApps(_ db: Database) throws -> [DeviceID: AppID] {
        var apps: [DeviceID: AppID] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT device, app FROM devices") {
            apps[try Stored.column(row, 0, "devices.device")] = try Stored.column(row, 1, "devices.app")
        }
        return apps
    }

    /// Folds every row of the cloud log in `source` into `replay`, in order.
    private static func readLog(from source: Database, into replay: inout LogReplay<SQLiteFoldRows>) throws {
        let rows = try Row.fetchCursor(source, sql: "SELECT \(StoredLogRow.columns) FROM cloud_log ORDER BY seq")
        while let row = try rows.next() {
            let stored = try StoredLogRow(row)
            try replay.apply(LoggedFrame(stored, messages: try stored.messages()))
        }
    }

    static let digestQueries = [
        "SELECT device, epoch, last_seq FROM device_epochs ORDER BY device, epoch",
        "SELECT app, key, hash, live_votes, voters, views, shown, engaged, wanted_seq, has_content FROM hashes ORDER BY app, key",
        "SELECT app, key, voter, token, live, signal_day, day_views, day_shown, day_engaged FROM votes ORDER BY app, key, voter",
        "SELECT app, key, activity_type, title, keywords, description, url, log_seq FROM public_content ORDER BY app, key",
        "SELECT key, value FROM fold_state ORDER BY key",
        "SELECT app, key, voter, digest FROM content_offers ORDER BY app, key, voter",
    ]

    static func digest(_ db: Database) throws -> String {
        RowDigest.hex(try RowDigest.compute(db, digestQueries.map { ($0, []) }))
    }
}

/// One row of the cloud log, as the journal tools read it.
public struct CloudLogRecord: Sendable {
    public let seq: Int64
    public let device: DeviceID
    public let epoch: Epoch
    public let firstSeq: OutboxSeq
    public let lastSeq: OutboxSeq
    /// The first seq that was new when the frame was accepted.
    public let acceptedFrom: OutboxSeq
    public let receivedAt: Timestamp
    public let hash: [UInt8]
    /// The frame's messages from `firstSeq` (those before `acceptedFrom` were
    /// already held and were not folded again).
    public let messages: [OutboxMessage]
}

extension CloudIndex {
    /// Reads the cloud log from `seq` on, in order, until `body` returns false.
    public func scanLog(from start: Int64, _ body: (CloudLogRecord) throws -> Bool) throws(CloudError) {
        try read { db in
            let rows = try Row.fetchCursor(db, sql: """
                SELECT \(StoredLogRow.columns), hash FROM cloud_log WHERE seq >= ? ORDER BY seq
                """, arguments: [start])
            while let row = try rows.next() {
                let stored = try StoredLogRow(row)
                let record = CloudLogRecord(seq: stored.seq, device: stored.device, epoch: stored.epoch,
                                            firstSeq: stored.firstSeq, lastSeq: stored.lastSeq,
                                            acceptedFrom: stored.acceptedFrom, receivedAt: stored.receivedAt,
                                            hash: [UInt8](try Stored.column(row, 11, "hash") as Data),
                                            messages: try stored.messages())
                guard try body(record) else { break }
            }
        }
    }
}
