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
/// the process starts. Instead a watcher thread advises the heap's memory as
/// it appears, before most of it is touched:
/// - the sbrk heap (glibc's main arena, which the process's main thread
///   uses), which grows in steps of at least 64 MiB;
/// - each heap of glibc's other arenas: a thread that allocates gets an arena
///   of its own, whose heaps are mappings of 64 MiB reserved at a 64 MiB
///   boundary, made readable as they fill (`/proc/self/maps` shows the used
///   part and the reserved rest as two lines). The whole reservation is
///   advised once.
///
/// Each thread keeping its own arena matters as much as the huge pages: with
/// every thread on one arena (session 16's way of getting them), the event
/// loop and the call lane took turns on its lock for each allocation, and the
/// 10,000-device run spent 4 s of CPU waking each other and more waiting
/// (`docs/benchmarks.md`, session 18).
enum HugePageHeap {
    static let watchInterval: TimeInterval = 0.02
    /// `M_TOP_PAD` of glibc's <malloc.h>.
    private static let topPad: Int32 = -2
    /// glibc's `HEAP_MAX_SIZE` on 64-bit systems: the size and alignment of
    /// a non-main arena's heap.
    static let arenaHeapBytes: UInt = 64 << 20
    /// How much the process grows between two reads of its maps.
    static let scanGrowth = 8 << 20

    /// Starts watching the heap. Call it first thing, once. Does nothing
    /// where it cannot.
    static func start() {
        #if os(Linux)
        // Swift's Glibc module leaves out <malloc.h>; mallopt returns 1 on success.
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
        let mallopt = unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
        guard mallopt(topPad, 64 << 20) == 1 else { return }
        let page = UInt(sysconf(Int32(_SC_PAGESIZE)))
        let thread = Thread {
            var advised = UInt(bitPattern: sbrk(0)) & ~(page - 1)
            // Only heaps still mapped are remembered: glibc unmaps a heap
            // that empties, and may map a new one at the same place.
            var advisedHeaps = Set<UInt>()
            var scannedAt = -scanGrowth
            while true {
                let end = UInt(bitPattern: sbrk(0)) & ~(page - 1)
                if end > advised {
                    // Advice is a hint: a kernel without huge pages leaves the heap as it is.
                    _ = madvise(UnsafeMutableRawPointer(bitPattern: advised), Int(end - advised), MADV_HUGEPAGE)
                    advised = end
                }
                // A new arena heap comes with growth: the maps (hundreds of
                // lines) are read only after the process grew by a few MiB.
                let resident = residentBytes()
                if resident < scannedAt {
                    scannedAt = resident
                } else if resident >= scannedAt + scanGrowth {
                    scannedAt = resident
                    let heaps = Set(arenaHeaps())
                    for heap in heaps.subtracting(advisedHeaps) {
                        _ = madvise(UnsafeMutableRawPointer(bitPattern: heap), Int(arenaHeapBytes), MADV_HUGEPAGE)
                    }
                    advisedHeaps = heaps
                }
                Thread.sleep(forTimeInterval: watchInterval)
            }
        }
        thread.name = "sightline-heap"
        thread.start()
        #endif
    }

    /// The process's resident memory, from `/proc/self/statm` (0 when unreadable).
    static func residentBytes() -> Int {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = statm.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// The starts of the anonymous, writable mappings in `/proc/self/maps`
    /// that begin at a multiple of `arenaHeapBytes`: glibc's arena heaps. A
    /// thread stack or another mapping that happens to start there is advised
    /// too, which costs it nothing it does not touch.
    static func arenaHeaps() -> [UInt] {
        guard let maps = try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8) else { return [] }
        return arenaHeaps(inMaps: maps)
    }

    /// `arenaHeaps()` of the text of a maps file.
    static func arenaHeaps(inMaps maps: String) -> [UInt] {
        var starts: [UInt] = []
        for line in maps.split(separator: "\n") {
            // "start-end perms offset dev inode [path]": anonymous mappings have no path.
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count == 5, fields[1].hasPrefix("rw"),
                  let dash = fields[0].firstIndex(of: "-"),
                  let start = UInt(fields[0][..<dash], radix: 16),
                  start % arenaHeapBytes == 0 else { continue }
            starts.append(start)
        }
        return starts
    }
}
