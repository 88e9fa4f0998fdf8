import CloudCore
import CloudSQLite
import Foundation
import IndexModel

/// What a server keeps of each app's last fold between ingest transactions,
/// with the state of the app it is exact for: the fold's memory of the
/// content requests its acks made (`AskMemory`) and the rows it loaded and
/// wrote (`WorkingSet`), the app's log head after that fold's append, and K
/// and the agreement.
///
/// Without it every ack checks every wanted hash of the app (two statements
/// and a pseudonym per wanted hash), and every frame reads every row of the
/// hashes it names. With it an ack checks only the hashes whose wanted state
/// changed since the device's last ack and those its frame names
/// (`IngestCore`), and a frame reads only the rows it has not met; both
/// answer the same.
///
/// It is exact only if nothing but the transactions it saw changed the
/// app's projections since. The projections are a function of the log and
/// the settings (a replay of the log equals them), so that holds while the
/// app's log head is the one kept: another server's append moves the head;
/// a rebuild leaves the rows as they were; a restore that leaves the same
/// head holds the same log. An ingest transaction therefore takes what is
/// kept and reads the head under the app's lock, and uses it only when the
/// head and the settings match; otherwise it starts afresh, reading every
/// row it needs. Before it commits it keeps what it leaves, with the head
/// its own append made: a transaction that then fails to commit leaves
/// another head in the database, so it is never used. A row someone edits
/// by hand while servers run is not seen until another server appends or
/// the server restarts.
final class KeptFold: @unchecked Sendable {
    /// A log head: the app's last log seq and its chain hash.
    struct Head: Equatable {
        let seq: Int64
        let hash: [UInt8]
    }

    struct Kept {
        let head: Head
        let settings: FoldSettings
        let asks: AskMemory
        /// Nil when there were more than `keptRows`.
        let rows: WorkingSet?

        /// Whether this is exact for an app whose head and settings are these.
        func isExact(head: Head, settings: FoldSettings) -> Bool {
            self.head == head && self.settings == settings
        }
    }

    // `lock` guards `kept`. What is kept for an app is in `kept` or used by
    // one transaction, never both, so no two threads use it at a time.
    private let lock = NSLock()
    private var kept: [AppID: Kept] = [:]

    /// The most apps kept; past it everything is forgotten (each app's
    /// requests are bounded by `AskMemory`'s limits, its rows by `keptRows`).
    static let keptApps = 1 << 12
    /// The most rows kept for one app: past it the rows are not kept.
    static let keptRows = 1 << 18

    /// What is kept for `app`, which is no longer kept: the caller keeps
    /// what it leaves, once it knows the head its own append made.
    func take(app: AppID) -> Kept? {
        lock.withLock { kept.removeValue(forKey: app) }
    }

    /// Keeps `asks` and `rows` for `app`, exact for the projections once the
    /// log head is `head`.
    func keep(_ asks: AskMemory, rows: WorkingSet?, app: AppID, head: Head, settings: FoldSettings) {
        let rows = rows.flatMap { $0.heldRows <= KeptFold.keptRows ? $0 : nil }
        lock.withLock {
            if kept[app] == nil, kept.count >= KeptFold.keptApps { kept.removeAll() }
            kept[app] = Kept(head: head, settings: settings, asks: asks, rows: rows)
        }
    }
}
