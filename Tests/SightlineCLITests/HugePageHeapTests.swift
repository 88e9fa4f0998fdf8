import Testing
@testable import sightline

@Suite struct HugePageHeapTests {
    /// The watcher advises glibc's arena heaps: anonymous, writable mappings
    /// starting at a multiple of 64 MiB. Files, read-only mappings and
    /// unaligned ones are left alone.
    @Test func arenaHeapsAreTheAlignedAnonymousWritableMappings() {
        let maps = """
            55d0c0a00000-55d0c0a21000 r--p 00000000 fd:01 1234                       /usr/bin/sightline
            55d0c2e00000-55d0c6e00000 rw-p 00000000 00:00 0                          [heap]
            7f3a40000000-7f3a42a00000 rw-p 00000000 00:00 0 
            7f3a42a00000-7f3a44000000 ---p 00000000 00:00 0 
            7f3a48000000-7f3a48021000 r--p 00000000 00:00 0 
            7f3a4c000000-7f3a4c200000 rw-p 00000000 fd:01 99                         /dev/shm/cloud.sqlite-shm
            7f3a4c201000-7f3a4c400000 rw-p 00000000 00:00 0 
            7f3a50000000-7f3a54000000 rw-p 00000000 00:00 0
            """
        #expect(HugePageHeap.arenaHeaps(inMaps: maps) == [0x7f3a_4000_0000, 0x7f3a_5000_0000])
    }
}
