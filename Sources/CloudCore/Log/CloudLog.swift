import ByteCoding
import Crypto
import Foundation
import IndexModel
import SyncWire

/// The cloud log: every accepted frame, as received, in acceptance order, one
/// chain per app, each row chained to the app's previous one by SHA-256
/// (`Journal/FORMAT.md`, "Cloud store"). The projections are a fold over it.
/// What every backend computes alike lives here.
package enum CloudLog {
    /// The hash before an app's first row.
    package static let genesis = [UInt8](repeating: 0, count: 32)

    /// SHA-256 over the app's previous row's hash, then the row's app,
    /// device, epoch, first and last seq, first accepted seq, payload digest
    /// and receive time.
    package static func chainHash(previous: [UInt8], app: AppID, device: DeviceID, epoch: Epoch, firstSeq: OutboxSeq,
                                  lastSeq: OutboxSeq, acceptedFrom: OutboxSeq, digest: [UInt8], receivedAt: Timestamp) -> [UInt8] {
        var writer = BinaryWriter(capacity: 160)
        writer.raw(previous)
        writer.string(app.rawValue)
        writer.string(device.rawValue)
        writer.uvarint(epoch.rawValue)
        writer.uvarint(firstSeq.rawValue)
        writer.uvarint(lastSeq.rawValue)
        writer.uvarint(acceptedFrom.rawValue)
        writer.raw(digest)
        writer.svarint(receivedAt.millisecondsSince1970)
        return Array(SHA256.hash(data: writer.bytes))
    }

    /// The chain of format versions 1 to 6: one for the whole store, without
    /// the app, over the device's id of then.
    package static func format6ChainHash(previous: [UInt8], device: String, epoch: UInt64, firstSeq: UInt64, lastSeq: UInt64,
                                 acceptedFrom: UInt64, digest: [UInt8], receivedAt: Int64) -> [UInt8] {
        var writer = BinaryWriter(capacity: 128)
        writer.raw(previous)
        writer.string(device)
        writer.uvarint(epoch)
        writer.uvarint(firstSeq)
        writer.uvarint(lastSeq)
        writer.uvarint(acceptedFrom)
        writer.raw(digest)
        writer.svarint(receivedAt)
        return Array(SHA256.hash(data: writer.bytes))
    }

    /// The codec of a purged row (from format 10): its payload is stored,
    /// and it is the residue of the frame's payload, whose content messages
    /// a purge replaced by `contentPurged`. The row keeps the digest of the
    /// payload as received, which the chain covers.
    package static let purgedCodec: Int64 = 2

    /// The `count` messages a logged payload holds, checked against its
    /// digest; a purged row's residue, which no longer matches it, decodes
    /// with its `contentPurged` messages and every other check.
    package static func messages(codec: Int64, uncompressedLength: Int, payload: [UInt8], digest: [UInt8],
                                 count: Int) throws -> [OutboxMessage] {
        if codec == purgedCodec {
            guard payload.count == uncompressedLength else {
                throw CloudError(.corruptLog, "a purged row's payload is \(payload.count) bytes, its uncompressed_length \(uncompressedLength)")
            }
            let messages = try FramePayload.decode(payload, count: count, purged: true)
            guard messages.contains(where: { if case .contentPurged = $0 { true } else { false } }) else {
                throw CloudError(.corruptLog, "a row marked purged holds no purged content message")
            }
            return messages
        }
        return try FramePayload.decode(plain(codec: codec, uncompressedLength: uncompressedLength, payload: payload, digest: digest),
                                       count: count)
    }

    /// A logged payload uncompressed and checked against its digest, or a
    /// purged row's residue as it is.
    package static func plain(codec: Int64, uncompressedLength: Int, payload: [UInt8], digest: [UInt8]) throws -> [UInt8] {
        if codec == purgedCodec { return payload }
        let plain: [UInt8]
        switch UploadFrame.Codec(rawValue: UInt8(clamping: codec)) {
        case .stored: plain = payload
        case .deflate: plain = try Deflate.decompress(payload, limit: uncompressedLength)
        case nil: throw CloudError(.corruptLog, "unknown codec \(codec) in the cloud log")
        }
        guard Array(SHA256.hash(data: plain)) == digest else {
            throw CloudError(.corruptLog, "a logged payload does not match its digest")
        }
        return plain
    }

    /// One hex digest of every app's chain head, as a snapshot's manifest
    /// records it (`logHeadHash`): SHA-256 over each app in byte order of its
    /// name, `string` app ‖ `uvarint` rows ‖ the head row's hash. An empty log
    /// has the digest of nothing.
    package static func headsDigest(_ heads: [CloudLogHead]) -> String {
        var writer = BinaryWriter()
        for head in heads.sorted(by: { Array($0.app.rawValue.utf8).lexicographicallyPrecedes(Array($1.app.rawValue.utf8)) }) {
            writer.string(head.app.rawValue)
            writer.uvarint(UInt64(clamping: head.rows))
            writer.raw(head.hash)
        }
        return Hex.encode(SHA256.hash(data: writer.bytes))
    }
}

