import Crypto
import Foundation
import GRDB
import IndexModel
import Snapshot
import SQLiteSupport
import SyncWire
import Threads

/// What a restore did.
public struct RestoreReport: Hashable, Sendable {
    public let manifest: DeviceSnapshotManifest
    /// The journal head after the restore, the `storeRestored` event included.
    public let head: Seq
    public let newEpoch: Epoch
    /// Where the store that was replaced was kept, if there was one.
    public let replacedStoreKeptAt: String?
    /// How long each step took, in the order they ran (`bench restore` prints them).
    public let phases: [RestorePhase]
    /// The last seq of the snapshot's journal kept, when the restore was cut
    /// short (`toSeq`, or the seq `toTime` came to).
    public var restoredThrough: Seq? = nil
    /// Items the snapshot held live with content the replaced store (or the
    /// caller) had purged: the restore deleted them again.
    public var deletedAgain: [ItemKey] = []
    /// Activities, by key, that the snapshot held live with content the
    /// replaced store (or the caller) had purged, or that a cut left as a
    /// purge's residue (under its key's pseudonym): the restore deleted them again.
    public var activitiesDeletedAgain: [String] = []
    /// What the restore purged again of the items the replaced store had
    /// purged, when there were any (nil otherwise).
    public var purge: PurgeReport? = nil
}

/// One step of a restore and how long it took. A step that ran beside others
/// on its own thread says so in its name.
public struct RestorePhase: Hashable, Sendable {
    public let name: String
    public let duration: Duration
}

/// Times the steps of a restore one after another.
struct RestorePhaseTimer {
    private(set) var phases: [RestorePhase] = []
    private var start = ContinuousClock.now

    /// Ends the current step as `name` and starts the next.
    mutating func lap(_ name: String) {
        let now = ContinuousClock.now
        phases.append(RestorePhase(name: name, duration: start.duration(to: now)))
        start = now
    }

    /// Adds a step that ran beside the others, timed on its own thread.
    mutating func add(_ name: String, _ duration: Duration) {
        phases.append(RestorePhase(name: name, duration: duration))
    }
}

extension DeviceStore {
    /// Restores the snapshot at `snapshot` into a store at `path`.
    ///
    /// Everything is checked before `path` is touched: the manifest, the
    /// checksum (and the key, when sealed), the decompression into a temporary
    /// store, `PRAGMA integrity_check`, the journal's hash chain, the manifest
    /// against the content, and the projections against a rebuild. Then the
    /// temporary store begins a new epoch with a `storeRestored` event, so no
    /// (epoch, seq) is ever used twice, and replaces `path` in one rename. An
    /// existing store needs `force` and is kept beside it
    /// (`path.replaced-<time>`). `toSeq` cuts the journal back to that seq
    /// before the new epoch; `toTime` cuts it back to the state at that
    /// instant, on a call boundary (`cut(_:at:)`). Any failure leaves `path`
    /// exactly as it was.
    ///
    /// No restore brings back content that was purged. `purged` holds the
    /// SHA-256 of each payload the wiped store purged
    /// (`purgedPayloadHashes()`, which the restore also reads from the
    /// store it replaces). A live item of the snapshot whose content came
    /// from such a payload is deleted again in the new epoch, and the
    /// content is purged again where the snapshot covers its deletion
    /// (`purge`); the rest waits for the next backup.
    public static func restore(snapshot: String, to path: String, force: Bool = false, toSeq: Seq? = nil, toTime: Timestamp? = nil,
                               key: SymmetricKey? = nil, purged: Set<ChainHash> = [],
                               options: StoreOptions = StoreOptions()) throws(DeviceStoreError) -> RestoreReport {
        let manifest = try readManifest(snapshot, key: key)
        var forgotten = purged
        if FileManager.default.fileExists(atPath: path) {
            guard force else {
                throw DeviceStoreError(.destinationExists, "\(path) exists: a restore over a store must be forced (the old store is then kept beside it)")
            }
            // A store too damaged to read says nothing of its purges; it is being replaced for that.
            var readOnly = options
            readOnly.readOnly = true
            if let hashes = try? DeviceStore(at: .file(path), options: readOnly).purgedPayloadHashes() {
                forgotten.formUnion(hashes)
            }
        }
        guard toSeq == nil || toTime == nil else {
            throw DeviceStoreError(.invalidOption, "a restore cuts back to a seq or to an instant, not both")
        }
        if let toSeq, toSeq > manifest.headSeq {
            throw DeviceStoreError(.snapshot, "seq \(toSeq) is after the snapshot's head seq \(manifest.headSeq)")
        }
        let temporary = path + ".restoring-\(ProcessInfo.processInfo.processIdentifier)"
        StoreFiles.remove(temporary)
        var timer = RestorePhaseTimer()
        do {
            _ = try SnapshotFile.extract(snapshot, to: temporary, key: key)
        } catch {
            throw DeviceStoreError(error)
        }
        let version: Int
        do {
            version = try checkRestoredSchema(temporary)
        } catch {
            StoreFiles.remove(temporary)
            throw error
        }
        timer.lap("extract and checksum")
        let newEpoch = restoredEpoch(after: manifest.epoch, at: options.clock.now(), random: options.random)
        let prepared: PreparedRestore
        do {
            prepared = try prepareRestored(temporary, version: version, manifest: manifest, toSeq: toSeq, toTime: toTime,
                                           newEpoch: newEpoch, forgetting: forgotten, options: options, timer: &timer)
        } catch {
            StoreFiles.remove(temporary)
            throw error
        }
        // Only now is `path` touched: the old store (and its WAL) moves aside,
        // the restored file takes its name, and a failure moves it back.
        let kept: String?
        do {
            kept = try StoreFiles.replace(path, with: temporary, stamp: options.clock.now().millisecondsSince1970)
        } catch {
            throw DeviceStoreError(.snapshot, error.message)
        }
        timer.lap("replace the store")
        return RestoreReport(manifest: manifest, head: prepared.head, newEpoch: newEpoch, replacedStoreKeptAt: kept, phases: timer.phases,
                             restoredThrough: prepared.restoredThrough, deletedAgain: prepared.deletedAgain,
                             activitiesDeletedAgain: prepared.activitiesDeletedAgain, purge: prepared.purge)
    }

