import ByteCoding
import Crypto
import Foundation
import IndexModel

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

    // MARK: - Layout

    struct Layout {
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
    static func layout(_ path: String) throws(SnapshotError) -> Layout {
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
    static func nonce(_ base: [UInt8], _ index: UInt64) throws -> AES.GCM.Nonce {
        var bytes = base
        for position in 0..<8 { bytes[4 + position] ^= UInt8(truncatingIfNeeded: index >> (8 * UInt64(7 - position))) }
        return try AES.GCM.Nonce(data: bytes)
    }

    static func associatedData(_ header: [UInt8], _ index: UInt64) -> [UInt8] {
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

    static func checkManifestMAC(_ manifest: JSONObject, key: SymmetricKey) throws(SnapshotError) {
        guard case .string(let stored)? = manifest["manifestMAC"] else {
            throw SnapshotError(.malformed, "the encrypted snapshot's manifest has no manifestMAC")
        }
        let expected = Hex.encode(manifestMAC(manifest, key: key))
        guard stored.utf8.count == expected.utf8.count,
              zip(stored.utf8, expected.utf8).reduce(UInt8(0), { $0 | ($1.0 ^ $1.1) }) == 0 else {
            throw SnapshotError(.wrongKey, "the manifest is not authenticated by this key: the key is wrong or the manifest was altered")
        }
    }

    static func sealChunk(_ plain: [UInt8], key: SymmetricKey, nonceBase: [UInt8], header: [UInt8], index: UInt64) throws -> [UInt8] {
        let box = try AES.GCM.seal(plain, using: key, nonce: nonce(nonceBase, index), authenticating: associatedData(header, index))
        return Array(box.ciphertext) + Array(box.tag)
    }

    static func openChunk(_ sealed: [UInt8], key: SymmetricKey, nonceBase: [UInt8], header: [UInt8], index: UInt64) throws(SnapshotError) -> [UInt8] {
        guard sealed.count >= 16 else { throw SnapshotError(.corrupt, "chunk \(index) is shorter than its tag") }
        do {
            let box = try AES.GCM.SealedBox(nonce: nonce(nonceBase, index), ciphertext: sealed.dropLast(16), tag: sealed.suffix(16))
            return Array(try AES.GCM.open(box, using: key, authenticating: associatedData(header, index)))
        } catch {
            throw SnapshotError(.wrongKey, "chunk \(index) does not open with this key: the key is wrong or the snapshot was altered")
        }
    }

    // MARK: - Bytes

    static func le32(_ value: Int) -> [UInt8] {
        withUnsafeBytes(of: UInt32(value).littleEndian) { Array($0) }
    }

    static func readLE32(_ data: Data) -> UInt32 {
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
