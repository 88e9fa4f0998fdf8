import ByteCoding
import Crypto
import Foundation
import IndexModel
import Threads

extension SnapshotFile {
    /// Reads a snapshot's manifest without its content. With `key`, an
    /// encrypted snapshot's manifest is authenticated before it is parsed
    /// (version 2; a version 1 manifest carries its MAC inside, checked once
    /// it is read). Without one, an encrypted snapshot's manifest is read
    /// unauthenticated, for inspection.
    public static func manifest(at path: String, key: SymmetricKey? = nil) throws(SnapshotError) -> JSONObject {
        try manifest(of: try layout(path), key: key)
    }

    /// The manifest `layout` holds, authenticated first when there is a key.
    static func manifest(of layout: Layout, key: SymmetricKey?) throws(SnapshotError) -> JSONObject {
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

    static func parseManifest(_ bytes: [UInt8]) throws(SnapshotError) -> JSONObject {
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
    struct ChunkKey: @unchecked Sendable {
        let key: SymmetricKey?
        let nonceBase: [UInt8]?
        /// The container's header, which each chunk's associated data starts with.
        let header: [UInt8]
    }

    /// What the reading thread hands a worker: a chunk as stored (with its
    /// number), the end of the chunks (the offset just after the end
    /// marker), or why reading stopped.
    enum StoredChunk: Sendable {
        case chunk(UInt64, [UInt8])
        case end(UInt64)
        case failure(SnapshotError)
    }

    /// What a worker hands over: a chunk's content, or the reader's end or
    /// failure passed on in its turn.
    enum InflatedChunk: Sendable {
        case plain([UInt8])
        case end(UInt64)
        case failure(SnapshotError)
    }

    /// Reads the chunks of the snapshot at `path` in order and hands each
    /// over; then the end marker, or the first problem. Stops when `handOver`
    /// says the extraction stopped.
    static func readChunks(of path: String, until chunksEnd: UInt64, handing handOver: (StoredChunk) -> Bool) {
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
    static func inflate(_ item: StoredChunk, opening: ChunkKey, contentBytes: Int64, writingTo file: ChunkFile) -> InflatedChunk {
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
    struct ChunkFile: Sendable {
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
    static func openAndInflate(_ stored: [UInt8], opening: ChunkKey, index: UInt64, limit: Int) throws(SnapshotError) -> [UInt8] {
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
}