/// The end of one app's chain: how many rows it has and its last row's hash.
public struct CloudLogHead: Hashable, Sendable {
    public let app: AppID
    public let rows: Int64
    public let hash: [UInt8]

    package init(app: AppID, rows: Int64, hash: [UInt8]) {
        self.app = app
        self.rows = rows
        self.hash = hash
    }
}

/// The result of checking the cloud log row by row.
public struct CloudLogVerification: Sendable {
    public var verifiedRows = 0
    public var messages = 0
    public var firstProblem: String?
    /// Each app's chain head as far as it verified.
    public var heads: [CloudLogHead] = []
    public var isValid: Bool { firstProblem == nil }

    public init() {}

    /// `CloudLog.headsDigest` of the heads.
    public var headsDigest: String { CloudLog.headsDigest(heads) }
}

/// The check of the cloud log, fed its rows in order of app then seq, in
/// every backend: each app's seqs dense from 1, each previous hash its
/// predecessor's hash, each hash recomputed, each payload inflating to its
/// digest and decoding to its count of messages. It stops at the first bad row.
package struct LogChainCheck {
    package private(set) var result = CloudLogVerification()
    private var app: AppID?
    private var rows: Int64 = 0
    private var previous = CloudLog.genesis

    package init() {}

    /// Checks the next row, given with its stored `prevHash` and `hash`;
    /// returns its messages when it verifies, nil (and `result` says why)
    /// when it does not. Call nothing more after a nil.
    package mutating func check(_ row: StoredLogRow, prevHash: [UInt8], hash: [UInt8]) -> [OutboxMessage]? {
        if row.app != app {
            finishApp()
            app = row.app
            rows = 0
            previous = CloudLog.genesis
        }
        let seq = row.seq
        let place = "app \(row.app) log seq \(seq)"
        guard seq == rows + 1 else {
            result.firstProblem = "app \(row.app) log seq \(rows + 1) is missing (the next row is \(seq))"
            return nil
        }
        guard prevHash == previous else {
            result.firstProblem = "\(place): previous hash does not match the hash of seq \(seq - 1) (chain broken)"
            return nil
        }
        let recomputed = CloudLog.chainHash(previous: previous, app: row.app, device: row.device, epoch: row.epoch,
                                            firstSeq: row.firstSeq, lastSeq: row.lastSeq, acceptedFrom: row.acceptedFrom,
                                            digest: row.digest, receivedAt: row.receivedAt)
        guard recomputed == hash else {
            result.firstProblem = "\(place): stored hash does not match the row's content (row altered)"
            return nil
        }
        let messages: [OutboxMessage]
        do {
            messages = try row.messages()
        } catch {
            result.firstProblem = error.message
            return nil
        }
        result.messages += row.acceptedFrom.count(through: row.lastSeq)
        result.verifiedRows += 1
        rows = seq
        previous = recomputed
        return messages
    }

    /// Records a problem found outside the rows' own checks (a row that
    /// cannot be read at all).
    package mutating func fail(_ problem: String) {
        result.firstProblem = result.firstProblem ?? problem
    }

    /// Ends the check: the last app's head joins the others.
    package mutating func finish() -> CloudLogVerification {
        finishApp()
        return result
    }

    private mutating func finishApp() {
        if let app, rows > 0 { result.heads.append(CloudLogHead(app: app, rows: rows, hash: previous)) }
        app = nil
    }
}

