import CloudCore
import Foundation
import NIOPosix
import Synchronization

/// What `/metrics` measures when it is asked, beside the event counters of
/// `ServerMetrics`: the build, the process, the periodic snapshots, the
/// store's sizes per app and its connection pool (`docs/CLOUD.md`,
/// "Metrics").
///
/// The store is read through `StoreFigures`, with indexed counts only and
/// a deadline; when it cannot be read in time, `sightline_store_up` is 0
/// and the per-app families are left out, and the rest of the scrape is
/// still served.
struct ScrapeMetrics: Sendable {
    let cloud: any CloudService
    let build: BuildInfo
    let snapshots: SnapshotStatus
    let figures: StoreFigures

    func text(registry: String) async -> String {
        var out = Exposition()
        out.family("sightline_build_info", .gauge, "The build serving: its backend and the formats it reads and writes. Always 1.",
                   [(build.labels, 1)])
        let started = ContinuousClock.now
        let apps = await figures.read(cloud)
        let took = ContinuousClock.now - started
        let pool = cloud.connectionPoolUse
        out.family("sightline_store_up", .gauge, "1 when the store answered this scrape's reads in time, 0 when it did not.",
                   [([], apps == nil ? 0 : 1)])
        out.family("sightline_store_scrape_duration_seconds", .gauge, "How long this scrape's reads of the store took.",
                   [([], took.seconds)])
        out.family("sightline_threshold", .gauge, "K: live votes from distinct devices before a hash's content is asked for and public.",
                   [([], Double(cloud.threshold))])
        out.family("sightline_content_agreement", .gauge, "Live voters that must offer identical content before it is public.",
                   [([], Double(cloud.agreement))])
        if let pool {
            out.family("sightline_db_pool_connections", .gauge, "The database pool's connections, lent to a request or idle.",
                       [([("state", "in_use")], Double(pool.inUse)), ([("state", "idle")], Double(pool.idle))])
            out.family("sightline_db_pool_max_connections", .gauge, "The most connections the database pool opens.",
                       [([], Double(pool.maximum))])
        }
        if let apps {
            out.family("sightline_apps", .gauge, "Apps registered.", [([], Double(apps.count))])
            out.family("sightline_log_rows", .gauge, "Rows of each app's cloud log.",
                       apps.map { ([("app", $0.app.rawValue)], Double($0.logRows)) })
            out.family("sightline_public_items", .gauge, "Entries in each app's public index.",
                       apps.map { ([("app", $0.app.rawValue)], Double($0.publicItems)) })
            out.family("sightline_enrolled_devices", .gauge, "Devices enrolled in each app.",
                       apps.map { ([("app", $0.app.rawValue)], Double($0.devices)) })
        }
        let snapshot = snapshots.current
        if let interval = snapshot.interval, let age = snapshot.age {
            out.family("sightline_snapshot_interval_seconds", .gauge, "How often a periodic backup snapshot is due.",
                       [([], Double(interval))])
            out.family("sightline_snapshot_age_seconds", .gauge,
                       "Seconds since the last good snapshot, or since the server started when it has none.", [([], age)])
            out.family("sightline_snapshot_last_success_timestamp_seconds", .gauge,
                       "When the last good snapshot was written, in seconds since 1970; 0 before any.",
                       [([], snapshot.last?.time ?? 0)])
        }
        let process = ProcessStats.read()
        out.family("process_cpu_seconds_total", .counter, "User and system CPU time spent, in seconds.", process.cpuSeconds.map { [([], $0)] } ?? [])
        out.family("process_resident_memory_bytes", .gauge, "Resident memory size in bytes.", process.residentBytes.map { [([], $0)] } ?? [])
        out.family("process_virtual_memory_bytes", .gauge, "Virtual memory size in bytes.", process.virtualBytes.map { [([], $0)] } ?? [])
        out.family("process_start_time_seconds", .gauge, "When the process started, in seconds since 1970.",
                   process.startTime.map { [([], $0)] } ?? [])
        out.family("process_open_fds", .gauge, "Open file descriptors.", process.openFiles.map { [([], $0)] } ?? [])
        out.family("process_max_fds", .gauge, "The most file descriptors the process may open.", process.maximumFiles.map { [([], $0)] } ?? [])
        return registry + out.text
    }
}

/// The store's per-app figures for a scrape or the status page, read on
/// NIO's blocking pool within a deadline. A store that is locked or slow,
/// or a blocking pool busy with frames waiting for it, must not hold
/// `/metrics` (a scrape that times out is a target down, and the store
/// being stuck is exactly when an operator needs the rest): past the
/// deadline the answer is nil, and the read goes on alone. While it does,
/// no other read is started, so stuck scrapes do not pile up on the pool.
final class StoreFigures: Sendable {
    let deadline: Duration
    private let reading = Mutex(false)

    init(deadline: Duration = .seconds(2)) {
        self.deadline = deadline
    }

    func read(_ cloud: any CloudService) async -> [AppFigures]? {
        let started = reading.withLock { reading in
            defer { reading = true }
            return !reading
        }
        guard started else { return nil }
        let answer = Answer()
        return await withCheckedContinuation { (continuation: CheckedContinuation<[AppFigures]?, Never>) in
            answer.set(continuation)
            Task { [self] in
                let figures = try? await NIOThreadPool.singleton.runIfActive {
                    Result { () throws(CloudError) in try cloud.appFigures() }
                }.get()
                reading.withLock { $0 = false }
                answer.resume(with: figures)
            }
            Task { [deadline] in
                try? await Task.sleep(for: deadline)
                answer.resume(with: nil)
            }
        }
    }

    /// A continuation resumed once, by whichever comes first.
    private final class Answer: Sendable {
        private let continuation = Mutex<CheckedContinuation<[AppFigures]?, Never>?>(nil)

        func set(_ continuation: CheckedContinuation<[AppFigures]?, Never>) {
            self.continuation.withLock { $0 = continuation }
        }

        func resume(with figures: [AppFigures]?) {
            continuation.withLock { continuation in
                continuation?.resume(returning: figures)
                continuation = nil
            }
        }
    }
}

/// What the served build is, for `sightline_build_info` and the status page.
public struct BuildInfo: Sendable {
    /// What `sightline --version` prints.
    public var version: String
    /// The labels of `sightline_build_info`.
    public var labels: [(String, String)]

    public init(version: String, labels: [(String, String)]) {
        self.version = version
        self.labels = labels
    }
}

/// Prometheus's text exposition format (version 0.0.4), for families made
/// at scrape time: `# HELP`, `# TYPE`, then one line per sample.
struct Exposition {
    enum Kind: String {
        case counter, gauge
    }

    private(set) var text = ""

    /// A family with its samples; one with none is left out whole.
    mutating func family(_ name: String, _ kind: Kind, _ help: String, _ samples: [(labels: [(String, String)], value: Double)]) {
        guard !samples.isEmpty else { return }
        text += "# HELP \(name) \(help.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n"))\n"
        text += "# TYPE \(name) \(kind.rawValue)\n"
        for sample in samples {
            text += name
            if !sample.labels.isEmpty {
                text += "{" + sample.labels.map { "\($0.0)=\"\(Exposition.escape($0.1))\"" }.joined(separator: ",") + "}"
            }
            text += " \(Exposition.number(sample.value))\n"
        }
    }

    /// A label value with backslash, double quote and line feed escaped.
    static func escape(_ value: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(value.utf8.count)
        for character in value.unicodeScalars {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }

    static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}
