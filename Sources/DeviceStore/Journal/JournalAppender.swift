import Foundation
import GRDB
import IndexModel
import SQLiteSupport
import SyncWire

/// Appends the events of one call inside a write transaction: encodes each event,
/// links it into the hash chain, inserts the row and folds it into the
/// projections, all in the caller's transaction.
final class JournalAppender {
    let db: Database
    let epoch: Epoch
    private(set) var call: CallID
    let time: Timestamp
    private let fold: JournalFold
    private(set) var head: Seq
    private(set) var headHash: ChainHash
    private(set) var firstAppended: Seq?
    private let insert: DirectStatement
    let path: WritePath

    /// The journal's last row, as a write path remembers it between calls.
    struct Head {
        let epoch: Epoch
        let seq: Seq
        let hash: ChainHash
        let call: CallID
    }

    /// Reads the journal head in `db`, which must be inside a write transaction,
    /// unless `path` remembers it. `path` is what the connection keeps for its
    /// writes, or a new one for a one-off append.
    init(db: Database, time: Timestamp, keys: PrivacyProjection.Keys,
         path: WritePath = WritePath()) throws {
        self.db = db
        self.time = time
        self.path = path
        fold = JournalFold(projector: Projector(db: db, statements: path.projector, expiry: path.expiry),
                           privacy: PrivacyProjection(db: db, keys: keys, statements: path.privacy, head: path.outboxHead))
        let journal = path.journal
        insert = try journal.statement(Statements.insert.rawValue, db, """
                INSERT INTO event_journal (seq, epoch, call, kind, time, payload, prev_hash, hash)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """)
        if let known = path.head {
            epoch = known.epoch
            head = known.seq
            headHash = known.hash
            call = known.call.next
            return
        }
        let readEpoch = try journal.statement(Statements.epoch.rawValue, db, "SELECT value FROM store_meta WHERE key = 'epoch'")
        defer { readEpoch.reset() }
        epoch = Epoch(try StoredValue.position(try readEpoch.step() ? readEpoch.int64(0) : 1, "store_meta.epoch"))
        let readHead = try journal.statement(Statements.head.rawValue, db, "SELECT seq, call, hash FROM event_journal ORDER BY seq DESC LIMIT 1")
        defer { readHead.reset() }
        if try readHead.step() {
            let seq = readHead.int64(0)
            head = Seq(try StoredValue.position(seq, "the journal's last seq"))
            let hash = readHead.blob(2)
            guard let chainHash = ChainHash(hash) else {
                throw DeviceStoreError(.corruptJournal, "seq \(seq): stored hash is \(hash.count) bytes, not 32", seq: head)
            }
            headHash = chainHash
            call = CallID(try StoredValue.position(readHead.int64(1), "the call of journal seq \(seq)")).next
        } else {
            head = .none
            headHash = .genesis
            call = CallID(1)
        }
    }

    private enum Statements: Int, CaseIterable {
        case insert, epoch, head
    }

    static var statementCount: Int { Statements.allCases.count }

    @discardableResult
    func append(_ event: JournalEvent) throws -> Seq {
        let payload = EventCodec.encode(event)
        let seq = head.next
        let hash = ChainHash.of(previous: headHash, epoch: epoch, seq: seq, call: call, time: time, kind: event.kind.rawValue,
                                payloadHash: ChainHash.ofPayload(payload))
        insert.bind(1, Int64(seq.rawValue))
        insert.bind(2, epoch)
        insert.bind(3, Int64(call.rawValue))
        insert.bind(4, Int64(event.kind.rawValue))
        insert.bind(5, time.millisecondsSince1970)
        insert.bind(6, payload)
        insert.bind(7, headHash.bytes)
        insert.bind(8, hash.bytes)
        try insert.execute()
        try fold.apply(event, payload: payload, epoch: epoch, seq: seq, time: time)
        head = seq
        headHash = hash
        path.head = Head(epoch: epoch, seq: seq, hash: hash, call: call)
        if let outboxHead = fold.privacy.outboxHead { path.outboxHead = outboxHead }
        if firstAppended == nil { firstAppended = seq }
        return seq
    }

    /// Starts the next call in the same transaction (a group of calls committed
    /// together, as `DeviceStore.performAll` does).
    func startNextCall() {
        call = call.next
        firstAppended = nil
    }

    /// The seqs this call appended, or nil when it appended nothing.
    var appendedRange: ClosedRange<Seq>? {
        firstAppended.map { $0...head }
    }

    var projections: Projector { fold.projector }

    /// What the events appended so far did to the outbox: how many messages
    /// they appended, whether they moved an epoch, and the outbox's last message.
    var outboxChange: (sent: Int, movedEpoch: Bool, head: OutboxPosition?) {
        (fold.privacy.messagesSent, fold.privacy.movedEpoch, fold.privacy.outboxHead)
    }
}