/// A row of the cloud log as a replay folds it: the messages that were new
/// when its frame was accepted.
package struct LoggedFrame: Sendable {
    package let app: AppID
    package let seq: Int64
    package let device: DeviceID
    package let epoch: Epoch
    package let lastSeq: OutboxSeq
    /// When the cloud accepted the frame: the day its signals count towards.
    package let receivedAt: Timestamp
    package let messages: ArraySlice<OutboxMessage>

    package init(_ row: StoredLogRow, messages: [OutboxMessage]) {
        app = row.app
        seq = row.seq
        device = row.device
        epoch = row.epoch
        lastSeq = row.lastSeq
        receivedAt = row.receivedAt
        self.messages = row.newMessages(of: messages)
    }
}

/// Folds cloud log rows, each app's in log order, into projections made
/// afresh: a rebuild, or a restore's check of a snapshot's projections, in
/// any backend.
package struct LogReplay<Rows: FoldRows> {
    package let fold: CloudFold<Rows>
    /// Each device's epochs and the last seq the log holds of each, written
    /// by `finish()`: nothing in the fold reads them, and an upsert per row
    /// was an eighth of a replay.
    private var epochs: [DeviceStream: [Epoch: OutboxSeq]] = [:]
    /// The vote rows the replay has met (`FoldMemory`).
    private let memory = FoldMemory(limit: 1 << 20)

    package init(fold: CloudFold<Rows>) {
        self.fold = fold
    }

    package mutating func apply(_ frame: LoggedFrame) throws {
        // No device of such a name can enrol or send (`TextRule.name`); a row
        // an older build logged for one folds to nothing, since neither
        // backend could key its rows by the name exactly. The chain still
        // covers it, so verification and snapshots are unchanged.
        guard !frame.device.rawValue.utf8.contains(0) else { return }
        try fold.apply(frame.messages, device: frame.device, app: frame.app, logSeq: frame.seq, receivedAt: frame.receivedAt,
                       memory: memory)
        if memory.count > memory.limit {
            try fold.flush(memory, forgetting: true)
        }
        epochs[DeviceStream(app: frame.app, device: frame.device), default: [:]][frame.epoch] = frame.lastSeq
    }

    /// Writes the epochs the replayed rows held, and the allowances.
    package func finish() throws {
        try fold.flush(memory, forgetting: true)
        for (stream, held) in epochs.sorted(by: { $0.key < $1.key }) {
            for (epoch, lastSeq) in held.sorted(by: { $0.key < $1.key }) {
                try fold.rows.recordEpoch(app: stream.app, device: stream.device, epoch: epoch, lastSeq: lastSeq)
            }
        }
    }
}

/// One row of the cloud log, as the journal tools read it.
public struct CloudLogRecord: Sendable {
    public let app: AppID
    /// The row's place in its app's chain, from 1.
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
    /// Whether a purge took content out of the row (`contentPurged` messages).
    public let isPurged: Bool

    package init(_ row: StoredLogRow, hash: [UInt8]) throws(CloudError) {
        isPurged = row.codec == CloudLog.purgedCodec
        app = row.app
        seq = row.seq
        device = row.device
        epoch = row.epoch
        firstSeq = row.firstSeq
        lastSeq = row.lastSeq
        acceptedFrom = row.acceptedFrom
        receivedAt = row.receivedAt
        self.hash = hash
        messages = try row.messages()
    }
}
