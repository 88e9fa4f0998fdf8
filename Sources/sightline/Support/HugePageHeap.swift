import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Backs the process's heap with transparent huge pages where the kernel
/// offers them only on request (`/sys/kernel/mm/transparent_hugepage/enabled`
/// set to `madvise`, Debian's default). A large simulation touches gigabytes
/// of small allocations in no order (every device is its own SQLite store), so
/// 4 KiB pages cost it a TLB miss on most accesses; 2 MiB pages took 7% off
/// the CPU time of the 10,000-device run (`docs/benchmarks.md`, session 16).
///
/// glibc asks for huge pages itself only when `GLIBC_TUNABLES` says so before
/// the process starts. Instead, all threads share glibc's one sbrk heap (one
/// arena), which grows in steps of at least 64 MiB, and a watcher thread
/// advises each new stretch of it as soon as it appears, before most of it is
/// touched (each stretch then shows as its own `[heap]` line in
/// `/proc/PID/maps`).
enum HugePageHeap {
    static let watchInterval: TimeInterval = 0.02
    /// `M_ARENA_MAX` and `M_TOP_PAD` of glibc's <malloc.h>.
    private static let arenaMax: Int32 = -8
    private static let topPad: Int32 = -2

    /// Starts watching the heap. Call it first thing, once, while the main
    /// thread is the only one: a thread that has allocated keeps its arena.
    /// Does nothing where it cannot.
    static func start() {
        #if os(Linux)
        // Swift's Glibc module leaves out <malloc.h>; mallopt returns 1 on success.
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
        let mallopt = unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
        guard mallopt(arenaMax, 1) == 1, mallopt(topPad, 64 << 20) == 1 else { return }
        let page = UInt(sysconf(Int32(_SC_PAGESIZE)))
        let thread = Thread {
            var advised = UInt(bitPattern: sbrk(0)) & ~(page - 1)
            while true {
                let end = UInt(bitPattern: sbrk(0)) & ~(page - 1)
                if end > advised {
                    // Advice is a hint: a kernel without huge pages leaves the heap as it is.
                    _ = madvise(UnsafeMutableRawPointer(bitPattern: advised), Int(end - advised), MADV_HUGEPAGE)
                    advised = end
                }
                Thread.sleep(forTimeInterval: watchInterval)
            }
        }
        thread.name = "sightline-heap"
        thread.start()
        #endif
    }
}
