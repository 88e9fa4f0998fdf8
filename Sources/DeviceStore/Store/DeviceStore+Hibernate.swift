import ByteCoding
import GRDB
import IndexModel
import SQLiteSupport
import SyncWire

/// A store put to sleep (`DeviceStore.hibernate()`): everything it held,
/// without its connection. An in-memory store's database is kept as its
/// bytes, compressed; a store file stays where it is and only its connection
/// goes (with it, its three open files). Besides the database, what the store
/// kept in memory between sync runs comes along: the frame dictionary its
/// next frame is deflated against, the content requests it answered and the
/// cloud has not acknowledged, and its device key (and, an in-memory
/// store, the sync status it last read). So a woken store sends the same
/// frames, byte for byte, as one that stayed awake.
///
/// A sleeping store is this process's own: it is made by `hibernate()` and
/// only ever woken here, so its bytes are not checked again, and an
/// in-memory store's identity (`store_meta`, read and checked when the store
/// was opened) comes along instead of being read again: each of those reads
/// would compile a statement, and a woken store compiles enough.
///
/// An in-memory store begins as a copy of a new store's pages, and its
/// schema's pages stay as they were: compressed as they are, they would cost
/// every sleeping store about 2 KiB. So the image is of the pages' difference
/// from a new store's (`newStorePages`), byte by byte (XOR), in which what
/// did not change is zeros, left out (`ZeroRuns`).
///
/// A woken store keeps the image it woke from (`WokenImage`): put to sleep
/// again with the same pages, it takes that image back instead of
/// compressing them again: a store woken and left as it was sleeps for the
/// price of serializing its pages and summing them (`Fingerprint`), or,
/// kept as pages (`StoreConnectionPool`), of reading their change count,
/// which also tells a changed store without summing its pages.
///
/// A keeper of many sleeping stores may hold their images elsewhere, in a
/// file: `parked()` is the sleeping store without its image's bytes, and
/// `unparked(image:)` gives them back before it wakes. Woken with
/// `keepingImage: false`, a store remembers only which image it woke from,
/// and put to sleep unchanged it says so (`keptImage`) with an empty image:
/// the keeper's copy is still its image.
public struct SleepingStore: Sendable {
    public let location: StoreLocation
    /// The in-memory database's bytes taken against a new store's
    /// (`DeviceStore.difference`), compressed; empty for a store file, for a
    /// parked store, and for one that kept an image its keeper holds.
    public private(set) var image: [UInt8]
    /// The database's size before compressing; 0 for a store file.
    public let imageBytes: Int
    /// The `Fingerprint` of the database's bytes before compressing; nil for
    /// a store that kept them as pages (`StoreConnectionPool`), whose
    /// change count tells whether they changed.
    let fingerprint: UInt64?
    /// Whether `hibernate()` found the pages the store woke with and took
    /// back the image it woke from.
    public let keptImage: Bool
    let frameDictionary: FrameDictionary
    let answersInFlight: [PublicHash: OutboxPosition]
    let deviceKey: [UInt8]?
    /// The store's sync status as it last read it (`syncStatus()`), if it
    /// kept one: nothing writes a sleeping store, so a woken store that
    /// begins a sync need not read it again.
    let syncStatus: SyncStatus?
    /// The store's identity, which its image holds and a woken in-memory
    /// store takes from here instead of reading and checking it again.
    let meta: DeviceStore.StoreMeta

    /// The bytes it holds in memory, near enough: what the image, the
    /// dictionary and the keys were allocated (not only what they use), and
    /// each answer's hash and position.
    public var heldBytes: Int {
        image.capacity + SleepingStore.heldBytes(dictionary: frameDictionary, answers: answersInFlight, deviceKey: deviceKey,
                                                 voteSecret: meta.keys.voteSecret)
    }

    /// What a sleeping store holds besides its image: one formula for
    /// `heldBytes` and `DeviceStore.parkedBytes`.
    static func heldBytes(dictionary: FrameDictionary, answers: [PublicHash: OutboxPosition], deviceKey: [UInt8]?,
                          voteSecret: [UInt8]) -> Int {
        dictionary.bytes.capacity + (deviceKey?.capacity ?? 0) + voteSecret.capacity + answers.count * 64 + 128
    }