    /// The schema of a new device store of this build.
    private static let currentSchema: Result<[SchemaObject], DeviceStoreError> = Result { () throws(DeviceStoreError) in
        do {
            return try SchemaCheck.schema { db in
                try StoreSchema.create(db, deviceID: DeviceID("schema"), app: AppID("schema"), voteSecret: [UInt8](repeating: 0, count: 32), createdAt: 0)
                try db.execute(sql: SearchIndex.ddl)
            }
        } catch {
            throw DeviceStoreError(.database, "cannot make the store schema to compare with: \(DeviceStore.describe(error))")
        }
    }

    /// Refuses a restored file whose schema is not one this build makes
    /// (`SchemaCheck`; a store older than version 3 may still hold its FTS5
    /// tables, which opening it drops) or whose sync state holds what this
    /// build never writes, before anything opens it as a store. Returns the
    /// file's format version.
    @discardableResult
    static func checkRestoredSchema(_ path: String) throws(DeviceStoreError) -> Int {
        let expected = try currentSchema.get()
        let found: (objects: [SchemaObject], version: Int64?)
        do {
            found = try SchemaCheck.inspect(path, metaTable: "store_meta")
        } catch {
            if let failure = RestoredFile.integrityFailure(at: path) { throw DeviceStoreError(.snapshot, failure) }
            throw DeviceStoreError(.snapshot, "the snapshot's database cannot be read: \(DeviceStore.describe(error))")
        }
        guard let version = found.version, StoreSchema.readableVersions.contains(Int(clamping: version)) else {
            throw DeviceStoreError(.snapshot, """
                the snapshot's database is not a device store of a version this build reads \
                (\(StoreSchema.readableVersions.lowerBound) to \(StoreSchema.readableVersions.upperBound))
                """)
        }
        let verdict = SchemaCheck.verdict(found: found.objects, expected: expected,
                                          isCurrentVersion: version == Int64(StoreSchema.formatVersion),
                                          derived: SearchIndex.schemaObjects) { object in
            version < 3 && object.type == "table" && StoreSchema.droppedFullTextTables.contains(object.name)
        }
        switch verdict {
        case .accepted:
            break
        case .acceptedDroppingDerived(let tables):
            // The search index of another layout: the store builds it again on the next search.
            do {
                let queue = try DatabaseQueue(path: path)
                defer { try? queue.close() }
                try queue.write { db in for table in tables { try db.execute(sql: "DROP TABLE IF EXISTS \(table)") } }
            } catch {
                throw DeviceStoreError(.snapshot, "cannot drop the restored file's search index: \(DeviceStore.describe(error))")
            }
        case .refused(let problem):
            throw DeviceStoreError(.snapshot, "\(problem): refused")
        }
        guard found.objects.contains(where: { $0.name == "sync_state" }) else { return Int(version) }
        do {
            try SchemaCheck.read(path) { db in try checkSyncState(db) }
        } catch let error as DeviceStoreError {
            throw error
        } catch {
            throw DeviceStoreError(.snapshot, "the snapshot's sync state cannot be read: \(DeviceStore.describe(error))")
        }
        return Int(version)
    }

