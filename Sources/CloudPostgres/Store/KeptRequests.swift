import CloudIndex
import Foundation
import IndexModel

/// What a server remembers between ingest transactions of the content
/// requests its acks made (`AskMemory`), per app, with the state of the app
/// that memory is exact for: the app's log head after the fold that last
/// used it, and K and the agreement.
///
/// Without it every ack checks every wanted hash of the app, which is two
/// statements and a pseudonym per wanted hash. With it an ack checks only
/// the hashes whose wanted state changed since the device's last ack and
/// those its frame names (`IngestCore`), and answers the same.
///
/// The memory is exact only if nothing but the transactions it saw changed
/// the app's projections since. The projections are a function of the log
/// and the settings (a replay of the log equals them), so that holds while
/// the app's log head is the one kept: another server's append moves the
/// head, and a rebuild leaves the rows as they were (a restore makes a new
/// database). A row changed by hand while servers run is outside that
/// model: the fold reads it afresh, but a kept memory does not see it until
/// another server appends or the server restarts, so an ack may ask for a
/// hash it would not (or not for one it would) until then. An ingest
/// transaction therefore takes the
/// memory only after it read the head under the app's lock, and uses it only
/// when the head and the settings match; otherwise it starts from an empty
/// memory, which checks every wanted hash. Before it commits, it keeps the
/// memory it leaves with the head its own append made: a transaction that
/// then fails to commit leaves another head in the database, so the memory
/// is never used.
final class KeptRequests: @unchecked Sendable {
    /// A log head: the app's last log seq and its chain hash.
    struct Head: Equatable {
        let seq: Int64
        let hash: [UInt8]
    }

    private struct Kept {
        let head: Head
        let settings: FoldSettings
        let asks: AskMemory
    }

    // `lock` guards `kept`. A memory is in `kept` or used by one transaction,
    // never both, so no two threads use one at a time.
    private let lock = NSLock()
    private var kept: [AppID: Kept] = [:]

    /// The memory kept for `app`, if it is exact for `head` and `settings`.
    /// It is no longer kept either way: the caller keeps what it leaves.
    func take(app: AppID, head: Head, settings: FoldSettings) -> AskMemory? {
        guard let found = lock.withLock({ kept.removeValue(forKey: app) }) else { return nil }
        return found.head == head && found.settings == settings ? found.asks : nil
    }

    /// The most apps whose memories are kept; past it every memory is
    /// forgotten (each is bounded by `AskMemory`'s own limits).
    static let keptApps = 1 << 12

    /// Keeps `asks` for `app`, exact for the projections once the log head is `head`.
    func keep(_ asks: AskMemory, app: AppID, head: Head, settings: FoldSettings) {
        lock.withLock {
            if kept[app] == nil, kept.count >= KeptRequests.keptApps { kept.removeAll() }
            kept[app] = Kept(head: head, settings: settings, asks: asks)
        }
    }

}