    /// The sleeping store without its image's bytes, which its keeper holds
    /// elsewhere; it wakes only once given them back (`unparked(image:)`).
    public func parked() -> SleepingStore {
        var parked = self
        parked.image = []
        return parked
    }

    /// The parked store with its image's bytes back.
    public func unparked(image: [UInt8]) -> SleepingStore {
        var store = self
        store.image = image
        return store
    }
}

extension DeviceStore {
    /// Puts the store to sleep: what it holds, as `SleepingStore`. The
    /// store itself must not be used afterwards; dropping it releases its
    /// connection, its statements and its page cache (or, a pooled store,
    /// its pages: `StoreConnectionPool`), and
    /// `DeviceStore(waking:options:)` brings it back. The image is the
    /// pages' difference from a new store's, its runs of zeros left out
    /// (`ZeroRuns`), compressed as an LZ4 block (`LZ4Block`): most of a
    /// small store's pages are nearly empty, and a sleep is taken often, so
    /// LZ4's speed counts for more than deflate's smaller output (zlib's
    /// fastest level takes ten times as long for 13% fewer bytes).
    public func hibernate() throws(DeviceStoreError) -> SleepingStore {
        var image: [UInt8] = []
        var imageBytes = 0
        var fingerprint: UInt64?
        var kept = false
        if isInMemory {
            let woken = wokenImage.withLock { $0 }
            if let woken, let changes = woken.changes, access.pageChanges() == changes {
                // Not one write since the store woke: its pages are the image's.
                image = woken.image
                imageBytes = woken.bytes
                fingerprint = woken.fingerprint
                kept = true
            } else {
                do {
                    var pages: [UInt8]
                    if let copy = access.copyOfPages() {
                        pages = copy
                    } else {
                        pages = try access.with { connection in
                            try connection.queue.serializedFromSnapshot(connection.writePath.connection) { _ in }.image
                        }
                        let sum = Fingerprint.of(pages)
                        fingerprint = sum
                        if let woken, woken.bytes == pages.count, woken.fingerprint == sum {
                            image = woken.image
                            kept = true
                        }
                    }
                    imageBytes = pages.count
                    if !kept {
                        // The compressed bytes have room for their bound,
                        // about the image's own size; kept for as long as the
                        // store sleeps, that room would cost more than the
                        // bytes, so they are copied out of it. The pages are
                        // a copy of their own: turned into their difference in place.
                        DeviceStore.difference(&pages)
                        image = LZ4Block.compress(ZeroRuns.encode(pages)).withUnsafeBufferPointer { Array($0) }
                    }
                } catch {
                    throw DeviceStoreError(.database, "cannot put \(location.displayName) to sleep: \(DeviceStore.describe(error))")
                }
            }
        }
        return SleepingStore(location: location, image: image, imageBytes: imageBytes, fingerprint: fingerprint, keptImage: kept,
                             frameDictionary: frameDictionary.withLock { $0 },
                             answersInFlight: answersInFlight.withLock { $0 },
                             deviceKey: knownDeviceKey.withLock { $0 },
                             syncStatus: cachedStatus.withLock { $0 },
                             meta: StoreMeta(deviceID: deviceID, keys: privacyKeys, chain: journalChain))
    }

    /// What the store will hold asleep and parked (`SleepingStore.parked()`,
    /// its `heldBytes`), read before it hibernates: a keeper that has the
    /// store hibernate on another thread counts it at once.
    public var parkedBytes: Int {
        SleepingStore.heldBytes(dictionary: frameDictionary.withLock { $0 }, answers: answersInFlight.withLock { $0 },
                                deviceKey: knownDeviceKey.withLock { $0 }, voteSecret: privacyKeys.voteSecret)
    }

    /// The bytes of the image the store woke from that it keeps while
    /// awake (`SleepingStore`); 0 for a store that never slept.
    public var wokenImageBytes: Int {
        wokenImage.withLock { $0?.image.capacity ?? 0 }
    }

    /// What the store's connection holds in memory now, as SQLite counts it:
    /// what an awake store costs besides the process's own copies.
    public func connectionMemory() -> StoreMemory {
        access.memory()
    }

