import ByteCoding
import Crypto
import Foundation
import GRDB
import IndexModel
import Snapshot
import SQLiteSupport
import SyncWire

/// What a device snapshot's manifest says (`Journal/FORMAT.md`, "Snapshot files").
public struct DeviceSnapshotManifest: Hashable, Sendable {
    public let device: DeviceID
    public let app: AppID
    public let epoch: Epoch
    public let headSeq: Seq
    public let headHash: String
    public let outboxHead: String
    public let acknowledged: String
    public let durable: String
    public let createdAt: Timestamp
    public let contentBytes: Int64
    /// The content's SHA-256 in hexadecimal, as the manifest spells it.
    public let contentSHA256: String
    /// The same 32 bytes, for the restore's journal event.
    let contentDigest: [UInt8]
    public let encrypted: Bool

    init(_ object: JSONObject) throws(DeviceStoreError) {
        func string(_ key: String) throws(DeviceStoreError) -> String {
            guard case .string(let value)? = object[key] else {
                throw DeviceStoreError(.snapshot, "the snapshot manifest has no \(key)")
            }
            return value
        }
        func integer(_ key: String) throws(DeviceStoreError) -> Int64 {
            guard case .integer(let value)? = object[key], value >= 0 else {
                throw DeviceStoreError(.snapshot, "the snapshot manifest has no \(key)")
            }
            return value
        }
        guard object["kind"] == .string("device") else {
            throw DeviceStoreError(.snapshot, "this is not a device snapshot (kind \(object["kind"].map { String(JSONWriter.compact($0).prefix(64)) } ?? "missing"))")
        }
        func name(_ key: String) throws(DeviceStoreError) -> String {
            let value = try string(key)
            do {
                try TextRule.storedName.check(value)
            } catch {
                throw DeviceStoreError(.snapshot, "the snapshot manifest's \(key) \(error)")
            }
            return value
        }
        device = DeviceID(try name("device"))
        app = AppID(try name("app"))
        epoch = Epoch(UInt64(try integer("epoch")))
        headSeq = Seq(UInt64(try integer("headSeq")))
        headHash = try string("headHash")
        outboxHead = try string("outboxHead")
        acknowledged = try string("acknowledged")
        durable = try string("durable")
        guard let created = ISO8601.parse(try string("createdAt")) else {
            throw DeviceStoreError(.snapshot, "the snapshot manifest's createdAt is not an ISO 8601 instant")
        }
        createdAt = created
        contentBytes = try integer("contentBytes")
        contentSHA256 = try string("contentSHA256")
        guard let digest = Hex.decode(contentSHA256), digest.count == SHA256.byteCount else {
            throw DeviceStoreError(.snapshot, "the snapshot manifest's contentSHA256 is not a SHA-256 in hexadecimal (64 digits)")
        }
        contentDigest = digest
        encrypted = object["encryption"].map { $0 != .null } ?? false
    }
}

extension DeviceStore {
    /// Writes a backup snapshot of this store to `path` while the store stays
    /// in use. SQLite's backup API makes a consistent copy beside `path` (an
    /// in-memory store's pages are copied in memory); the manifest is read
    /// in the same snapshot read, so it describes exactly the content.
    /// With `key`, every chunk is sealed with AES-256-GCM.
    @discardableResult
    public func snapshot(to path: String, key: SymmetricKey? = nil) throws(DeviceStoreError) -> DeviceSnapshotManifest {
        let manifest: DeviceSnapshotManifest
        do {
            manifest = try DeviceSnapshotManifest(isInMemory ? try snapshotFromMemory(to: path, key: key)
                                                             : try snapshotThroughCopy(to: path, key: key))
        } catch let error as DeviceStoreError {
            throw error
        } catch let error as SnapshotError {
            throw DeviceStoreError(error)
        } catch {
            throw DeviceStoreError(.snapshot, "cannot copy the store for a snapshot: \(DeviceStore.describe(error))")
        }
        // What the backup holds may be purged from the store (`purge`).
        if !isReadOnly {
            try write { db in try DeviceStore.recordBackup(db, through: manifest.headSeq) }
        }
        return manifest
    }

