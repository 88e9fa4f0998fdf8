import ByteCoding
import Crypto
import Foundation
import IndexModel
import ScratchDirectory
import Snapshot
import SyncWire
import Testing

/// The snapshot container over content of several chunks: a restore reads
/// and inflates chunks a few at a time on several threads, and must still
/// write them back in order and name the first bad one.
@Suite struct SnapshotFileTests {
    private let testManifest: JSONObject = ["format": .string("sightline-snapshot"), "version": .integer(1), "kind": .string("test")]

    /// Three and a half chunks of text that deflates, from a fixed seed.
    private func content() -> Data {
        let words = ["sunrise", "harbour", "recipe", "potato", "window", "paris", "crisp", "engage"].map { Array($0.utf8) }
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        var bytes: [UInt8] = []
        bytes.reserveCapacity(SnapshotFile.chunkBytes * 7 / 2 + 16)
        while bytes.count < SnapshotFile.chunkBytes * 7 / 2 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            bytes += words[Int(state % UInt64(words.count))]
            bytes.append(state & 0x100 == 0 ? UInt8(ascii: " ") : UInt8(ascii: "\n"))
        }
        return Data(bytes)
    }

    /// Where each chunk's stored bytes begin, read from the length prefixes.
    private func chunkOffsets(_ snapshot: [UInt8]) -> [Int] {
        var offsets: [Int] = []
        var offset = SnapshotFile.headerMagic.count
        while true {
            let length = Int(snapshot[offset]) | Int(snapshot[offset + 1]) << 8 | Int(snapshot[offset + 2]) << 16
                | Int(snapshot[offset + 3]) << 24
            offset += 4
            if length == 0 { return offsets }
            offsets.append(offset)
            offset += length
        }
    }

    @Test func contentOfSeveralChunksComesBackByteForByte() throws {
        let directory = try ScratchDirectory.make("sightline-snapshot-tests")
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("content").path
        let original = content()
        try original.write(to: URL(fileURLWithPath: source))
        for key in [nil, SymmetricKey(size: .bits256)] {
            let snapshot = directory.appendingPathComponent("content.snap").path
            let extracted = directory.appendingPathComponent("extracted").path
            try SnapshotFile.write(source: source, destination: snapshot, manifest: testManifest, key: key)
            let manifest = try SnapshotFile.extract(snapshot, to: extracted, key: key)
            #expect(manifest["chunks"] == .integer(4))
            #expect(FileManager.default.contents(atPath: extracted) == original)
            try FileManager.default.removeItem(atPath: extracted)
        }
    }

    /// Chunks deflated on several threads are written in order, so the file
    /// is the very one a single thread writes, whether the content ends
    /// inside a chunk or exactly at a chunk's end.
    @Test(arguments: [0, 1, 2, 4, 7])
    func writingOnThreadsGivesTheSameFileAsOneThread(halfChunks: Int) throws {
        let directory = try ScratchDirectory.make("sightline-snapshot-tests")
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("content").path
        let original = content().prefix(SnapshotFile.chunkBytes / 2 * halfChunks)
        try original.write(to: URL(fileURLWithPath: source))
        var files: [Data] = []
        for workers in [1, 3] {
            let snapshot = directory.appendingPathComponent("content-\(workers).snap").path
            try SnapshotFile.write(source: source, destination: snapshot, manifest: testManifest, key: nil, workers: workers)
            let manifest = try SnapshotFile.extract(snapshot, to: directory.appendingPathComponent("extracted-\(workers)").path, key: nil)
            #expect(manifest["chunks"] == .integer(Int64((halfChunks + 1) / 2)))
            #expect(FileManager.default.contents(atPath: directory.appendingPathComponent("extracted-\(workers)").path) == original)
            files.append(try Data(contentsOf: URL(fileURLWithPath: snapshot)))
        }
        #expect(files[0] == files[1])
    }

    /// The content, and a snapshot of it in `directory`, as bytes.
    private func snapshotOfContent(in directory: URL, key: SymmetricKey?) throws -> (content: [UInt8], snapshot: [UInt8]) {
        let source = directory.appendingPathComponent("content").path
        let original = [UInt8](content())
        try Data(original).write(to: URL(fileURLWithPath: source))
        let snapshot = directory.appendingPathComponent("content.snap").path
        try SnapshotFile.write(source: source, destination: snapshot, manifest: testManifest, key: key)
        return (original, [UInt8](try #require(FileManager.default.contents(atPath: snapshot))))
    }

    /// Why extracting `altered` (a snapshot's bytes, changed) fails; checks
    /// that nothing is left where it would have been extracted.
    private func refusal(of altered: [UInt8], in directory: URL, key: SymmetricKey?) throws -> SnapshotError {
        let damaged = directory.appendingPathComponent("damaged.snap").path
        try Data(altered).write(to: URL(fileURLWithPath: damaged))
        let extracted = directory.appendingPathComponent("extracted").path
        let error = try #require(throws: SnapshotError.self) {
            try SnapshotFile.extract(damaged, to: extracted, key: key)
        }
        #expect(!FileManager.default.fileExists(atPath: extracted))
        return error
    }

    @Test func aBadChunkAfterGoodOnesIsNamedAndNothingIsLeftBehind() throws {
        let directory = try ScratchDirectory.make("sightline-snapshot-tests")
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = SymmetricKey(size: .bits256)
        var raw = try snapshotOfContent(in: directory, key: key).snapshot
        let offsets = chunkOffsets(raw)
        #expect(offsets.count == 4)
        raw[offsets[2] + 100] ^= 0x20
        let error = try refusal(of: raw, in: directory, key: key)
        #expect(error.code == .wrongKey)
        #expect(error.message.contains("chunk 2 "), "\(error.message)")
    }

    /// A version 2 snapshot's parts from its trailer: everything before the
    /// manifest, the manifest's bytes, and its MAC.
    private func parts(of raw: [UInt8]) -> (before: [UInt8], manifest: [UInt8], mac: [UInt8]) {
        let lengthAt = raw.count - SnapshotFile.trailerMagic.count - 4
        let length = Int(raw[lengthAt]) | Int(raw[lengthAt + 1]) << 8 | Int(raw[lengthAt + 2]) << 16 | Int(raw[lengthAt + 3]) << 24
        let macAt = lengthAt - SnapshotFile.manifestMACBytes
        return (Array(raw[..<(macAt - length)]), Array(raw[(macAt - length)..<macAt]), Array(raw[macAt..<lengthAt]))
    }

    /// The snapshot of `parts` with the manifest `manifest` and the MAC `mac`.
    private func assemble(_ before: [UInt8], manifest: [UInt8], mac: [UInt8]) -> [UInt8] {
        before + manifest + mac + withUnsafeBytes(of: UInt32(manifest.count).littleEndian) { Array($0) } + SnapshotFile.trailerMagic
    }

    /// An encrypted snapshot's manifest says which store and head it holds;
    /// the trailer carries the MAC of its bytes, which a reader with the key
    /// checks before it parses any of them: a changed byte, bytes that are not
    /// even JSON, a MAC taken away or a wrong key refuse the snapshot before
    /// anything is written.
    @Test func anAlteredManifestOfAnEncryptedSnapshotIsRefusedBeforeItIsParsed() throws {
        let directory = try ScratchDirectory.make("sightline-snapshot-tests")
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = SymmetricKey(size: .bits256)
        let raw = try snapshotOfContent(in: directory, key: key).snapshot
        #expect(Array(raw.prefix(8)) == SnapshotFile.headerMagic)
        let (before, manifest, mac) = parts(of: raw)
        #expect(mac.contains { $0 != 0 })
        var changed = manifest
        changed[changed.firstIndex(of: UInt8(ascii: "t"))!] = UInt8(ascii: "T")
        let altered = try refusal(of: assemble(before, manifest: changed, mac: mac), in: directory, key: key)
        #expect(altered.code == .wrongKey && altered.message.contains("manifest"), "\(altered)")
        // Not JSON at all: the MAC refuses it first, so no parser reads a byte of it.
        let garbage = [UInt8](repeating: UInt8(ascii: "{"), count: manifest.count)
        let unread = try refusal(of: assemble(before, manifest: garbage, mac: mac), in: directory, key: key)
        #expect(unread.code == .wrongKey, "\(unread)")
        let stripped = try refusal(of: assemble(before, manifest: manifest, mac: [UInt8](repeating: 0, count: 32)), in: directory, key: key)
        #expect(stripped.code == .malformed && stripped.message.contains("not encrypted"), "\(stripped)")
        let withoutKey = try refusal(of: raw, in: directory, key: nil)
        #expect(withoutKey.code == .keyRequired, "\(withoutKey)")
        let wrongKey = try refusal(of: raw, in: directory, key: SymmetricKey(size: .bits256))
        #expect(wrongKey.code == .wrongKey)
        let extracted = directory.appendingPathComponent("unchanged").path
        _ = try SnapshotFile.extract(directory.appendingPathComponent("content.snap").path, to: extracted, key: key)
        #expect(FileManager.default.fileExists(atPath: extracted), "the snapshot as written still opens")
    }

    /// A snapshot of container version 1, encrypted, as the build before
    /// version 2 wrote it (`Journal/fixtures/device-container-v1-encrypted.*`):
    /// its manifest carries its MAC inside, checked once it is read, and it
    /// still opens with its key and only with it.
    @Test func anEncryptedSnapshotOfContainerVersionOneStillOpensWithItsKey() throws {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Journal/fixtures")
        let snapshot = fixtures.appendingPathComponent("device-container-v1-encrypted.slsnap").path
        let key = try SnapshotFile.key(fromFile: fixtures.appendingPathComponent("device-container-v1-encrypted.key").path)
        let directory = try ScratchDirectory.make("sightline-snapshot-tests")
        defer { try? FileManager.default.removeItem(at: directory) }
        let raw = [UInt8](try #require(FileManager.default.contents(atPath: snapshot)))
        #expect(Array(raw.prefix(8)) == SnapshotFile.versionOneHeader)
        let extracted = directory.appendingPathComponent("store").path
        let manifest = try SnapshotFile.extract(snapshot, to: extracted, key: key)
        #expect(manifest["kind"] == .string("device") && manifest["manifestMAC"] != nil)
        #expect(try SnapshotFile.manifest(at: snapshot, key: key) == manifest)
        let wrongKey = try refusal(of: raw, in: directory, key: SymmetricKey(size: .bits256))
        #expect(wrongKey.code == .wrongKey)
    }

    /// The bytes of the unencrypted snapshot `raw` with its manifest
    /// changed by `change` (and its length in the trailer to match).
    private func withPlainManifest(of raw: [UInt8], _ change: (inout JSONObject) -> Void) throws -> [UInt8] {
        let (before, bytes, mac) = parts(of: raw)
        guard case .object(var manifest) = try JSONReader.parse(bytes) else {
            throw SnapshotError(.malformed, "the test snapshot has no manifest")
        }
        change(&manifest)
        return assemble(before, manifest: Array(JSONWriter.pretty(.object(manifest)).utf8), mac: mac)
    }

    /// A plaintext manifest is outside bytes: a negative chunk count or
    /// length is malformed, not a trap when the counts are compared.
    @Test(arguments: [("chunks", Int64(-1)), ("contentBytes", Int64.min)])
    func aNegativeCountInTheManifestIsMalformed(member: String, value: Int64) throws {
        let directory = try ScratchDirectory.make("sightline-snapshot-tests")
        defer { try? FileManager.default.removeItem(at: directory) }
        let raw = try snapshotOfContent(in: directory, key: nil).snapshot
        let altered = try withPlainManifest(of: raw) { $0[member] = .integer(value) }
        let error = try refusal(of: altered, in: directory, key: nil)
        #expect(error.code == .malformed && error.message.contains("negative"), "\(error)")
    }

    /// Each chunk is inflated into no more than the manifest's contentBytes
    /// leave for it, so a manifest that understates the content names the
    /// first chunk that holds more.
    @Test(arguments: [(-1, 3), (-(SnapshotFile.chunkBytes * 3 / 2), 2)])
    func aChunkHoldingMoreThanTheManifestLeavesIsRefused(shortfall: Int, chunk: Int) throws {
        let directory = try ScratchDirectory.make("sightline-snapshot-tests")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (original, raw) = try snapshotOfContent(in: directory, key: nil)
        let understated = original.count + shortfall
        let altered = try withPlainManifest(of: raw) { $0["contentBytes"] = .integer(Int64(understated)) }
        let error = try refusal(of: altered, in: directory, key: nil)
        let left = max(0, understated - chunk * SnapshotFile.chunkBytes)
        #expect(error.code == .corrupt)
        #expect(error.message == "chunk \(chunk) inflates to more than the \(left) bytes the manifest's contentBytes leave for it")
    }

    @Test func aShortChunkBeforeTheLastIsRefused() throws {
        // Chunks are written at k × chunkBytes as they are inflated, so a
        // chunk shorter than that before the last would leave a hole.
        let directory = try ScratchDirectory.make("sightline-snapshot-tests")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (original, raw) = try snapshotOfContent(in: directory, key: nil)
        let offsets = chunkOffsets(raw)
        #expect(offsets.count == 4)
        func le32(_ value: Int) -> [UInt8] { withUnsafeBytes(of: UInt32(value).littleEndian) { Array($0) } }
        // Chunk 1 holds 1,000 bytes instead of 4 MiB; the other chunks, the
        // end marker and the manifest stay as they were.
        let short = Deflate.compress(Array(original[SnapshotFile.chunkBytes..<(SnapshotFile.chunkBytes + 1000)]), level: 1)
        let altered = Array(raw[..<(offsets[1] - 4)]) + le32(short.count) + short + Array(raw[(offsets[2] - 4)...])
        let error = try refusal(of: altered, in: directory, key: nil)
        #expect(error.code == .malformed)
        #expect(error.message == "chunk 1 holds fewer than \(SnapshotFile.chunkBytes) bytes and is not the last")
    }
}
