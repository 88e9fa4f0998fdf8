import ByteCoding
import Crypto
import Foundation
import IndexModel
import Threads

extension SnapshotFile {
    /// Writes `source` (a database file) as a snapshot to `destination`: to a
    /// temporary file beside it, fsynced, renamed into place, and the directory
    /// fsynced, so a crash leaves the old file or the whole new one. `manifest`
    /// gets the content fields (`contentBytes`, `contentSHA256`, `chunkBytes`,
    /// `compression`, `encryption`) added; the manifest as written is returned.
    /// A source of more than one chunk, with more than one of `workers`, is
    /// deflated (and sealed) on that many threads while one reads and hashes
    /// it and this one writes the chunks in order; otherwise this thread does
    /// it all.
    @discardableResult
    public static func write(source: String, destination: String, manifest: JSONObject,
                             key: SymmetricKey?, level: Int32 = 1, workers: Int = defaultWorkers) throws(SnapshotError) -> JSONObject {
        guard let input = FileHandle(forReadingAtPath: source) else {
            throw SnapshotError(.io, "cannot read \(source)")
        }
        defer { try? input.close() }
        return try write(destination: destination, manifest: manifest, key: key, level: level) { output, encoding in
            let size = Int64(clamping: try input.seekToEnd())
            return workers > 1 && size > Int64(chunkBytes)
                ? try writeChunksOnThreads(from: input.fileDescriptor, size: size, to: output, encoding: encoding, workers: workers)
                : try writeChunks(from: input.fileDescriptor, size: size, to: output, encoding: encoding)
        }
    }

    /// Writes `content` (a database file's bytes) as a snapshot to
    /// `destination`, as `write(source:destination:manifest:key:level:workers:)`
    /// writes a file's, on this thread.
    @discardableResult
    public static func write(content: [UInt8], destination: String, manifest: JSONObject,
                             key: SymmetricKey?, level: Int32 = 1) throws(SnapshotError) -> JSONObject {
        try write(destination: destination, manifest: manifest, key: key, level: level) { output, encoding in
            var hasher = SHA256()
            var index: UInt64 = 0
            for start in stride(from: 0, to: content.count, by: chunkBytes) {
                let plain = content.count <= chunkBytes ? content : Array(content[start..<min(start + chunkBytes, content.count)])
                hasher.update(data: plain)
                try writeChunk(try encoding.encode(plain, index: index), to: output)
                index += 1
            }
            return WrittenContent(bytes: Int64(content.count), digest: Array(hasher.finalize()), chunks: index)
        }
    }

    /// The container around what `writeContent` writes after the header:
    /// the temporary file, the manifest and trailer, the syncs and the rename.
    static func write(destination: String, manifest: JSONObject, key: SymmetricKey?, level: Int32,
                              content writeContent: (FileHandle, ChunkEncoding) throws -> WrittenContent) throws(SnapshotError)
        -> JSONObject {
        let temporary = destination + ".writing-\(ProcessInfo.processInfo.processIdentifier)"
        do {
            guard StoreFiles.createPrivate(temporary),
                  let output = FileHandle(forWritingAtPath: temporary) else {
                throw SnapshotError(.io, "cannot create \(temporary)")
            }
            let nonceBase = key.map { _ in Array(AES.GCM.Nonce()) }
            let encoding = ChunkEncoding(level: level, key: ChunkKey(key: key, nonceBase: nonceBase, header: headerMagic))
            var complete = manifest
            do {
                defer { try? output.close() }
                try output.write(contentsOf: headerMagic)
                let content = try writeContent(output, encoding)
                complete["contentBytes"] = .integer(content.bytes)
                complete["contentSHA256"] = .string(Hex.encode(content.digest))
                complete["chunkBytes"] = .integer(Int64(chunkBytes))
                complete["chunks"] = .integer(Int64(content.chunks))
                complete["compression"] = .string("deflate")
                complete["encryption"] = nonceBase.map {
                    .object(["algorithm": .string("AES-256-GCM"), "nonce": .string(Data($0).base64EncodedString())])
                } ?? .null
                let manifestBytes = Array(JSONWriter.pretty(.object(complete)).utf8)
                let mac = key.map { manifestMAC(of: manifestBytes, key: $0) } ?? [UInt8](repeating: 0, count: manifestMACBytes)
                try output.write(contentsOf: le32(0) + manifestBytes + mac + le32(manifestBytes.count) + trailerMagic)
                try output.synchronize()
            }
            guard rename(temporary, destination) == 0 else {
                throw SnapshotError(.io, "cannot rename the snapshot into \(destination) (errno \(errno))")
            }
            syncDirectory(of: destination)
            return complete
        } catch let error as SnapshotError {
            try? FileManager.default.removeItem(atPath: temporary)
            throw error
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw SnapshotError(.io, "cannot write the snapshot \(destination): \(error)")
        }
    }

    /// What the chunks of a written snapshot hold, for its manifest.
    struct WrittenContent: Sendable {
        var bytes: Int64
        var digest: [UInt8]
        var chunks: UInt64
    }

