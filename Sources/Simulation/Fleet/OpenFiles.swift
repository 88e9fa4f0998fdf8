import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The files a run with `--out` keeps open, against the process's limit on
/// open files (`ulimit -n`). Every device's store lives in files there for the
/// whole run, so 10,000 devices need about 30,000 descriptors; past the
/// limit, SQLite could only say that it was "unable to open database file",
/// thousands of stores into setting up.
enum OpenFiles {
    /// A store on disk holds three files open for its life: the database,
    /// its WAL and the WAL's shared-memory index.
    static let perStore = 3
    /// The cloud store, and what a run opens for a moment: snapshots,
    /// backups, a restore's staged store, the standard streams.
    static let besides = 64

    static func needed(devices: Int) -> Int { devices * perStore + besides }

    /// What a run of `devices` stores on disk does about a soft limit of
    /// `soft` open files that may be raised as far as `hard`.
    enum Decision: Equatable {
        case enough
        case raise(to: Int)
        case refuse(SimulationError)
    }

    static func decide(devices: Int, soft: Int, hard: Int) -> Decision {
        let needed = needed(devices: devices)
        if soft >= needed { return .enough }
        if hard >= needed { return .raise(to: needed) }
        let most = max(0, (hard - besides) / perStore)
        return .refuse(SimulationError("""
            --out keeps every device's store open in its own files, \(perStore) each (the database, its WAL and \
            its shared-memory index): \(devices) devices need about \(needed) open files, and this process may \
            open at most \(hard) (ulimit -Hn). Give --out at most \(most) devices here, raise the limit, or leave \
            --out off (the stores then live in memory).
            """))
    }

    /// Makes sure this process may keep the files of `devices` stores open,
    /// raising its soft limit toward the hard one if need be; throws what to
    /// do instead when even the hard limit is too low. Nothing is created
    /// before this passes.
    static func ensure(devices: Int) throws(SimulationError) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        // RLIM_INFINITY is the largest rlim_t.
        func count(_ value: rlim_t) -> Int { value > rlim_t(Int.max) ? Int.max : Int(value) }
        switch decide(devices: devices, soft: count(limit.rlim_cur), hard: count(limit.rlim_max)) {
        case .enough:
            return
        case .raise(let needed):
            limit.rlim_cur = rlim_t(needed)
            guard setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else {
                throw SimulationError("--out needs \(needed) open files for \(devices) devices, and raising this process's limit to that failed (errno \(errno))")
            }
        case .refuse(let error):
            throw error
        }
    }
}