    /// The restored file's sync state and epoch, which no projection check
    /// covers (a rebuild keeps them): each position an integer from 0 to
    /// 2^53 − 1, the device key 32 bytes, nothing else.
    private static func checkSyncState(_ db: Database) throws {
        let positions: Set<String> = ["acknowledged_epoch", "acknowledged_seq", "durable_epoch", "durable_seq"]
        for row in try Row.fetchAll(db, sql: "SELECT key, value FROM sync_state") {
            guard case .string(let key) = (row[0] as DatabaseValue).storage else {
                throw DeviceStoreError(.snapshot, "the restored file's sync_state has a key that is not text: refused")
            }
            let value = (row[1] as DatabaseValue).storage
            switch (key, value) {
            case ("device_key", .blob(let bytes)) where bytes.count == 32:
                continue
            case (let name, .int64(let number)) where positions.contains(name) && number >= 0 && UInt64(number) <= WireLimits.maximumPosition:
                continue
            default:
                throw DeviceStoreError(.snapshot, "the restored file's sync_state \(key) holds \(row[1] as DatabaseValue), not a position or a 32-byte key: refused")
            }
        }
        if let epoch = try DatabaseValue.fetchOne(db, sql: "SELECT value FROM store_meta WHERE key = 'epoch'") {
            guard case .int64(let number) = epoch.storage, number >= 1, UInt64(number) <= WireLimits.maximumPosition else {
                throw DeviceStoreError(.snapshot, "the restored file's epoch is \(epoch), not a position: refused")
            }
        }
    }

    /// The epoch a store restored from a snapshot of `epoch` begins: the
    /// restore time in milliseconds since 1970, or the snapshot's epoch + 1 if
    /// that is later. The snapshot's epoch + 1 alone repeats when a device is
    /// restored twice from backups of the same epoch (the simulator found
    /// this): the second restore would reuse the first one's positions and the
    /// cloud would refuse them as equivocation. Time makes each restore's epoch
    /// new, as long as the device's clock does not run back past its previous
    /// restore (docs/SYNC.md, "Epochs"). A clock at or behind the snapshot's
    /// epoch gives no such help, so the epoch is then the snapshot's + 1 + a
    /// random number below 2^16: two restores from backups of one epoch with
    /// the clock behind began the same epoch (`simulate --seed 402 --devices 8
    /// --events-per-device 80 --faults heavy --threshold 3`).
    static func restoredEpoch(after epoch: Epoch, at time: Timestamp, random: any RandomSource) -> Epoch {
        // Epochs are numbers chosen here, from the snapshot's and the clock's.
        let now = UInt64(max(time.millisecondsSince1970, 0))
        return Epoch(now > epoch.rawValue ? now : epoch.rawValue + 1 + random.next() % (1 << 16))
    }

    /// The seq a restore to `time` keeps the journal through: the longest
    /// prefix of the journal whose events happened at or before `time`, cut
    /// back to the start of the call it would end inside, so that a call (a
    /// batch, an `index` of many items) is restored whole or not at all. Nil
    /// when the prefix holds no call whole.
    static func cut(_ db: Database, at time: Timestamp) throws -> Seq? {
        guard let after = try Row.fetchOne(db, sql: "SELECT seq, call FROM event_journal WHERE time > ? ORDER BY seq LIMIT 1",
                                           arguments: [time.millisecondsSince1970]) else {
            return try Int64.fetchOne(db, sql: "SELECT max(seq) FROM event_journal").map { Seq(UInt64(max($0, 0))) }
        }
        let firstAfter: Int64 = try StoredValue.column(after, 0, "event_journal.seq")
        let call: Int64 = try StoredValue.column(after, 1, "event_journal.call of seq \(firstAfter)")
        let callStart = try Int64.fetchOne(db, sql: "SELECT min(seq) FROM event_journal WHERE call = ? AND seq <= ?",
                                           arguments: [call, firstAfter]) ?? firstAfter
        return callStart > 1 ? Seq(UInt64(callStart - 1)) : nil
    }

    /// What `prepareRestored` made of the extracted store.
    private struct PreparedRestore {
        /// The new journal head.
        var head: Seq
        /// The seq the journal was cut back to, if it was.
        var restoredThrough: Seq?
        var deletedAgain: [ItemKey] = []
        var activitiesDeletedAgain: [String] = []
        var purge: PurgeReport?
    }