    /// Snapshots a store on disk through a consistent copy beside `path`,
    /// made with SQLite's backup API; returns the manifest as written.
    private func snapshotThroughCopy(to path: String, key: SymmetricKey?) throws -> JSONObject {
        let copy = path + ".copy-\(ProcessInfo.processInfo.processIdentifier)"
        StoreFiles.remove(copy)
        defer { StoreFiles.remove(copy) }
        guard StoreFiles.createPrivate(copy) else { throw DeviceStoreError(.database, "cannot create \(copy) (errno \(errno))") }
        let destination = try DatabaseQueue.snapshotCopy(at: copy)
        let createdAt = clock.now()
        let manifest = try onConnection { queue in
            try queue.backupFromSnapshot(to: destination) { db in try DeviceStore.manifest(db, createdAt: createdAt) }
        }
        try destination.close()
        return try SnapshotFile.write(source: copy, destination: path, manifest: manifest, key: key)
    }

    /// Snapshots an in-memory store: its pages are copied straight from
    /// SQLite's (`sqlite3_serialize`) in the read that takes the manifest,
    /// with no file between (the simulator backs up thousands of such
    /// stores); returns the manifest as written.
    private func snapshotFromMemory(to path: String, key: SymmetricKey?) throws -> JSONObject {
        let createdAt = clock.now()
        let copy = try access.with { connection in
            try connection.queue.serializedFromSnapshot(connection.writePath.connection) { db in try DeviceStore.manifest(db, createdAt: createdAt) }
        }
        return try SnapshotFile.write(content: copy.image, destination: path, manifest: copy.read, key: key)
    }

    /// The manifest of the device snapshot at `path`, without its content;
    /// with `key`, an encrypted snapshot's is authenticated before it is read.
    public static func readManifest(_ path: String, key: SymmetricKey? = nil) throws(DeviceStoreError) -> DeviceSnapshotManifest {
        let object: JSONObject
        do {
            object = try SnapshotFile.manifest(at: path, key: key)
        } catch {
            throw DeviceStoreError(error)
        }
        return try DeviceSnapshotManifest(object)
    }

    /// The manifest of a copy: who, which epoch, the journal head, the outbox
    /// cursor and the client states.
    private static func manifest(_ db: Database, createdAt: Timestamp) throws -> JSONObject {
        // One statement for the three keys: each read here is compiled anew,
        // at every backup of every simulated device.
        var metas: [String: DatabaseValue] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT key, value FROM store_meta WHERE key IN ('device_id', 'app', 'epoch')") {
            metas[try StoredValue.column(row, 0, "store_meta.key")] = row[1] as DatabaseValue
        }
        func meta(_ key: String) -> DatabaseValue { metas[key] ?? .null }
        let head = try Row.fetchOne(db, sql: "SELECT seq, hash FROM event_journal ORDER BY seq DESC LIMIT 1")
        var clientStates = JSONObject()
        for row in try Row.fetchAll(db, sql: "SELECT index_name, state FROM client_states ORDER BY index_name") {
            let state: Data = try StoredValue.column(row, 1, "client_states.state")
            clientStates[try StoredValue.column(row, 0, "client_states.index_name")] = .string(state.base64EncodedString())
        }
        var headSeq: Int64 = 0
        var headHash = ChainHash.genesis.hex
        if let head {
            headSeq = try StoredValue.column(head, 0, "the journal's last seq")
            let hash: Data = try StoredValue.column(head, 1, "the hash of journal seq \(headSeq)")
            guard let chained = ChainHash([UInt8](hash)) else {
                throw DeviceStoreError(.corruptJournal, "the hash of journal seq \(headSeq) holds \(hash.count) bytes, not 32")
            }
            headHash = chained.hex
        }
        return [
            "format": .string("sightline-snapshot"),
            "version": .integer(1),
            "kind": .string("device"),
            "device": .string(String.fromDatabaseValue(meta("device_id")) ?? ""),
            "app": .string(String.fromDatabaseValue(meta("app")) ?? ""),
            "epoch": .integer(Int64.fromDatabaseValue(meta("epoch")) ?? 1),
            "headSeq": .integer(headSeq),
            "headHash": .string(headHash),
            "outboxHead": .string(try OutboxStore.head(db).description),
            "acknowledged": .string(try OutboxStore.acknowledged(db).description),
            "durable": .string(try OutboxStore.durable(db).description),
            "clientStates": .object(clientStates),
            "createdAt": .string(createdAt.description),
        ]
    }
}
