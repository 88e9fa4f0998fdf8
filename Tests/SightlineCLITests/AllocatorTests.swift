import CAllocator
import Testing

@Suite struct AllocatorTests {
    /// The sightline binary allocates with jemalloc on huge pages, whatever
    /// the link order: the simulator's two threads free each other's memory,
    /// which glibc's arenas serialize (`Sources/CAllocator/allocator.c`).
    /// The tests link the same target, so they check it in their own process.
    @Test func theProcessAllocatesWithJemallocOnHugePages() {
        let version = sightline_allocator_version().map { String(cString: $0) }
        #expect(version?.hasPrefix("5.") == true, "malloc is not jemalloc's: \(version ?? "another allocator answers")")
        #expect(sightline_allocator_huge_pages().map { String(cString: $0) } == "always")
    }
}
