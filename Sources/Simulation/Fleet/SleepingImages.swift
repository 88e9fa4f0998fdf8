import ByteCoding
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The compressed images of sleeping in-memory stores (`SleepingStore.parked()`),
/// in one file instead of the process's memory: a million sleeping stores
/// hold about 4 GB of images, which as a file sit in the OS's page cache
/// while memory lasts and on disk past it, and which the run's peak RSS does
/// not count. The file is opened and at once unlinked in the temporary
/// directory (`TMPDIR`, else `/tmp`), so it goes with the process however
/// the process ends; on a tmpfs it would be memory again.
///
/// An image lies in a slot of whole `granule`s; a freed slot is reused by
/// the next image of the same number of granules, and others go at the
/// file's end. Each place keeps its image's `Fingerprint`: an image read
/// back that differs from what was written (the file changed under the run)
/// is an error that says where, not a store woken with other pages.
///
/// Only the event loop writes and frees; reading (`pread`) may happen on
/// any thread once the run is over (`SimDevice.storeForReading`).
final class SleepingImages: @unchecked Sendable {
    /// Where one image lies.
    struct Place: Equatable {
        let offset: Int
        let count: Int
        let fingerprint: UInt64
        var granules: Int { SleepingImages.granules(count) }
    }

    static let granule = 512

    static func granules(_ count: Int) -> Int { max(1, (count + granule - 1) / granule) }

    private let directory: String
    private var descriptor: Int32 = -1
    /// The file's end: every slot lies before it.
    private var end = 0
    /// Freed slots' offsets, by their size in granules.
    private var free: [Int: [Int]] = [:]
    /// The bytes of the images in the file now, and the most they and the file reached.
    private(set) var heldBytes = 0
    private(set) var mostHeldBytes = 0
    var fileBytes: Int { end }

    init(directory: String = FileManager.default.temporaryDirectory.path) {
        self.directory = directory
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// Writes `image` to a free slot and returns its place.
    func write(_ image: [UInt8]) throws(SimulationError) -> Place {
        if descriptor < 0 { try open() }
        let granules = SleepingImages.granules(image.count)
        let offset: Int
        if let reused = free[granules]?.popLast() {
            offset = reused
        } else {
            offset = end
            end += granules * SleepingImages.granule
        }
        var written = 0
        while written < image.count {
            let result = image.withUnsafeBytes { bytes in
                pwrite(descriptor, bytes.baseAddress! + written, bytes.count - written, off_t(offset + written))
            }
            if result < 0 && errno == EINTR { continue }
            guard result > 0 else {
                let reason = result < 0 ? String(cString: strerror(errno)) : "nothing written"
                free[granules, default: []].append(offset)
                throw SimulationError("cannot write a sleeping store's image (\(image.count) bytes) at offset \(offset) of the images file in \(directory): \(reason)")
            }
            written += result
        }
        heldBytes += image.count
        mostHeldBytes = max(mostHeldBytes, heldBytes)
        return Place(offset: offset, count: image.count, fingerprint: Fingerprint.of(image))
    }

    /// The image at `place`, as it was written.
    func read(_ place: Place) throws(SimulationError) -> [UInt8] {
        guard descriptor >= 0, place.offset >= 0, place.count >= 0, place.offset + place.count <= end else {
            throw SimulationError("no sleeping store's image lies at offset \(place.offset) (\(place.count) bytes) of the images file, which ends at \(end)")
        }
        // Read into uninitialized room: a wake need not zero what it overwrites.
        var failure: (offset: Int, reason: String)?
        let image = [UInt8](unsafeUninitializedCapacity: place.count) { buffer, initialized in
            var read = 0
            while read < place.count {
                let result = pread(descriptor, buffer.baseAddress! + read, place.count - read, off_t(place.offset + read))
                if result < 0 && errno == EINTR { continue }
                guard result > 0 else {
                    failure = (place.offset + read, result < 0 ? String(cString: strerror(errno)) : "the file ends first")
                    break
                }
                read += result
            }
            initialized = failure == nil ? place.count : 0
        }
        if let failure {
            throw SimulationError("cannot read the sleeping store's image at offset \(failure.offset) of the images file: \(failure.reason)")
        }
        guard Fingerprint.of(image) == place.fingerprint else {
            throw SimulationError("the sleeping store's image at offset \(place.offset) (\(place.count) bytes) of the images file is not the one written there: the file was changed")
        }
        return image
    }

    /// Lets the slot at `place` be written again.
    func release(_ place: Place) {
        heldBytes -= place.count
        free[place.granules, default: []].append(place.offset)
    }

    private func open() throws(SimulationError) {
        let path = directory + "/sightline-sleeping-stores-\(getpid())-\(UUID().uuidString)"
        let opened = Glibc.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard opened >= 0 else {
            throw SimulationError("cannot create a file for sleeping stores' images in \(directory): \(String(cString: strerror(errno)))")
        }
        unlink(path)
        descriptor = opened
    }
}