    /// The bytes the store's database holds: its pages, used or free.
    /// An in-memory store's pages are its memory.
    /// A store kept as pages (`StoreConnectionPool`) gives their size,
    /// read without a transaction.
    public func databaseBytes() throws(DeviceStoreError) -> Int {
        if let bytes = access.pageBytes() { return bytes }
        return try read { db in
            let pages = try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0
            let size = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 0
            return pages * size
        }
    }

    /// Wakes a store put to sleep with `hibernate()`: the same database,
    /// the same memory between sync runs, opened with `options` (the clock
    /// and randomness the store had before it slept, for the same run).
    ///
    /// With `keepingImage: false` the woken store keeps only the image's
    /// size and fingerprint, for a keeper that holds the image itself
    /// (`SleepingStore.parked()`).
    public convenience init(waking sleeping: SleepingStore, options: StoreOptions, keepingImage: Bool = true) throws(DeviceStoreError) {
        var pages: [UInt8]?
        if case .memory = sleeping.location {
            let encoded: [UInt8]
            do {
                encoded = try LZ4Block.decompress(sleeping.image, limit: sleeping.imageBytes + ZeroRuns.overhead)
            } catch {
                throw DeviceStoreError(.corruptStore, "a sleeping store's image does not decompress: \(error)")
            }
            guard var expanded = ZeroRuns.decode(encoded, count: sleeping.imageBytes) else {
                throw DeviceStoreError(.corruptStore, "a sleeping store's image does not stand for its \(sleeping.imageBytes) bytes of pages")
            }
            DeviceStore.difference(&expanded)
            pages = expanded
        }
        try self.init(at: sleeping.location, options: options, image: pages, known: sleeping.meta)
        if pages != nil {
            let kept = keepingImage ? sleeping.image : []
            let changes = access.pageChanges()
            wokenImage.withLock { $0 = WokenImage(image: kept, bytes: sleeping.imageBytes, fingerprint: sleeping.fingerprint, changes: changes) }
        }
        frameDictionary.withLock { $0 = sleeping.frameDictionary }
        answersInFlight.withLock { $0 = sleeping.answersInFlight }
        knownDeviceKey.withLock { $0 = sleeping.deviceKey }
        if isInMemory { cachedStatus.withLock { $0 = sleeping.syncStatus } }
    }
}

extension DeviceStore {
    /// A new in-memory store's pages, as serialized: every in-memory
    /// store's first pages, schema included. Empty if the new store cannot
    /// be read, and then images are of the pages themselves.
    static let newStorePages: [UInt8] = (try? emptyMemoryStore.get().serializedFromSnapshot { _ in }.image) ?? []

    /// What a new in-memory store's pages hold before its identity is
    /// written, in bytes.
    public static var newStoreBytes: Int { newStorePages.count }

    /// Turns pages into their difference from `newStorePages`, and that
    /// difference back into the pages: each byte XOR the new store's byte
    /// at the same offset (none past the new store's end).
    static func difference(_ bytes: inout [UInt8]) {
        let base = newStorePages
        let count = min(bytes.count, base.count)
        bytes.withUnsafeMutableBufferPointer { target in
            base.withUnsafeBufferPointer { source in
                guard let to = target.baseAddress, let from = source.baseAddress else { return }
                let words = count / 8
                let toWords = UnsafeMutableRawPointer(to), fromWords = UnsafeRawPointer(from)
                for word in 0..<words {
                    let offset = word * 8
                    let value = toWords.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                        ^ fromWords.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                    toWords.storeBytes(of: value, toByteOffset: offset, as: UInt64.self)
                }
                for offset in (words * 8)..<count { to[offset] ^= from[offset] }
            }
        }
    }
}

/// The image an in-memory store woke from, which `hibernate()` takes back
/// when the pages are still the ones it woke with; `image` is empty when
/// the store's keeper holds it (`keepingImage: false`).
struct WokenImage: Sendable {
    let image: [UInt8]
    let bytes: Int
    let fingerprint: UInt64?
    /// The store's pages' change count when it woke (`PageBuffer.changes`),
    /// if it keeps its database as pages: while it stays the same, the
    /// pages are the image's, with no need to read and sum them.
    let changes: UInt64?
}

/// What an awake store's connection holds in memory (`connectionMemory()`).
public typealias StoreMemory = ConnectionMemory
