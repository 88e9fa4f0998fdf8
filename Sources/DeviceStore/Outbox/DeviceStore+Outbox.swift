import Foundation
import GRDB
import IndexModel
import SQLiteSupport
import SyncWire

/// One outbox message as stored, with the journal event that produced it.
public struct OutboxEntry: Hashable, Sendable {
    public let position: OutboxPosition
    /// The journal event whose fold appended this message.
    public let journalSeq: Seq
    public let message: OutboxMessage
}

extension DeviceStore {
    /// The sync cursor and outbox size.
    public func syncStatus() throws(DeviceStoreError) -> SyncStatus {
        // The simulator asks every device for its status every few virtual
        // seconds, and most of the time nothing was written since it last
        // asked: an in-memory store answers from the last answer (which each
        // write that may change it clears, on the queue, so a value there
        // was read after the last such write began). Two statements rather
        // than one per value.
        // A call that sends moves the cached answer forward instead (`performAll`).
        let caches = isInMemory
        if caches, let status = cachedStatus.withLock({ $0 }) { return status }
        return try read { db in
            let status = try DeviceStore.readSyncStatus(db, writePath.outbox)
            if caches { cachedStatus.withLock { $0 = status } }
            return status
        }
    }

    /// `status` once `sent` messages were appended to the outbox, the last at
    /// `head`: each is after the cloud's ack (the outbox only grows past its
    /// head, and the ack is never beyond it), so each is one more pending.
    /// Nil (read it again) if `head` is not past both, which a status read
    /// in an earlier transaction of this connection cannot be.
    static func status(_ status: SyncStatus, after sent: Int, head: OutboxPosition) -> SyncStatus? {
        guard head > status.head && head > status.acknowledged else { return nil }
        return SyncStatus(head: head, acknowledged: status.acknowledged, durable: status.durable, pending: status.pending + sent)
    }

    /// `syncStatus()` as the store holds it now, not remembered.
    static func readSyncStatus(_ db: Database, _ slots: StatementSlots) throws -> SyncStatus {
        let state = try OutboxState.read(db, slots)
        let acknowledged = state.acknowledged
        let count = try slots.statement(OutboxState.Statement.pending.rawValue, db, "SELECT count(*) FROM outbox WHERE (epoch, seq) > (?, ?)")
        defer { count.reset() }
        count.bind(1, acknowledged.epoch)
        count.bind(2, acknowledged.seq)
        let pending = try count.step() ? Int(count.int64(0)) : 0
        return SyncStatus(head: state.head, acknowledged: acknowledged, durable: state.durable, pending: pending)
    }

    /// Up to `limit` outbox records after `position`, in order, as the
    /// uploader takes them: each as it is sent (`OutboxMessage.asSent`).
    /// Read through a statement kept for the connection: the simulator's
    /// event loop reads the outbox for nearly every frame.
    public func pendingOutbox(after position: OutboxPosition, limit: Int) throws(DeviceStoreError) -> [OutboxRecord] {
        try read { db in
            let statement = try writePath.outbox.statement(OutboxState.Statement.records.rawValue, db, """
                    SELECT epoch, seq, message FROM outbox WHERE (epoch, seq) > (?, ?) ORDER BY epoch, seq LIMIT ?
                    """)
            defer { statement.reset() }
            statement.bind(1, position.epoch)
            statement.bind(2, position.seq)
            statement.bind(3, Int64(limit))
            var records: [OutboxRecord] = []
            while try statement.step() {
                let position = try StoredValue.outboxPosition(epoch: statement.int64(0), seq: statement.int64(1), "outbox.")
                let encoded = statement.blob(2)
                // A frame's payload is made of these bytes as they are, so an
                // edited store's must have a message's shape before they go
                // anywhere; the cloud checks the rest.
                guard OutboxMessage.hasFrameShape(encoded) else {
                    throw DeviceStoreError(.corruptJournal, """
                        outbox message \(position) is not a message: \(encoded.count) bytes \
                        starting \(encoded.prefix(4).map { String($0, radix: 16) }.joined(separator: " "))
                        """)
                }
                records.append(OutboxRecord(position: position, encoded: OutboxMessage.asSent(encoded)))
            }
            return records
        }
    }

