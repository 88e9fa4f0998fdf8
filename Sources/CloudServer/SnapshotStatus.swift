import Foundation
import Synchronization

/// What `cloud serve --snapshot-every` has done, for `/metrics`
/// (`sightline_snapshot_*`) and the admin status page: the last good
/// snapshot and the schedule. `PeriodicSnapshots` reports to it; a server
/// that takes no periodic snapshots leaves it unconfigured, and then
/// reports no snapshot age (nothing is late that was never due).
public final class SnapshotStatus: Sendable {
    /// The last snapshot written whole.
    public struct Written: Hashable, Sendable {
        /// Seconds since 1970 when it was written, by `SnapshotStatus`'s clock.
        public let time: Double
        public let file: String
        public let logRows: Int64?
    }

    struct State {
        var interval: Int?
        var directory: String?
        var last: Written?
        /// When the schedule began: the age a server reports while it has
        /// written no snapshot and found none.
        var since: Double = 0
    }

    private let state = Mutex(State())
    let metrics: ServerMetrics?
    /// Seconds since 1970 now: the wall clock, unless a test gives another.
    let clock: @Sendable () -> Double

    init(metrics: ServerMetrics?, clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.metrics = metrics
        self.clock = clock
    }

    /// Snapshots are due every `interval` seconds into `directory`. The
    /// newest `cloud-<milliseconds>.snap` already there counts as the last
    /// good snapshot, so that a restarted server reports the age of its
    /// backups and not of its process.
    public func schedule(every interval: Int, into directory: String) {
        let found = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .compactMap { name -> (milliseconds: Int64, name: String)? in
                guard let milliseconds = SnapshotStatus.milliseconds(inName: name) else { return nil }
                return (milliseconds, name)
            }
            .max { $0.milliseconds < $1.milliseconds }
        let now = clock()
        state.withLock { state in
            state.interval = interval
            state.directory = directory
            state.since = now
            if state.last == nil, let found {
                state.last = Written(time: Double(found.milliseconds) / 1000, file: found.name, logRows: nil)
            }
        }
    }

    /// The store time a periodic snapshot's name carries: `cloud-<milliseconds>.snap`.
    static func milliseconds(inName name: String) -> Int64? {
        guard name.hasPrefix("cloud-"), name.hasSuffix(".snap"), name.utf8.count <= 40 else { return nil }
        return Int64(name.dropFirst(6).dropLast(5)).flatMap { $0 >= 0 ? $0 : nil }
    }

    func written(file: String, logRows: Int64) {
        let now = clock()
        state.withLock { $0.last = Written(time: now, file: file, logRows: logRows) }
        metrics?.snapshot(written: true)
    }

    func failed() {
        metrics?.snapshot(written: false)
    }

    func purged(contentMessages count: Int) {
        metrics?.purged(contentMessages: count)
    }

    /// The schedule and the last good snapshot, now.
    public var current: (interval: Int?, directory: String?, last: Written?, age: Double?) {
        let now = clock()
        return state.withLock { state in
            guard let interval = state.interval else { return (nil, nil, state.last, nil) }
            return (interval, state.directory, state.last, max(0, now - (state.last?.time ?? state.since)))
        }
    }
}