    /// How each chunk is stored: deflated at `level`, then sealed when there is a key.
    struct ChunkEncoding: Sendable {
        let level: Int32
        let key: ChunkKey

        func encode(_ plain: [UInt8], index: UInt64) throws(SnapshotError) -> [UInt8] {
            let deflated = Deflate.compress(plain, level: level)
            guard let sealing = key.key, let nonceBase = key.nonceBase else { return deflated }
            do {
                return try sealChunk(deflated, key: sealing, nonceBase: nonceBase, header: key.header, index: index)
            } catch {
                throw SnapshotError(.io, "cannot seal chunk \(index): \(error)")
            }
        }
    }

    /// Reads the source's `size` bytes in chunks, in order, hashing what it
    /// reads. Each chunk is allocated at its own size, so the one chunk of a
    /// small store costs no 4 MiB buffer.
    struct SourceChunks {
        let descriptor: Int32
        let size: Int64
        private var hasher = SHA256()
        private var offset: Int64 = 0
        private var index: UInt64 = 0

        init(descriptor: Int32, size: Int64) {
            self.descriptor = descriptor
            self.size = size
        }

        /// The next chunk and its number, nil at the end of the source.
        mutating func next() throws(SnapshotError) -> (UInt64, [UInt8])? {
            guard offset < size else { return nil }
            let wanted = Int(min(Int64(chunkBytes), size - offset))
            var failure: Int32 = 0
            let start = offset
            let chunk = [UInt8](unsafeUninitializedCapacity: wanted) { buffer, count in
                count = 0
                while count < wanted, let base = buffer.baseAddress {
                    let result = pread(descriptor, base + count, wanted - count, off_t(start) + off_t(count))
                    if result < 0 {
                        if errno == EINTR { continue }
                        failure = errno
                        return
                    }
                    if result == 0 { return }
                    count += result
                }
            }
            guard failure == 0 else { throw SnapshotError(.io, "cannot read the snapshot's source (errno \(failure))") }
            guard chunk.count == wanted else {
                throw SnapshotError(.io, "the snapshot's source ended at byte \(start + Int64(chunk.count)), before its \(size) bytes")
            }
            hasher.update(data: chunk)
            offset += Int64(wanted)
            defer { index += 1 }
            return (index, chunk)
        }

        /// What was read, once `next()` has returned nil.
        var content: WrittenContent {
            WrittenContent(bytes: offset, digest: Array(hasher.finalize()), chunks: index)
        }
    }

    static func writeChunk(_ stored: [UInt8], to output: FileHandle) throws(SnapshotError) {
        do {
            try output.write(contentsOf: le32(stored.count))
            try output.write(contentsOf: stored)
        } catch {
            throw SnapshotError(.io, "cannot write the snapshot: \(error)")
        }
    }

    /// Every chunk on this thread: read, hash, encode, write.
    static func writeChunks(from descriptor: Int32, size: Int64, to output: FileHandle,
                                    encoding: ChunkEncoding) throws(SnapshotError) -> WrittenContent {
        var source = SourceChunks(descriptor: descriptor, size: size)
        while let (index, plain) = try source.next() {
            try writeChunk(try encoding.encode(plain, index: index), to: output)
        }
        return source.content
    }

    /// What the reading thread hands an encoding worker, and what a worker
    /// hands on: a chunk (as read, then as stored), or the content once every
    /// chunk was read, or why reading or encoding stopped.
    enum WritingChunk: Sendable {
        case chunk(UInt64, [UInt8])
        case end(WrittenContent)
        case failure(SnapshotError)
    }

    /// One thread reads and hashes the chunks, `workers` encode them, and
    /// this one writes them in order (`Parallel.pipeline`).
    static func writeChunksOnThreads(from descriptor: Int32, size: Int64, to output: FileHandle, encoding: ChunkEncoding,
                                             workers: Int) throws(SnapshotError) -> WrittenContent {
        var content: WrittenContent?
        try Parallel.pipeline(workers: workers, produce: { hand in
            var source = SourceChunks(descriptor: descriptor, size: size)
            do throws(SnapshotError) {
                while let (index, plain) = try source.next() {
                    guard hand(.chunk(index, plain)) else { return }
                }
                _ = hand(.end(source.content))
            } catch {
                _ = hand(.failure(error))
            }
        }, transform: { (item: WritingChunk) -> WritingChunk in
            guard case .chunk(let index, let plain) = item else { return item }
            do throws(SnapshotError) {
                return .chunk(index, try encoding.encode(plain, index: index))
            } catch {
                return .failure(error)
            }
        }, consume: { (item: WritingChunk) throws(SnapshotError) -> Bool in
            switch item {
            case .chunk(_, let stored):
                try writeChunk(stored, to: output)
                return true
            case .end(let written):
                content = written
                return false
            case .failure(let error):
                throw error
            }
        })
        guard let content else { throw SnapshotError(.io, "the snapshot's chunks stopped without an end") }
        return content
    }
}