    /// Checks the extracted store at `path`, cuts it back to `toSeq` or
    /// `toTime`, opens the new epoch with a `storeRestored` event, deletes
    /// and purges again what `forgetting` names, and leaves one
    /// self-contained file (no WAL).
    private static func prepareRestored(_ path: String, version: Int, manifest: DeviceSnapshotManifest, toSeq: Seq?, toTime: Timestamp?,
                                        newEpoch: Epoch, forgetting: Set<ChainHash>, options: StoreOptions,
                                        timer: inout RestorePhaseTimer) throws(DeviceStoreError) -> PreparedRestore {
        if version < StoreSchema.chainOverPayloadHashesSince {
            try checkChainBeforeMigrating(path, manifest: manifest, options: options)
            timer.lap("the old hash chain")
        }
        let store = try checkContent(path, manifest: manifest, checkHeadHash: version >= StoreSchema.chainOverPayloadHashesSince,
                                     options: options, timer: &timer)
        let toSeq = try store.write { db throws -> Seq? in
            let epoch = try Int64.fetchOne(db, sql: "SELECT value FROM store_meta WHERE key = 'epoch'") ?? 1
            guard epoch >= 0, Epoch(UInt64(epoch)) == manifest.epoch else {
                throw DeviceStoreError(.snapshot, "the snapshot's store is in epoch \(epoch), its manifest says \(manifest.epoch)")
            }
            var cutSeq = toSeq
            if let toTime {
                guard let found = try cut(db, at: toTime) else {
                    throw DeviceStoreError(.snapshot, "the snapshot's journal holds no call at or before \(toTime)")
                }
                cutSeq = found
            }
            if let cutSeq {
                try db.execute(sql: "DELETE FROM event_journal WHERE seq > ?", arguments: [Int64(cutSeq.rawValue)])
            }
            try db.execute(sql: "UPDATE store_meta SET value = ? WHERE key = 'epoch'", arguments: [newEpoch])
            return cutSeq
        }
        timer.lap("manifest and epoch checks")
        if toSeq != nil { try store.rebuildProjections() }
        // The new epoch opens with the restore, then asks the app to index
        // every known index again: it resumes from fetchLastClientState where
        // it keeps one (what the snapshot lacks is what came after it).
        let outcome = try store.write { db in
            // The snapshot it came from is a backup of everything the journal kept.
            try DeviceStore.recordBackup(db, through: toSeq ?? manifest.headSeq)
            // The last message the restored journal implies: the cloud may
            // hold more of this device after it, which the device no longer
            // knows it sent, and the ask makes the cloud say which votes those were.
            let implied = try OutboxStore.head(db)
            let appender = try JournalAppender(db: db, time: options.clock.now(), keys: store.privacyKeys)
            try appender.append(.storeRestored(StoreRestore(previousEpoch: manifest.epoch, snapshotHead: manifest.headSeq,
                                                            truncatedTo: toSeq, snapshotSHA256: manifest.contentDigest)))
            try appender.append(.cloudReindexAsked(epoch: implied.epoch, seq: implied.seq))
            for index in try DeviceStore.knownIndexes(db) {
                try appender.append(.reindexRequested(index: index, identifiers: nil))
            }
            // Items and activities live again with purged content go again, in one call after the restore's.
            let deletedAgain = try DeviceStore.itemsBack(db, purged: forgetting, cut: toSeq != nil)
            let activitiesDeletedAgain = try DeviceStore.activitiesBack(db, purged: forgetting, cut: toSeq != nil)
            if !deletedAgain.isEmpty || !activitiesDeletedAgain.isEmpty { appender.startNextCall() }
            for key in deletedAgain {
                try appender.append(.itemDeleted(index: key.index, identifier: key.identifier, cause: .identifier))
            }
            for key in activitiesDeletedAgain {
                try appender.append(.activityDeleted(key: key, cause: .identifier))
            }
            return (appender.head, deletedAgain, activitiesDeletedAgain)
        }
        var prepared = PreparedRestore(head: outcome.0, restoredThrough: toSeq, deletedAgain: outcome.1,
                                       activitiesDeletedAgain: outcome.2)
        if !forgetting.isEmpty {
            prepared.purge = try store.purge()
        }
        do {
            try store.onConnection { try RestoredFile.closeSelfContained($0) }
        } catch {
            throw DeviceStoreError(.snapshot, "cannot close the restored store: \(describe(error))")
        }
        timer.lap("new epoch and close")
        return prepared
    }