    /// The stored outbox messages after `position`, decoded, for inspection.
    public func outboxEntries(after position: OutboxPosition = .nothing,
                              limit: Int = Int.max) throws(DeviceStoreError) -> [OutboxEntry] {
        try read { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT epoch, seq, journal_seq, message FROM outbox WHERE (epoch, seq) > (?, ?) ORDER BY epoch, seq LIMIT ?
                """, arguments: [position.epoch, position.seq, Int64(clamping: limit)])
            return try rows.map { row in
                let position = try StoredValue.outboxPosition(epoch: StoredValue.column(row, 0, "outbox.epoch"),
                                                              seq: StoredValue.column(row, 1, "outbox.seq"), "outbox.")
                let bytes: Data = try StoredValue.column(row, 3, "outbox message \(position)")
                let message: OutboxMessage
                do {
                    message = try OutboxMessage.decode([UInt8](bytes))
                } catch {
                    throw DeviceStoreError(.corruptJournal, "outbox message \(position) does not decode: \(error)")
                }
                let journalSeq = try StoredValue.position(StoredValue.column(row, 2, "outbox.journal_seq"), "outbox.journal_seq")
                return OutboxEntry(position: position, journalSeq: Seq(journalSeq), message: message)
            }
        }
    }

    /// Journals the cloud's request for the public content of `hashes` (from an
    /// ack), and the fold answers with a content message for each. The cloud
    /// asks in every ack until it has an answer, so only some are journaled:
    /// - those this device holds a live vote for (a device restored from an
    ///   older backup can be asked about a vote it no longer holds);
    /// - of those, the ones not answered already with an answer still in
    ///   the outbox beyond the acknowledged cursor (a device with a backlog
    ///   hears the request again in every ack before its answer gets out).
    /// Returns the journal seqs appended (nil when nothing was).
    @discardableResult
    public func recordContentRequests(_ hashes: [PublicHash]) throws(DeviceStoreError) -> ClosedRange<Seq>? {
        try recordContentRequests(hashes, acknowledged: nil)
    }

    /// The same, from an ack through `acknowledged`: hashes whose answers
    /// are beyond it are left out before any transaction, since a device with
    /// a backlog hears them in every ack.
    @discardableResult
    func recordContentRequests(_ hashes: [PublicHash], acknowledged ack: OutboxPosition?) throws(DeviceStoreError) -> ClosedRange<Seq>? {
        let requested = Set(hashes).sorted().filter { hash in
            answersInFlight.withLock { answers in
                guard let answered = answers[hash] else { return true }
                return ack.map { answered <= $0 } ?? true
            }
        }
        guard !requested.isEmpty else { return nil }
        return try journalOwnWrite { db, appender in
            // The ack being taken may be ahead of what the store has recorded.
            let acknowledged = max(try OutboxState.read(db, writePath.outbox).acknowledged, ack ?? .nothing)
            let inFlight = answersInFlight.withLock { answers in
                answers = answers.filter { $0.value > acknowledged }
                return answers
            }
            let voted = try requested.filter { hash in
                guard inFlight[hash] == nil else { return false }
                return try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM public_votes WHERE hash = ?)"),
                                         arguments: [Data(hash.bytes)]) ?? false
                    && !DeviceStore.holdsUnsendableContent(db, hash)
            }
            guard !voted.isEmpty else { return nil }
            // The journal keeps the hashes as bytes: IndexModel knows no `PublicHash`.
            try appender.append(.publicContentRequested(hashes: voted.map(\.bytes)))
            let head = try OutboxState.read(db, writePath.outbox).head
            answersInFlight.withLock { answers in
                for hash in voted { answers[hash] = head }
            }
            return appender.appendedRange
        }
    }

    /// Whether the content this device would answer for `hash` is none a
    /// frame may carry (`PublicContent.textProblem`): a public activity an
    /// older build journaled with a NUL in its title, say. Its request is
    /// not journaled, so the cloud, which asks again in every ack, is never
    /// answered, and the device is not wedged answering it.
    static func holdsUnsendableContent(_ db: Database, _ hash: PublicHash) throws -> Bool {
        let payload = try Data.fetchOne(db.cachedStatement(sql: """
            SELECT a.payload FROM public_activities p JOIN activities a ON a.activity_key = p.activity_key
            WHERE p.hash = ? AND p.live = 1 ORDER BY a.changed_seq DESC LIMIT 1
            """), arguments: [Data(hash.bytes)])
        guard let payload, !payload.isEmpty, let activity = try? EventCodec.decodeActivity([UInt8](payload)),
              let content = PublicContent(activity) else { return false }
        return content.textProblem != nil
    }

    /// Journals the cloud's answer to a reindex ask (from an ack), and the
    /// fold states this device's vote for each of its hashes again: a vote
    /// when it holds a live one, else a withdrawal. A request that names no
    /// hash and has no more to read is not journaled. Returns the journal
    /// seq, or nil.
    @discardableResult
    public func recordCloudReindex(_ request: CloudReindex) throws(DeviceStoreError) -> Seq? {
        guard !request.hashes.isEmpty || request.more else { return nil }
        return try journalOwnWrite { _, appender in try appender.append(.votesReindexRequested(VoteReindexRequest(request))) }
    }

    /// A store's own write, not for an app's call, at its clock's now: the
    /// expiry sweep every call starts with, then `body`'s events.
    func journalOwnWrite<T>(_ body: (Database, JournalAppender) throws -> T) throws(DeviceStoreError) -> T {
        let now = clock.now()
        let keys = privacyKeys
        return try write { db in
            let appender = try JournalAppender(db: db, time: now, keys: keys, path: writePath)
            var executor = CallExecutor(appender: appender)
            try executor.expire(now: now)
            return try body(db, appender)
        }
    }

    /// How the store's app counts popularity, as the store last learned it
    /// from an ack (exact until then, and for a store of version 3 opened
    /// read-only, which cannot have learned one).
    public func popularityMode() throws(DeviceStoreError) -> PopularityMode {
        try read { db in
            guard try SchemaLookup.hasTable(db, "popularity_mode") else { return .exact }
            // Through the fold's statement, which the connection keeps: a
            // simulated device asks at the start of every sync.
            return try PrivacyProjection(db: db, keys: privacyKeys, statements: writePath.privacy).popularityMode()
        }
    }

    /// The ε the store's private reports spent, in thousandths, by day of
    /// its clock (`Timestamp.daysSince1970`). Empty for a store
    /// that never reported, or of version 3 opened read-only.
    public func privacyLedger() throws(DeviceStoreError) -> [Int64: Int64] {
        try read { db in
            guard try SchemaLookup.hasTable(db, "privacy_budget") else { return [:] }
            var ledger: [Int64: Int64] = [:]
            for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT day, spent FROM privacy_budget")) {
                ledger[try StoredValue.column(row, 0, "privacy_budget.day")] = try StoredValue.column(row, 1, "privacy_budget.spent")
            }
            return ledger
        }
    }

    /// Journals that the app now counts popularity as `mode`, unless the
    /// store holds that mode already; from then on the fold sends signals
    /// (`exact`) or private reports (`ldp`). Returns the journal seq, or nil.
    @discardableResult
    public func recordPopularityMode(_ mode: PopularityMode) throws(DeviceStoreError) -> Seq? {
        guard try popularityMode() != mode else { return nil }
        return try journalOwnWrite { _, appender in try appender.append(.popularityModeLearned(mode)) }
    }


    /// Records the cloud's ack: it holds everything through `acceptedThrough`,
    /// durably through `durableThrough`. Messages up to the durable position are
    /// dropped. Neither position moves backwards here; a cloud that lost messages
    /// says so with a gap, and the uploader resends from its own cursor.
    ///
    /// After a restore the cloud can hold more of an old epoch than the device
    /// (what the device sent after its snapshot): the positions are then kept at
    /// the device's own head, since it has nothing there left to send.
    public func recordAcknowledgement(acceptedThrough: OutboxPosition,
                                      durableThrough: OutboxPosition) throws(DeviceStoreError) {
        // The ack moves the sync status, but not the journal's head, the
        // outbox's last message (pruning keeps it) or any expiry: an
        // in-memory store's next call need not read those again.
        try write(keepsMemos: true) { db in
            let slots = writePath.outbox
            forgetStatus()
            try OutboxStore.recordAcknowledgement(db, slots, state: OutboxState.read(db, slots), acceptedThrough: acceptedThrough,
                                                  durableThrough: durableThrough)
        }
    }
}

extension OutboxStore {

    /// The same, from `state` read in this transaction. A position that does
    /// not move is not written again.
    static func recordAcknowledgement(_ db: Database, _ slots: StatementSlots, state: OutboxState, acceptedThrough: OutboxPosition,
                                      durableThrough: OutboxPosition) throws {
        let head = state.head
        guard durableThrough <= acceptedThrough else {
            throw DeviceStoreError(.sync, "the cloud acknowledges through \(acceptedThrough) but durable through \(durableThrough), which is later")
        }
        // A restored store writes only in its new epoch, so an ack beyond
        // the head in an earlier epoch is about messages it lost with the
        // wipe (the old epoch's tail, or a later restore's epoch when it
        // was restored from an older backup): it takes its own head as
        // acknowledged, having nothing there left to send.
        guard acceptedThrough <= head || acceptedThrough.epoch < state.epoch else {
            throw DeviceStoreError(.sync, """
                the cloud acknowledges through \(acceptedThrough) (durable through \(durableThrough)) \
                but this device's outbox ends at \(head)
                """)
        }
        let acknowledged = max(state.acknowledged, min(acceptedThrough, head))
        let durable = max(state.durable, min(durableThrough, head))
        if acknowledged != state.acknowledged { try OutboxStore.setPosition(db, slots, "acknowledged", acknowledged) }
        if durable != state.durable { try OutboxStore.setPosition(db, slots, "durable", durable) }
        // Even when the durable position stays: the last message is kept
        // until a later one is appended, and then it can go.
        try OutboxStore.prune(db, slots, through: durable, head: head)
    }
}

/// The store's epoch, outbox head and sync positions, read together.
struct OutboxState {
    var epoch: Epoch
    var head: OutboxPosition
    var acknowledged: OutboxPosition
    var durable: OutboxPosition

    /// The store's statements for its sync state, in `WritePath.outbox`.
    enum Statement: Int, CaseIterable {
        case state, pending, records, setPosition, prune
    }

    /// One statement, for `syncStatus()` and the ack alike, read before
    /// nearly every sync. It is kept in the connection's `slots` and read
    /// column by column, without GRDB's statement cache and rows, which would
    /// add to each of those reads. Its rows are
    /// tagged by what they hold: 0 the epoch, 1 the outbox head, 2 to 5 the
    /// acknowledged and durable positions' halves. One row of seven scalar
    /// subqueries would compile to twice the memory (11 KiB), in each of a
    /// simulation's thousands of connections.
    static func read(_ db: Database, _ slots: StatementSlots) throws -> OutboxState {
        let statement = try slots.statement(Statement.state.rawValue, db, """
                SELECT 0, value, NULL FROM store_meta WHERE key = 'epoch'
                UNION ALL SELECT 1, epoch, seq FROM (SELECT epoch, seq FROM outbox ORDER BY epoch DESC, seq DESC LIMIT 1)
                UNION ALL SELECT CASE key WHEN 'acknowledged_epoch' THEN 2 WHEN 'acknowledged_seq' THEN 3
                                          WHEN 'durable_epoch' THEN 4 ELSE 5 END, value, NULL
                          FROM sync_state WHERE key IN ('acknowledged_epoch', 'acknowledged_seq', 'durable_epoch', 'durable_seq')
                """)
        defer { statement.reset() }
        var epoch: Int64?
        var head: (epoch: Int64?, seq: Int64?) = (nil, nil)
        var halves = [Int64?](repeating: nil, count: 4)
        while try statement.step() {
            switch statement.int64(0) {
            case 0: epoch = statement.optionalInt64(1)
            case 1: head = (statement.optionalInt64(1), statement.optionalInt64(2))
            case let tag: halves[Int(tag - 2)] = statement.optionalInt64(1)
            }
        }
        func position(_ epoch: Int64?, _ seq: Int64?, _ what: String) throws(DeviceStoreError) -> OutboxPosition {
            guard let epoch, let seq else { return .start }
            return try StoredValue.outboxPosition(epoch: epoch, seq: seq, "the \(what) ")
        }
        return OutboxState(epoch: Epoch(try StoredValue.position(epoch ?? 1, "store_meta.epoch")),
                           head: try position(head.epoch, head.seq, "outbox head"),
                           acknowledged: try position(halves[0], halves[1], "acknowledged"),
                           durable: try position(halves[2], halves[3], "durable"))
    }
}

/// The outbox and sync-state tables, for the store's own code.
enum OutboxStore {
    /// The epoch the store writes in.
    static func epoch(_ db: Database) throws -> Epoch {
        Epoch(try StoredValue.position(try Int64.fetchOne(db.cachedStatement(sql: "SELECT value FROM store_meta WHERE key = 'epoch'")) ?? 1,
                                       "store_meta.epoch"))
    }

    /// The last message appended, or seq 0 of epoch 1 when there is none.
    /// Pruning always keeps the last message, so it is the outbox's last row.
    /// Compiled for each use: a snapshot asks it, and the calls' path keeps
    /// its own (`PrivacyProjection`).
    static func head(_ db: Database) throws -> OutboxPosition {
        try head(DirectStatement(owned: db, headSQL))
    }

    static let headSQL = "SELECT epoch, seq FROM outbox ORDER BY epoch DESC, seq DESC LIMIT 1"

    /// The same, with `statement`, a prepared `headSQL` of the connection's
    /// own (the privacy projection keeps one in its slots).
    static func head(_ statement: DirectStatement) throws -> OutboxPosition {
        defer { statement.reset() }
        guard try statement.step() else { return .start }
        return try StoredValue.outboxPosition(epoch: statement.int64(0), seq: statement.int64(1), "the outbox head ")
    }

    static func acknowledged(_ db: Database) throws -> OutboxPosition {
        try position(db, "acknowledged")
    }

    static func durable(_ db: Database) throws -> OutboxPosition {
        try position(db, "durable")
    }

    private static func position(_ db: Database, _ name: String) throws -> OutboxPosition {
        let epoch = try Int64.fetchOne(db.cachedStatement(sql: "SELECT value FROM sync_state WHERE key = ?"),
                                       arguments: [name + "_epoch"])
        let seq = try Int64.fetchOne(db.cachedStatement(sql: "SELECT value FROM sync_state WHERE key = ?"),
                                     arguments: [name + "_seq"])
        guard let epoch, let seq else { return .start }
        return try StoredValue.outboxPosition(epoch: epoch, seq: seq, "sync_state.\(name)_")
    }

    /// Stores the position `name` (`acknowledged` or `durable`). `slots` are
    /// the store connection's `WritePath.outbox`: an ack writes here.
    static func setPosition(_ db: Database, _ slots: StatementSlots, _ name: String, _ position: OutboxPosition) throws {
        let statement = try slots.statement(OutboxState.Statement.setPosition.rawValue, db, """
                INSERT INTO sync_state (key, value) VALUES (?1, ?2), (?3, ?4)
                ON CONFLICT (key) DO UPDATE SET value = excluded.value
                """)
        statement.bind(1, name + "_epoch")
        statement.bind(2, position.epoch)
        statement.bind(3, name + "_seq")
        statement.bind(4, position.seq)
        try statement.execute()
    }

    /// Drops the messages at or before `position`, except the last message
    /// ever appended, which holds the head.
    static func prune(_ db: Database, _ slots: StatementSlots, through position: OutboxPosition) throws {
        try prune(db, slots, through: position, head: head(db))
    }

    /// The same, with the outbox head already read in this transaction.
    static func prune(_ db: Database, _ slots: StatementSlots, through position: OutboxPosition, head: OutboxPosition) throws {
        // The last message stays; an outbox that never had one keeps nothing.
        let through = head.previousInEpoch.map { min(position, $0) } ?? position
        let statement = try slots.statement(OutboxState.Statement.prune.rawValue, db, "DELETE FROM outbox WHERE (epoch, seq) <= (?, ?)")
        statement.bind(1, through.epoch)
        statement.bind(2, through.seq)
        try statement.execute()
    }
}

extension VoteReindexRequest {
    /// The journal's form of a request: IndexModel knows no `PublicHash` or
    /// `OutboxPosition`.
    init(_ request: CloudReindex) {
        self.init(afterEpoch: request.after.epoch, afterSeq: request.after.seq, throughEpoch: request.through.epoch,
                  throughSeq: request.through.seq, hashes: request.hashes.map(\.bytes), more: request.more)
    }
}
