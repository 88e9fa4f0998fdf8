import Foundation
import IndexModel
import SyncWire

/// What a purge of the cloud log did, or would do (`CloudStore.purgeWithdrawnContent`).
public struct CloudPurgeReport: Hashable, Sendable {
    /// The log rows whose payloads were rewritten, as app and log seq.
    public var rows: [CloudLogRowID] = []
    /// Content messages replaced by their residue.
    public var contentMessages = 0
    /// The distinct public hashes (per app) whose content went.
    public var hashes = 0
    /// The encoded bytes of the content that went (strings, keywords, URL).
    public var bytes = 0
    /// Content messages of hashes below K whose withdrawal no backup holds
    /// yet: the next purge after the next `cloud snapshot` takes them.
    public var waitingForBackup = 0

    public init() {}
}

/// One row of the cloud log: its app and its place in the app's chain.
public struct CloudLogRowID: Hashable, Sendable, CustomStringConvertible {
    public let app: AppID
    public let seq: Int64

    public init(app: AppID, seq: Int64) {
        self.app = app
        self.seq = seq
    }

    public var description: String { "\(app)#\(seq)" }
}

/// Which content messages of the cloud log a purge takes out, the same for
/// every backend (`docs/CLOUD.md`, "Purging withdrawn content").
///
/// Content a device sent for a hash is purgeable when the hash is below K
/// now, and a backup holds the row the hash last fell below K in (or the
/// content's own row, when it came later or the hash never reached K):
/// below K the projections hold none of it (`ThresholdRule`), and a restore
/// of that backup or a later one cannot need it to count anything. Each
/// such message becomes `contentPurged`: its hash and the keyed digest the
/// cloud keeps an offer under, so a resent frame is still compared message
/// by message (`IngestCore.same`). A row keeps its digest, which the chain
/// covers, and is marked with `CloudLog.purgedCodec`; a rebuild folds a
/// purged row as it folded the original, since the fold takes nothing from
/// content of a hash below K that it does not drop again when the hash
/// falls below K.
///
/// Feed it every row of the log in order of app, then seq (`feed`), then
/// take the rewrites (`finish`).
package struct CloudPurgePlanner {
    /// A row rewritten: its new (stored) payload.
    package struct Rewrite: Sendable {
        package let row: CloudLogRowID
        package let payload: [UInt8]
    }

    private let threshold: Int
    private let secrets: CloudSecrets
    /// What the cloud's last backup holds of each device.
    private let backedUp: [DeviceStream: OutboxPosition]
    private var app: AppID?
    private var live: [PublicHash: Set<DeviceID>] = [:]
    /// The log seq of the row in which each hash last fell below K.
    private var fellAt: [PublicHash: Int64] = [:]
    /// Rows that hold content, with their messages, by log seq.
    private var contentRows: [Int64: (row: StoredLogRow, messages: [OutboxMessage])] = [:]
    /// The newest row the backup holds: it is a consistent copy, so it
    /// holds every row of the app before that one too.
    private var coveredThrough: Int64 = 0
    private(set) var rewrites: [Rewrite] = []
    private(set) var report = CloudPurgeReport()

    package init(threshold: Int, secrets: CloudSecrets, backedUp: [DeviceStream: OutboxPosition]) {
        self.threshold = threshold
        self.secrets = secrets
        self.backedUp = backedUp
    }

    /// The next row of the log.
    package mutating func feed(_ row: StoredLogRow) throws(CloudError) {
        if row.app != app {
            finishApp()
            app = row.app
        }
        let messages = try row.messages()
        if let held = backedUp[DeviceStream(app: row.app, device: row.device)],
           OutboxPosition(epoch: row.epoch, seq: row.lastSeq) <= held {
            coveredThrough = max(coveredThrough, row.seq)
        }
        var holdsContent = false
        for (offset, message) in messages.enumerated() {
            switch message {
            case .content:
                holdsContent = true
            case .vote(let hash, _), .withdraw(let hash, _):
                // Only the row's new messages were folded.
                guard offset >= row.firstSeq.count(before: row.acceptedFrom) else { continue }
                let before = live[hash]?.count ?? 0
                if case .vote = message {
                    live[hash, default: []].insert(row.device)
                } else {
                    live[hash]?.remove(row.device)
                }
                if before >= threshold && (live[hash]?.count ?? 0) < threshold { fellAt[hash] = row.seq }
            default:
                break
            }
        }
        if holdsContent { contentRows[row.seq] = (row, messages) }
    }

    /// The rewrites of every row fed, and what they take out.
    package mutating func finish() -> (rewrites: [Rewrite], report: CloudPurgeReport) {
        finishApp()
        return (rewrites, report)
    }

    private mutating func finishApp() {
        defer {
            live = [:]
            fellAt = [:]
            contentRows = [:]
            coveredThrough = 0
        }
        guard let app else { return }
        var purgedHashes = Set<PublicHash>()
        for (seq, held) in contentRows.sorted(by: { $0.key < $1.key }) {
            var changed = false
            var messages = held.messages
            for (index, message) in messages.enumerated() {
                guard case .content(let hash, let content) = message, (live[hash]?.count ?? 0) < threshold else { continue }
                guard max(seq, fellAt[hash] ?? seq) <= coveredThrough else {
                    report.waitingForBackup += 1
                    continue
                }
                messages[index] = .contentPurged(hash, digest: secrets.contentDigest(app: app, content: content))
                report.contentMessages += 1
                report.bytes += message.encoded.count - PublicHash.byteCount - 1
                purgedHashes.insert(hash)
                changed = true
            }
            guard changed else { continue }
            let row = CloudLogRowID(app: app, seq: seq)
            rewrites.append(Rewrite(row: row, payload: FramePayload.encode(messages.map(\.encoded))))
            report.rows.append(row)
        }
        report.hashes += purgedHashes.count
    }
}
