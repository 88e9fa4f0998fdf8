import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The process's own figures, read from Linux's `/proc` at each scrape,
/// under the names Prometheus's process collectors use (`process_*`).
/// A file that cannot be read, or reads other than Linux writes it, leaves
/// its figures out; nothing here traps.
struct ProcessStats: Equatable {
    var cpuSeconds: Double?
    var residentBytes: Double?
    var virtualBytes: Double?
    var startTime: Double?
    var openFiles: Double?
    var maximumFiles: Double?

    static func read() -> ProcessStats {
        var stats = ProcessStats()
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let pageSize = Double(sysconf(Int32(_SC_PAGESIZE)))
        if let line = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
           let fields = ProcessStats.fields(ofStat: line), ticks > 0, pageSize > 0 {
            stats = ProcessStats(stat: fields, ticks: ticks, pageSize: pageSize,
                                 bootTime: (try? String(contentsOfFile: "/proc/stat", encoding: .utf8)).flatMap(ProcessStats.bootTime))
        }
        if let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            stats.openFiles = Double(entries.count)
        }
        var limit = rlimit()
        if getrlimit(RLIMIT_NOFILE_VALUE, &limit) == 0, limit.rlim_cur != rlim_t.max {
            stats.maximumFiles = Double(limit.rlim_cur)
        }
        return stats
    }

    /// The fields of `/proc/self/stat` after the command name, which is in
    /// parentheses and may itself hold spaces and parentheses: the state is
    /// the first.
    static func fields(ofStat line: String) -> [Substring]? {
        guard let close = line.lastIndex(of: ")") else { return nil }
        let fields = line[line.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true)
        return fields.count >= 22 ? fields : nil
    }

    /// From the fields after the command name (`proc(5)`: utime and stime
    /// in clock ticks, starttime in ticks after boot, vsize in bytes, rss in pages).
    init(stat fields: [Substring], ticks: Double, pageSize: Double, bootTime: Double?) {
        func number(_ index: Int) -> Double? {
            index < fields.count ? Double(fields[index].trimmingCharacters(in: .whitespacesAndNewlines)) : nil
        }
        if let user = number(11), let system = number(12) { cpuSeconds = (user + system) / ticks }
        if let started = number(19), let bootTime { startTime = bootTime + started / ticks }
        virtualBytes = number(20)
        residentBytes = number(21).map { $0 * pageSize }
    }

    init() {}

    /// `btime` of `/proc/stat`: when the machine booted, in seconds since 1970.
    static func bootTime(_ text: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix("btime ") }.flatMap { Double($0.dropFirst(6)) }
    }
}

#if canImport(Glibc)
/// Glibc imports `RLIMIT_NOFILE` as an enum case in some versions and a constant in others.
private let RLIMIT_NOFILE_VALUE = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
#endif