    /// Everything a restore checks inside the extracted file, on both cores:
    /// this thread replays the journal into scratch projections while one
    /// other verifies the hash chain (handing over each row it has checked and
    /// decoded, so the journal is read once) and another runs SQLite's
    /// integrity check. The verdicts are taken in the order a reader expects: a damaged
    /// file first, then the chain, the manifest, and the projections. Returns
    /// the open store when all pass.
    /// A snapshot of a store of format 4 or older has its journal chained
    /// over payloads, and its manifest names that chain's head. Opening it
    /// for writing chains it anew (`StoreSchema.chainOverPayloadHashes`),
    /// so the old chain is checked first, read-only, against the manifest.
    private static func checkChainBeforeMigrating(_ path: String, manifest: DeviceSnapshotManifest,
                                                  options: StoreOptions) throws(DeviceStoreError) {
        var readOnly = options
        readOnly.readOnly = true
        let verification: JournalVerification
        do {
            let old = try DeviceStore(at: .file(path), options: readOnly)
            defer { old.close() }
            verification = try old.verifyJournal()
        } catch {
            try checkIntegrity(path)
            throw error
        }
        if let problem = verification.firstProblem {
            throw DeviceStoreError(.snapshot, "the snapshot's journal does not verify: \(problem.message)")
        }
        guard verification.head == manifest.headSeq, verification.headHash.hex == manifest.headHash else {
            throw DeviceStoreError(.snapshot, """
                the snapshot's content does not match its manifest (head seq \(verification.head) against \(manifest.headSeq), \
                or another head hash)
                """)
        }
    }

    /// `checkHeadHash` is false when the journal was chained anew on opening
    /// (`checkChainBeforeMigrating` compared the old chain's head).
    private static func checkContent(_ path: String, manifest: DeviceSnapshotManifest, checkHeadHash: Bool, options: StoreOptions,
                                     timer: inout RestorePhaseTimer) throws(DeviceStoreError) -> DeviceStore {
        var writable = options
        writable.readOnly = false
        var readOnly = options
        readOnly.readOnly = true
        let store: DeviceStore
        let verifier: DeviceStore
        do {
            store = try DeviceStore(at: .file(path), options: writable)
            verifier = try DeviceStore(at: .file(path), options: readOnly)
        } catch {
            // A file that SQLite finds damaged is reported as such, whatever opening it said.
            try checkIntegrity(path)
            throw error
        }
        timer.lap("open the store")
        let verified = VerifiedEventStream()
        // Beside the replay, each on a thread of its own: the hash chain, which
        // hands each verified row to the replay and waits whenever the replay
        // is behind, and SQLite's integrity check, which runs in the time the
        // chain waits. (Run after the chain, on the chain's thread, it would
        // end the restore well after the replay; at the lowest priority it
        // gains nothing over the normal one, and could starve on a busy
        // machine.)
        let checks = Parallel.beside({ () -> Result<JournalVerification, DeviceStoreError> in
            Result { () throws(DeviceStoreError) -> JournalVerification in
                defer { verified.finish() }
                return try verifier.verifyJournal { record, event in verified.append(record, event) }
            }
        }, { Result { () throws(DeviceStoreError) in try DeviceStore.checkIntegrity(path) } }, while: {
            let match = Result { () throws(DeviceStoreError) -> Bool in
                // Whatever fails here, the chain must not wait for a replay that will never take its rows.
                defer { verified.abandon() }
                return try store.projectionDigest() == store.rebuiltProjectionDigest(replaying: verified)
            }
            timer.lap("projections against a replay")
            return match
        })
        timer.lap("waiting for the other threads")
        // The verifier must let go before the store leaves WAL mode.
        verifier.close()
        timer.add("(other thread) hash chain", checks.first.1)
        timer.add("(other thread) integrity check", checks.second.1)
        let projectionsMatch = checks.main
        try checks.second.0.get()
        let verification = try checks.first.0.get()
        if let problem = verification.firstProblem {
            throw DeviceStoreError(.snapshot, "the snapshot's journal does not verify: \(problem.message)")
        }
        guard store.deviceID == manifest.device, verification.head == manifest.headSeq,
              !checkHeadHash || verification.headHash.hex == manifest.headHash else {
            throw DeviceStoreError(.snapshot, """
                the snapshot's content does not match its manifest (device \(store.deviceID), head seq \(verification.head) \
                against \(manifest.device), \(manifest.headSeq))
                """)
        }
        guard try projectionsMatch.get() else {
            throw DeviceStoreError(.snapshot, "the snapshot's projections differ from a rebuild of its journal")
        }
        return store
    }

    /// SQLite's `PRAGMA integrity_check` of the file at `path`.
    private static func checkIntegrity(_ path: String) throws(DeviceStoreError) {
        if let failure = RestoredFile.integrityFailure(at: path) { throw DeviceStoreError(.snapshot, failure) }
    }
}
