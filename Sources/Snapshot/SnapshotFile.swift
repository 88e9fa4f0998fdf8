import ByteCoding
import Crypto
import Foundation
import IndexModel
import Threads

/// The snapshot container (`Journal/FORMAT.md`, "Snapshot files"): a database
/// file cut into chunks, each deflated and optionally sealed with AES-256-GCM,
/// then a JSON manifest that says what the content is and how to check it.
///
/// The manifest comes last because the content's length and SHA-256 are known
/// only once every chunk is written; a reader starts from the trailer.
///
/// Version 2 (written) follows an encrypted snapshot's manifest with the
/// HMAC of its bytes as stored, so a reader with the key authenticates the
/// manifest before it parses a byte of it; version 1 (read) carried the MAC
/// inside the manifest, which had to be parsed first.
public enum SnapshotFile {
    public static let headerMagic: [UInt8] = Array("SLSNAP".utf8) + [0, 2]
    /// The header of container version 1, which this build reads.
    public static let versionOneHeader: [UInt8] = Array("SLSNAP".utf8) + [0, 1]
    public static let trailerMagic: [UInt8] = Array("SLSNEND1".utf8)
    /// The manifest's MAC in a version 2 trailer (32 zero bytes when the
    /// snapshot is not encrypted).
    public static let manifestMACBytes = 32
    public static let chunkBytes = 4 * 1024 * 1024
    /// Read once: Foundation reads the cgroup's CPU quota and cpuset files
    /// each time it is asked, a noticeable share of each small snapshot the
    /// simulator takes.
    static let processors = ProcessInfo.processInfo.activeProcessorCount
    /// Threads that deflate chunks in `write` by default: one per core.
    public static let defaultWorkers = max(2, processors)
    /// A sealed chunk is at most its deflate bound plus the GCM tag.
    static let maximumSealedChunk = chunkBytes + chunkBytes / 100 + 4096
    static let maximumManifestBytes = 16 * 1024 * 1024

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
    private static func write(destination: String, manifest: JSONObject, key: SymmetricKey?, level: Int32,
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
    private struct WrittenContent: Sendable {
        var bytes: Int64
        var digest: [UInt8]
        var chunks: UInt64
    }

    /// How each chunk is stored: deflated at `level`, then sealed when there is a key.
    private struct ChunkEncoding: Sendable {
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
    private struct SourceChunks {
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

    private static func writeChunk(_ stored: [UInt8], to output: FileHandle) throws(SnapshotError) {
        do {
            try output.write(contentsOf: le32(stored.count))
            try output.write(contentsOf: stored)
        } catch {
            throw SnapshotError(.io, "cannot write the snapshot: \(error)")
        }
    }

    /// Every chunk on this thread: read, hash, encode, write.
    private static func writeChunks(from descriptor: Int32, size: Int64, to output: FileHandle,
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
    private enum WritingChunk: Sendable {
        case chunk(UInt64, [UInt8])
        case end(WrittenContent)
        case failure(SnapshotError)
    }

    /// One thread reads and hashes the chunks, `workers` encode them, and
    /// this one writes them in order (`Parallel.pipeline`).
    private static func writeChunksOnThreads(from descriptor: Int32, size: Int64, to output: FileHandle, encoding: ChunkEncoding,
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

    /// Reads a snapshot's manifest without its content. With `key`, an
    /// encrypted snapshot's manifest is authenticated before it is parsed
    /// (version 2; a version 1 manifest carries its MAC inside, checked once
    /// it is read). Without one, an encrypted snapshot's manifest is read
    /// unauthenticated, for inspection.
    public static func manifest(at path: String, key: SymmetricKey? = nil) throws(SnapshotError) -> JSONObject {
        try manifest(of: try layout(path), key: key)
    }

    /// The manifest `layout` holds, authenticated first when there is a key.
    private static func manifest(of layout: Layout, key: SymmetricKey?) throws(SnapshotError) -> JSONObject {
        if let mac = layout.manifestMAC {
            let encrypted = mac.contains { $0 != 0 }
            if let key {
                guard encrypted else { throw SnapshotError(.malformed, "a key was given but the snapshot is not encrypted") }
                let expected = manifestMAC(of: layout.manifestBytes, key: key)
                guard zip(mac, expected).reduce(UInt8(0), { $0 | ($1.0 ^ $1.1) }) == 0 else {
                    throw SnapshotError(.wrongKey, "the manifest is not authenticated by this key: the key is wrong or the manifest was altered")
                }
            }
            let manifest = try parseManifest(layout.manifestBytes)
            guard (manifest["encryption"].map { $0 != .null } ?? false) == encrypted else {
                throw SnapshotError(.malformed, "the manifest's encryption does not match its trailer: one says encrypted, the other not")
            }
            return manifest
        }
        let manifest = try parseManifest(layout.manifestBytes)
        if let key, case .object? = manifest["encryption"] { try checkManifestMAC(manifest, key: key) }
        return manifest
    }

    private static func parseManifest(_ bytes: [UInt8]) throws(SnapshotError) -> JSONObject {
        guard case .object(let manifest)? = try? JSONReader.parse(bytes) else {
            throw SnapshotError(.malformed, "the manifest is not a JSON object")
        }
        guard manifest["format"] == .string("sightline-snapshot") else {
            throw SnapshotError(.malformed, "the manifest is not a Sightline snapshot manifest")
        }
        guard manifest["version"] == .integer(1) else {
            throw SnapshotError(.unsupportedVersion, """
                snapshot manifest version \(manifest["version"].map { String(JSONWriter.compact($0).prefix(64)) } ?? "missing") is not \
                supported (this build reads version 1)
                """)
        }
        return manifest
    }

    /// Checks the whole snapshot and writes its content to `destination`:
    /// every chunk must open (with `key` when sealed) and inflate, and the
    /// content must have the manifest's length and SHA-256. Nothing is left at
    /// `destination` when a check fails.
    public static func extract(_ path: String, to destination: String, key: SymmetricKey?) throws(SnapshotError) -> JSONObject {
        let layout = try layout(path)
        if key == nil, let mac = layout.manifestMAC, mac.contains(where: { $0 != 0 }) {
            throw SnapshotError(.keyRequired, "the snapshot is encrypted, and no key was given")
        }
        let manifest = try self.manifest(of: layout, key: key)
        var nonceBase: [UInt8]?
        if case .object(let encryption)? = manifest["encryption"] {
            guard case .string(let nonce)? = encryption["nonce"], let bytes = Data(base64Encoded: nonce), bytes.count == 12 else {
                throw SnapshotError(.malformed, "the manifest's encryption has no 12-byte nonce")
            }
            guard key != nil else {
                throw SnapshotError(.keyRequired, "the snapshot is encrypted, and no key was given")
            }
            nonceBase = [UInt8](bytes)
        } else if key != nil {
            throw SnapshotError(.malformed, "a key was given but the snapshot is not encrypted")
        }
        guard case .integer(let expectedBytes)? = manifest["contentBytes"], case .string(let expectedHash)? = manifest["contentSHA256"],
              case .integer(let chunkCount)? = manifest["chunks"] else {
            throw SnapshotError(.malformed, "the manifest lacks contentBytes, contentSHA256 or chunks")
        }
        guard expectedBytes >= 0, chunkCount >= 0 else {
            throw SnapshotError(.malformed, "the manifest says \(chunkCount) chunks of \(expectedBytes) bytes: neither may be negative")
        }
        do {
            guard StoreFiles.createPrivate(destination),
                  let output = FileHandle(forWritingAtPath: destination) else {
                throw SnapshotError(.io, "cannot create \(destination)")
            }
            var hasher = SHA256()
            var total: Int64 = 0
            var index: UInt64 = 0
            do {
                defer { try? output.close() }
                // One thread reads the chunks; each worker opens and inflates
                // its chunk and writes it at its place in the file (chunk k
                // holds bytes from k × chunkBytes), so the writes are shared
                // too; this thread hashes them in order.
                let file = ChunkFile(descriptor: output.fileDescriptor)
                let opening = ChunkKey(key: key, nonceBase: nonceBase, header: layout.header)
                var end: UInt64?
                try Parallel.pipeline(workers: max(2, processors), produce: { hand in
                    readChunks(of: path, until: layout.chunksEnd, handing: hand)
                }, transform: { stored in
                    inflate(stored, opening: opening, contentBytes: expectedBytes, writingTo: file)
                }, consume: { (chunk: InflatedChunk) throws(SnapshotError) -> Bool in
                    switch chunk {
                    case .plain(let plain):
                        // Written at k × chunkBytes, so only the last may be shorter.
                        guard total == Int64(index) * Int64(chunkBytes) else {
                            throw SnapshotError(.malformed, "chunk \(index - 1) holds fewer than \(chunkBytes) bytes and is not the last")
                        }
                        hasher.update(data: plain)
                        total += Int64(plain.count)
                        index += 1
                        return true
                    case .end(let offset):
                        end = offset
                        return false
                    case .failure(let error):
                        throw error
                    }
                })
                guard let end else { throw SnapshotError(.io, "the snapshot's chunks stopped without an end marker") }
                guard end == layout.chunksEnd else {
                    throw SnapshotError(.malformed, "\(layout.chunksEnd - end) bytes follow the end-of-chunks marker")
                }
                guard index == UInt64(chunkCount), total == expectedBytes else {
                    throw SnapshotError(.truncated, "the snapshot holds \(index) chunks and \(total) bytes; its manifest says \(chunkCount) and \(expectedBytes)")
                }
                guard Hex.encode(Array(hasher.finalize())) == expectedHash else {
                    throw SnapshotError(.corrupt, "the content does not match the manifest's SHA-256")
                }
                try output.synchronize()
            }
            return manifest
        } catch let error as SnapshotError {
            try? FileManager.default.removeItem(atPath: destination)
            throw error
        } catch {
            try? FileManager.default.removeItem(atPath: destination)
            throw SnapshotError(.io, "cannot write \(destination): \(error)")
        }
    }

    /// The key and nonce base that seal or open chunks (both nil when the
    /// snapshot is not sealed). `SymmetricKey` is not marked Sendable; it is
    /// an immutable value that the threads only read.
    private struct ChunkKey: @unchecked Sendable {
        let key: SymmetricKey?
        let nonceBase: [UInt8]?
        /// The container's header, which each chunk's associated data starts with.
        let header: [UInt8]
    }

    /// What the reading thread hands a worker: a chunk as stored (with its
    /// number), the end of the chunks (the offset just after the end
    /// marker), or why reading stopped.
    private enum StoredChunk: Sendable {
        case chunk(UInt64, [UInt8])
        case end(UInt64)
        case failure(SnapshotError)
    }

    /// What a worker hands over: a chunk's content, or the reader's end or
    /// failure passed on in its turn.
    private enum InflatedChunk: Sendable {
        case plain([UInt8])
        case end(UInt64)
        case failure(SnapshotError)
    }

    /// Reads the chunks of the snapshot at `path` in order and hands each
    /// over; then the end marker, or the first problem. Stops when `handOver`
    /// says the extraction stopped.
    private static func readChunks(of path: String, until chunksEnd: UInt64, handing handOver: (StoredChunk) -> Bool) {
        var index: UInt64 = 0
        do {
            guard let input = FileHandle(forReadingAtPath: path) else { throw SnapshotError(.io, "cannot read \(path)") }
            defer { try? input.close() }
            try input.seek(toOffset: UInt64(headerMagic.count))
            var offset = UInt64(headerMagic.count)
            while true {
                guard offset + 4 <= chunksEnd else {
                    throw SnapshotError(.truncated, "chunk \(index) runs past the end of the chunks")
                }
                let length = readLE32(try input.read(upToCount: 4) ?? Data())
                offset += 4
                if length == 0 {
                    _ = handOver(.end(offset))
                    return
                }
                guard length <= maximumSealedChunk, offset + UInt64(length) <= chunksEnd else {
                    throw SnapshotError(.truncated, "chunk \(index) claims \(length) bytes, more than the file holds")
                }
                let bytes = [UInt8](try input.read(upToCount: Int(length)) ?? Data())
                offset += UInt64(length)
                guard handOver(.chunk(index, bytes)) else { return }
                index += 1
            }
        } catch let error as SnapshotError {
            _ = handOver(.failure(error))
        } catch {
            _ = handOver(.failure(SnapshotError(.io, "cannot read the snapshot \(path): \(error)")))
        }
    }

    /// One chunk as a worker makes it: opened (with the key), inflated into
    /// no more than the manifest's `contentBytes` leave from its place on, and
    /// written there; the end or a failure passed on as it comes.
    private static func inflate(_ item: StoredChunk, opening: ChunkKey, contentBytes: Int64, writingTo file: ChunkFile) -> InflatedChunk {
        switch item {
        case .chunk(let index, let bytes):
            do throws(SnapshotError) {
                let (start, overflow) = index.multipliedReportingOverflow(by: UInt64(chunkBytes))
                let left = overflow || start >= UInt64(contentBytes) ? 0 : UInt64(contentBytes) - start
                let plain = try openAndInflate(bytes, opening: opening, index: index, limit: Int(min(UInt64(chunkBytes), left)))
                try file.write(plain, at: index * UInt64(chunkBytes))
                return .plain(plain)
            } catch {
                return .failure(error)
            }
        case .end(let offset):
            return .end(offset)
        case .failure(let error):
            return .failure(error)
        }
    }

    /// The extracted file, which the workers write at their chunks' offsets.
    private struct ChunkFile: Sendable {
        let descriptor: Int32

        func write(_ bytes: [UInt8], at offset: UInt64) throws(SnapshotError) {
            var written = 0
            while written < bytes.count {
                let result = bytes.withUnsafeBytes { buffer in
                    pwrite(descriptor, buffer.baseAddress! + written, buffer.count - written, off_t(offset) + off_t(written))
                }
                if result < 0 {
                    if errno == EINTR { continue }
                    throw SnapshotError(.io, "cannot write the extracted content (errno \(errno))")
                }
                written += result
            }
        }
    }

    /// Chunk `index` as stored: opened with the key when sealed, then inflated.
    /// `limit` is the most it may inflate to: what the manifest's content
    /// leaves for it, so a small store's one chunk is inflated into a
    /// buffer of its size rather than of a whole chunk.
    private static func openAndInflate(_ stored: [UInt8], opening: ChunkKey, index: UInt64, limit: Int) throws(SnapshotError) -> [UInt8] {
        var chunk = stored
        if let key = opening.key, let nonceBase = opening.nonceBase {
            chunk = try openChunk(chunk, key: key, nonceBase: nonceBase, header: opening.header, index: index)
        }
        do {
            return try Deflate.decompress(chunk, limit: limit)
        } catch .tooLarge {
            throw SnapshotError(.corrupt, "chunk \(index) inflates to more than the \(limit) bytes the manifest's contentBytes leave for it")
        } catch {
            throw SnapshotError(.corrupt, "chunk \(index) does not inflate: \(error)")
        }
    }

    // MARK: - Layout

    private struct Layout {
        /// The container's header: version 1 or 2.
        var header: [UInt8]
        var manifestBytes: [UInt8]
        /// Version 2's MAC of the manifest's bytes (zeros when not
        /// encrypted); nil in version 1, whose manifest holds its MAC.
        var manifestMAC: [UInt8]?
        /// The offset just after the end-of-chunks marker.
        var chunksEnd: UInt64
    }

    /// Reads the header, the trailer and the manifest's bytes through one
    /// open file, its size taken from that file (`fstat`), not from the path.
    private static func layout(_ path: String) throws(SnapshotError) -> Layout {
        do {
            guard let input = FileHandle(forReadingAtPath: path) else { throw SnapshotError(.io, "no snapshot at \(path), or it cannot be read") }
            defer { try? input.close() }
            var status = stat()
            guard fstat(input.fileDescriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG, status.st_size >= 0 else {
                throw SnapshotError(.io, "\(path) is not a regular file")
            }
            let size = UInt64(status.st_size)
            guard size >= UInt64(headerMagic.count) + 4 + UInt64(4 + trailerMagic.count) else {
                throw SnapshotError(.truncated, "\(path) is \(size) bytes: too short to be a snapshot")
            }
            let header = [UInt8](try input.read(upToCount: headerMagic.count) ?? Data())
            guard header.prefix(6) == headerMagic.prefix(6) else {
                throw SnapshotError(.malformed, "\(path) is not a Sightline snapshot")
            }
            guard header == headerMagic || header == versionOneHeader else {
                throw SnapshotError(.unsupportedVersion, "snapshot container version \(header.last ?? 0) is not supported (this build reads versions 1 and 2)")
            }
            let macBytes = header == headerMagic ? UInt64(manifestMACBytes) : 0
            let trailer = macBytes + UInt64(4 + trailerMagic.count)
            guard size >= UInt64(headerMagic.count) + 4 + trailer else {
                throw SnapshotError(.truncated, "\(path) is \(size) bytes: too short to be a snapshot")
            }
            try input.seek(toOffset: size - trailer)
            let tail = [UInt8](try input.read(upToCount: Int(trailer)) ?? Data())
            guard tail.count == Int(trailer), Array(tail.suffix(trailerMagic.count)) == trailerMagic else {
                throw SnapshotError(.truncated, "\(path) has no snapshot trailer: it is cut short or damaged")
            }
            let manifestLength = UInt64(readLE32(Data(tail[Int(macBytes)..<Int(macBytes) + 4])))
            guard manifestLength <= UInt64(maximumManifestBytes), manifestLength + trailer + 4 + UInt64(headerMagic.count) <= size else {
                throw SnapshotError(.malformed, "the trailer announces a \(manifestLength)-byte manifest that does not fit")
            }
            try input.seek(toOffset: size - trailer - manifestLength)
            let bytes = [UInt8](try input.read(upToCount: Int(manifestLength)) ?? Data())
            guard bytes.count == Int(manifestLength) else { throw SnapshotError(.truncated, "\(path) ends inside its manifest") }
            return Layout(header: header, manifestBytes: bytes, manifestMAC: macBytes > 0 ? Array(tail.prefix(Int(macBytes))) : nil,
                          chunksEnd: size - trailer - manifestLength)
        } catch let error as SnapshotError {
            throw error
        } catch {
            throw SnapshotError(.io, "cannot read \(path): \(error)")
        }
    }

    // MARK: - Sealing

    /// A chunk's nonce: the snapshot's random base with the chunk number in its
    /// last eight bytes, so no nonce repeats under one key within a snapshot.
    private static func nonce(_ base: [UInt8], _ index: UInt64) throws -> AES.GCM.Nonce {
        var bytes = base
        for position in 0..<8 { bytes[4 + position] ^= UInt8(truncatingIfNeeded: index >> (8 * UInt64(7 - position))) }
        return try AES.GCM.Nonce(data: bytes)
    }

    private static func associatedData(_ header: [UInt8], _ index: UInt64) -> [UInt8] {
        header + withUnsafeBytes(of: index.bigEndian) { Array($0) }
    }

    /// The HMAC-SHA256 of an encrypted version 2 snapshot's manifest, its
    /// bytes as stored, under a key derived from the snapshot key: nothing
    /// the manifest says (which store, which head, how many chunks) can be
    /// changed without the key, and a reader checks it before parsing.
    static func manifestMAC(of bytes: [UInt8], key: SymmetricKey) -> [UInt8] {
        let macKey = HKDF<SHA256>.deriveKey(inputKeyMaterial: key, info: Array("sightline snapshot manifest v2".utf8), outputByteCount: 32)
        return Array(HMAC<SHA256>.authenticationCode(for: bytes, using: macKey))
    }

    /// The HMAC-SHA256 of an encrypted version 1 snapshot's manifest (every
    /// member but `manifestMAC`, written compact in order), which version 1
    /// kept inside the manifest.
    static func manifestMAC(_ manifest: JSONObject, key: SymmetricKey) -> [UInt8] {
        var covered = manifest
        covered["manifestMAC"] = nil
        let macKey = HKDF<SHA256>.deriveKey(inputKeyMaterial: key, info: Array("sightline snapshot manifest".utf8), outputByteCount: 32)
        return Array(HMAC<SHA256>.authenticationCode(for: Array(JSONWriter.compact(.object(covered)).utf8), using: macKey))
    }

    private static func checkManifestMAC(_ manifest: JSONObject, key: SymmetricKey) throws(SnapshotError) {
        guard case .string(let stored)? = manifest["manifestMAC"] else {
            throw SnapshotError(.malformed, "the encrypted snapshot's manifest has no manifestMAC")
        }
        let expected = Hex.encode(manifestMAC(manifest, key: key))
        guard stored.utf8.count == expected.utf8.count,
              zip(stored.utf8, expected.utf8).reduce(UInt8(0), { $0 | ($1.0 ^ $1.1) }) == 0 else {
            throw SnapshotError(.wrongKey, "the manifest is not authenticated by this key: the key is wrong or the manifest was altered")
        }
    }

    private static func sealChunk(_ plain: [UInt8], key: SymmetricKey, nonceBase: [UInt8], header: [UInt8], index: UInt64) throws -> [UInt8] {
        let box = try AES.GCM.seal(plain, using: key, nonce: nonce(nonceBase, index), authenticating: associatedData(header, index))
        return Array(box.ciphertext) + Array(box.tag)
    }

    private static func openChunk(_ sealed: [UInt8], key: SymmetricKey, nonceBase: [UInt8], header: [UInt8], index: UInt64) throws(SnapshotError) -> [UInt8] {
        guard sealed.count >= 16 else { throw SnapshotError(.corrupt, "chunk \(index) is shorter than its tag") }
        do {
            let box = try AES.GCM.SealedBox(nonce: nonce(nonceBase, index), ciphertext: sealed.dropLast(16), tag: sealed.suffix(16))
            return Array(try AES.GCM.open(box, using: key, authenticating: associatedData(header, index)))
        } catch {
            throw SnapshotError(.wrongKey, "chunk \(index) does not open with this key: the key is wrong or the snapshot was altered")
        }
    }

    // MARK: - Bytes

    private static func le32(_ value: Int) -> [UInt8] {
        withUnsafeBytes(of: UInt32(value).littleEndian) { Array($0) }
    }

    private static func readLE32(_ data: Data) -> UInt32 {
        let bytes = [UInt8](data)
        guard bytes.count == 4 else { return UInt32.max }
        return UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24
    }

    /// fsyncs the directory holding `path`, so a rename into it is durable.
    public static func syncDirectory(of path: String) {
        let directory = (path as NSString).deletingLastPathComponent
        let descriptor = open(directory.isEmpty ? "." : directory, O_RDONLY)
        guard descriptor >= 0 else { return }
        fsync(descriptor)
        close(descriptor)
    }

    /// A 32-byte key from a key file: 32 raw bytes, or 64 hexadecimal digits.
    public static func key(fromFile path: String) throws(SnapshotError) -> SymmetricKey {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SnapshotError(.io, "cannot read the key file \(path)")
        }
        if data.count == 32 { return SymmetricKey(data: data) }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.count == 64, let bytes = Hex.decode(text) { return SymmetricKey(data: bytes) }
        throw SnapshotError(.malformed, "the key file \(path) must hold 32 bytes or 64 hexadecimal digits")
    }
}

/// Why a snapshot cannot be written or used.
public struct SnapshotError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of failure, for callers that act on it (a wrong key is the
    /// user's to fix; a corrupt chunk is the file's); `message` says the details.
    public enum Code: String, Hashable, Sendable {
        case io, malformed, truncated, corrupt, unsupportedVersion, keyRequired, wrongKey, mismatch, exists
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
