import Foundation
import IndexModel
import Synchronization
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

    /// Adds another app's report to this one.
    public mutating func add(_ other: CloudPurgeReport) {
        rows += other.rows
        contentMessages += other.contentMessages
        hashes += other.hashes
        bytes += other.bytes
        waitingForBackup += other.waitingForBackup
    }
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
/// now, and a backup holds the row in which the hash last fell below K (or
/// the content's own row, when it came later or the hash never reached K):
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
/// One planner reads one app's log, and the store keeps it between purges
/// (`CloudPurgeReadings`): rows are only appended, so a purge reads the rows
/// after the last one it read. It starts again from the first row when that
/// row's hash is not the one it read (the log was restored or cut), or K
/// changed.
package struct CloudPurgePlanner: Sendable {
    /// A row rewritten: its new (stored) payload.
    package struct Rewrite: Sendable {
        package let row: CloudLogRowID
        package let payload: [UInt8]
        /// What the payload holds.
        let messages: [OutboxMessage]
    }

    package let app: AppID
    package let threshold: Int
    /// The last row read, and its chain hash.
    package private(set) var readThrough: Int64 = 0
    package private(set) var readHash: [UInt8] = []
    private var live: [PublicHash: Set<DeviceID>] = [:]
    /// The log seq of the row in which each hash last fell below K.
    private var fellAt: [PublicHash: Int64] = [:]
    /// Rows that hold content not yet purged, with their messages, by log seq.
    private var contentRows: [Int64: (row: StoredLogRow, messages: [OutboxMessage])] = [:]
    /// Each device's rows: the position each ends at, and its log seq, in order.
    private var rowsByDevice: [DeviceID: [(last: OutboxPosition, seq: Int64)]] = [:]

    package init(app: AppID, threshold: Int) {
        self.app = app
        self.threshold = threshold
    }

    /// Starts again from nothing unless `hash`, the chain hash the log holds
    /// now at `readThrough`, is the one this planner read there: otherwise
    /// the log was restored or cut since.
    package mutating func restartUnless(readRowHash hash: [UInt8]?) {
        if hash != readHash { self = CloudPurgePlanner(app: app, threshold: threshold) }
    }

    /// The app's next row (`readThrough + 1`), with its chain hash.
    package mutating func feed(_ row: StoredLogRow, hash: [UInt8]) throws(CloudError) {
        guard row.app == app, row.seq == readThrough + 1 else {
            throw CloudError(.corruptLog, "app \(row.app) log seq \(row.seq) read for a purge after seq \(readThrough) of app \(app)")
        }
        readThrough = row.seq
        readHash = hash
        rowsByDevice[row.device, default: []].append((OutboxPosition(epoch: row.epoch, seq: row.lastSeq), row.seq))
        let messages = try row.messages()
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

    /// The rewrites the rows read call for, given what the cloud's last
    /// backup holds of each device, and what they take out. The backup is a
    /// consistent copy, so it holds every row before the newest it holds.
    package func plan(backedUp: [DeviceID: OutboxPosition], secrets: CloudSecrets) -> (rewrites: [Rewrite], report: CloudPurgeReport) {
        var coveredThrough: Int64 = 0
        for (device, held) in backedUp {
            // The device's rows end at increasing positions, in log order.
            guard let rows = rowsByDevice[device] else { continue }
            var low = 0, high = rows.count
            while low < high {
                let middle = (low + high) / 2
                if rows[middle].last <= held { low = middle + 1 } else { high = middle }
            }
            if low > 0 { coveredThrough = max(coveredThrough, rows[low - 1].seq) }
        }
        var rewrites: [Rewrite] = []
        var report = CloudPurgeReport()
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
            rewrites.append(Rewrite(row: row, payload: FramePayload.encode(messages.map(\.encoded)), messages: messages))
            report.rows.append(row)
        }
        report.hashes = purgedHashes.count
        return (rewrites, report)
    }

    /// The rewrites are committed: the rows keep what content they still hold.
    package mutating func applied(_ rewrites: [Rewrite]) {
        for rewrite in rewrites {
            guard let held = contentRows[rewrite.row.seq] else { continue }
            let stillHoldsContent = rewrite.messages.contains { if case .content = $0 { true } else { false } }
            contentRows[rewrite.row.seq] = stillHoldsContent ? (held.row, rewrite.messages) : nil
        }
    }
}

/// The purge planners a store keeps between purges, one per app: a purge
/// takes an app's planner, reads it on from where it stopped, and puts it
/// back once its transaction committed.
package final class CloudPurgeReadings: Sendable {
    private let planners = Mutex<[AppID: CloudPurgePlanner]>([:])

    package init() {}

    /// The app's planner for K = `threshold`, to be read on after
    /// `readThrough`, whose hash the caller checks: a new one when there is
    /// none or K changed.
    package func take(_ app: AppID, threshold: Int) -> CloudPurgePlanner {
        let kept = planners.withLock { $0.removeValue(forKey: app) }
        guard let kept, kept.threshold == threshold else { return CloudPurgePlanner(app: app, threshold: threshold) }
        return kept
    }

    package func keep(_ planner: CloudPurgePlanner) {
        planners.withLock { $0[planner.app] = planner }
    }
}
