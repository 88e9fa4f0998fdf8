import CloudCore
import CloudSQLite
import DeviceStore
import Foundation
import IndexModel
import Snapshot

/// The simulation's cloud and what happens to it: the running cloud store
/// (nil while it is down), its incarnations, its backups, and the restores
/// from them. It schedules nothing and draws no random numbers: the event
/// loop decides when the cloud goes down, comes up and is backed up, and the
/// host carries that out and says what the loop must know.
///
/// The store is a SQLite file in the run's directory, or a PostgreSQL
/// database (`SimulationOptions.cloudDatabase`); either way the run is the
/// same. A crash closes the store's connections, a lost store is a dropped
/// schema, and a restore into PostgreSQL is `CloudDatabase.restore`.
final class CloudHost {
    /// The cloud store's file (for a remote cloud, the served store's).
    let path: String
    /// The PostgreSQL database the store is in, when it is not `path`.
    private let database: (any CloudDatabase)?
    /// The PostgreSQL database's URL, when the store is in one.
    var storeName: String? { database?.description }
    private let directory: String
    private let world: WorldClock
    private let random: SeededRandom
    private let threshold: Int
    /// The rule the cloud breaks on purpose, if any.
    private let sabotage: Sabotage?
    /// The app every simulated device belongs to.
    private let app: AppID
    /// A served cloud, whose store the host only reads.
    private let isRemote: Bool
    /// The call lane, which writes backups; nil: they are written at once.
    private let lane: CallLane?
    /// A thread for cloud restores, made with the first (when there is a
    /// call lane): it extracts the backup while the cloud is down, 2 to 30
    /// virtual seconds, which near the end of a 10,000-device run is little
    /// wall time, and checks a copy of it once the cloud is up
    /// (`PendingCloudRestore`). On a thread of its own a restore begins at
    /// once and uses what the two busy threads leave.
    private var restoreLane: CallLane?

    private(set) var cloud: (any CloudStore)?
    /// Each time the cloud goes down it comes back as a new incarnation.
    private(set) var incarnation = 0
    /// The cloud's kept backups, oldest first.
    private(set) var snapshots: [String] = []
    private var snapshotsTaken = 0
    /// Content messages the cloud's purges took out of its log.
    private(set) var contentPurged = 0
    /// The snapshot being written, if any (`takeSnapshot`).
    private var pendingSnapshot: PendingCloudSnapshot?
    /// The restore being staged while the cloud is down, if any (`beginRestore`).
    private(set) var pendingRestore: PendingCloudRestore?
    /// Where the next restore cuts the backup back to, if anywhere
    /// (`CloudIndex.cut(through:)`).
    var restoreThrough: Timestamp?
    /// The last restore, while its checks may still be running on the
    /// restore thread (`settleRestoreChecks`).
    private var verifyingRestore: PendingCloudRestore?
    /// The news as last read, with the accepted count it was read at (only
    /// an accepted frame or a new incarnation changes it).
    private var newsRead = (accepted: -1, news: CloudNews(incarnation: -1, mark: 0))

    init(path: String, database: (any CloudDatabase)? = nil, directory: String, world: WorldClock, random: SeededRandom,
         threshold: Int, sabotage: Sabotage? = nil, app: AppID, isRemote: Bool, lane: CallLane?) {
        self.path = path
        self.database = database
        self.app = app
        self.directory = directory
        self.world = world
        self.random = random
        self.threshold = threshold
        self.sabotage = sabotage
        self.isRemote = isRemote
        self.lane = lane
    }

    deinit { close() }

    /// Waits for the restore thread's jobs and ends it (again: nothing).
    func close() {
        restoreLane?.close()
    }

    /// Opens the embedded cloud's store, made on first use; a PostgreSQL
    /// database must not hold one yet, since the oracle accounts for
    /// everything the cloud counts.
    func start() throws(CloudError) -> any CloudStore {
        if let database {
            guard try !database.holdsStore() else {
                throw CloudError(.invalidOption, """
                    \(database) already holds a cloud store: a simulation needs an empty database \
                    (or drop the old store: DROP SCHEMA sightline CASCADE)
                    """)
            }
        }
        let cloud = try open()
        self.cloud = cloud
        return cloud
    }

    /// Takes a served cloud's store, opened read-only, as the cloud to read.
    func adopt(_ store: any CloudStore) -> any CloudStore {
        cloud = store
        return store
    }

    /// The cloud's file, in memory (`/dev/shm`) when the machine has it, is
    /// read through a memory map (`CloudOptions.mapBytes`), with a small
    /// page cache: a commit after a B-tree split walks the whole cache, and
    /// the default 64 MiB one made that 12% of the event loop at 30,000
    /// devices; its pages were copies of pages already in memory.
    static let mapBytes = 1 << 31

    private func open() throws(CloudError) -> any CloudStore {
        let options = CloudOptions(clock: world, random: random, threshold: sabotage == .threshold ? threshold - 1 : threshold,
                                   durability: .normal, exclusive: true, mapBytes: CloudHost.mapBytes)
        if let database {
            return try database.open(options: options, connections: 2)
        }
        return try CloudIndex(at: .file(path), options: options)
    }

    /// The store opened read-only while the cloud is down: for reading what
    /// it holds, and for the checks at the end of a run.
    func openForReading() throws(CloudError) -> any CloudStore {
        if let database {
            return try database.open(options: CloudOptions(readOnly: true), connections: 1)
        }
        return try CloudIndex(at: .file(path), options: CloudOptions(readOnly: true, mapBytes: CloudHost.mapBytes))
    }

    /// The cloud's process dies: a new incarnation comes up later (`bringUp`).
    func crash() {
        if let cloud { database?.close(cloud) }
        cloud = nil
        incarnation += 1
    }

    /// The crashed cloud's store is lost too (a drill): its file (or its
    /// schema) goes, and the incarnation its crash began never comes up.
    func destroyStore() throws(CloudError) {
        incarnation += 1
        if let database {
            try database.dropStore()
        } else {
            StoreFiles.remove(path)
        }
    }

    /// What a device must have heard from the cloud to be quiet, with
    /// `accepted` frames taken so far. From the embedded cloud, its
    /// incarnation (a restart or restore may have lost what a device was
    /// told) and its last content request (only a device that heard one can
    /// answer it): nothing else the cloud takes is news to a device that has
    /// nothing to send. A remote cloud says only how long its log is, so
    /// there every frame it took is news.
    func news(accepted: Int) throws(CloudError) -> CloudNews {
        if isRemote, let cloud {
            return CloudNews(incarnation: incarnation, mark: try cloud.logHeads().first { $0.app == app }?.rows ?? 0)
        }
        if newsRead.accepted != accepted || newsRead.news.incarnation != incarnation, let cloud {
            newsRead = (accepted, CloudNews(incarnation: incarnation, mark: try cloud.contentRequestHead(app: app)))
        }
        return newsRead.news
    }

    /// What the cloud holds of `device` now, per epoch, read from its store
    /// even while it is down (its file is intact until a restore replaces it).
    func holds(device: DeviceID) throws(CloudError) -> [Epoch: OutboxSeq] {
        if let cloud { return try cloud.heldEpochs(app: app, device: device) }
        return try openForReading().heldEpochs(app: app, device: device)
    }

    // MARK: - Restores

    /// Chooses the backup the cloud comes up from, if it has one (the
    /// latest, or with `older` the one before, whose messages the devices
    /// may have dropped since), and extracts it beside the store while the
    /// cloud is down, then checks it (`PendingCloudRestore`): on the restore
    /// thread, when there is a call lane. The store's file stays as the crash
    /// left it until `bringUp` puts the backup in its place (a device
    /// restored meanwhile reads it). `older` is asked only when there are two.
    func beginRestore(older: () -> Bool) {
        guard !snapshots.isEmpty else { return }
        let chosen = snapshots.count > 1 && older() ? snapshots.count - 2 : snapshots.count - 1
        let pending = PendingCloudRestore(chosen: chosen, snapshot: snapshots[chosen], staging: path + ".staged",
                                          checked: path + ".checked-\(incarnation)")
        if database != nil {
            // `CloudDatabase.restore` checks the backup as it loads it, when the cloud comes up.
        } else if lane != nil {
            // Room for this restore's two jobs while the last one's checks run.
            let restoreLane = self.restoreLane ?? CallLane(capacity: 2, name: "sightline-restore")
            self.restoreLane = restoreLane
            let cargo = LaneCargo(value: pending)
            pending.extraction = restoreLane.hand { cargo.value.extract(copyingForChecks: true) }
            pending.verification = restoreLane.hand { cargo.value.verify() }
        } else {
            pending.extract(copyingForChecks: false)
            pending.verify()
        }
        pendingRestore = pending
    }

    /// Waits for the checks of the last restore, if they may still be
    /// running, and stops the run if they failed: when the next restored
    /// cloud comes up, and before the run's checks.
    func settleRestoreChecks() throws(SimulationError) {
        guard let verifying = verifyingRestore else { return }
        verifyingRestore = nil
        if let job = verifying.verification { restoreLane?.settle(job) }
        if let failure = verifying.verificationFailure {
            throw SimulationError("the cloud could not be restored from \(verifying.snapshot): \(failure)")
        }
    }

    /// Brings the cloud up; with `restore`, from the backup `beginRestore`
    /// staged. Returns, after a restore, what the restored cloud holds of
    /// each device (name, then epoch to last seq).
    func bringUp(restore: Bool) throws -> [DeviceID: [Epoch: OutboxSeq]]? {
        if restore, let pending = pendingRestore {
            pendingRestore = nil
            if let job = pending.extraction { restoreLane?.settle(job) }
            // The restore thread checks the previous restore before it
            // extracts this one, so this waits only if the loop extracted it.
            try settleRestoreChecks()
            do {
                if let failure = pending.extractionFailure ?? (pending.verification == nil ? pending.verificationFailure : nil) {
                    throw failure
                }
                let through = restoreThrough
                restoreThrough = nil
                if let database {
                    try database.dropStore()
                    try database.restore(snapshot: pending.snapshot, through: through, staging: directory,
                                         options: CloudOptions(clock: world))
                } else {
                    if let through { try CloudIndex.cutStaged(pending.staging, through: through, options: CloudOptions(clock: world)) }
                    try CloudIndex.finishRestore(staged: pending.staging, to: path, options: CloudOptions(clock: world))
                }
            } catch {
                throw SimulationError("the cloud could not be restored from \(pending.snapshot): \(error)")
            }
            if pending.verification != nil { verifyingRestore = pending }
            // Backups newer than the one restored are of a history the
            // cloud no longer has: let go.
            let chosen = pending.chosen
            for newer in snapshots[(chosen + 1)...] { StoreFiles.remove(newer) }
            snapshots.removeSubrange((chosen + 1)...)
            for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            where name.hasPrefix("cloud.sqlite.replaced-") {
                StoreFiles.remove(directory + "/" + name)
            }
        }
        let cloud = try open()
        self.cloud = cloud
        return restore ? try cloud.heldEpochsByDevice(app: app) : nil
    }

    // MARK: - Backups

    /// Copies the cloud store for a backup snapshot; false when the cloud is
    /// down. The lane (if any) writes the file, which touches only files,
    /// while the loop goes on; `finishSnapshot` later makes it the cloud's
    /// backup. Written on the loop, the file would take a large share of the
    /// loop's time near the end of a large run, when the loop is the only
    /// thread with work.
    func takeSnapshot() throws(CloudError) -> Bool {
        guard let cloud else { return false }
        snapshotsTaken += 1
        let copy = try cloud.copyForSnapshot(to: directory + "/cloud-\(snapshotsTaken).slsnap")
        let pending = PendingCloudSnapshot(copy: copy, incarnation: incarnation)
        if let lane {
            let cargo = LaneCargo(value: pending)
            pending.job = lane.hand { cargo.value.write() }
        } else {
            pending.write()
        }
        pendingSnapshot = pending
        return true
    }

    /// The pending snapshot's file is written: it becomes the cloud's backup
    /// (devices may now drop what it holds), unless the cloud went down
    /// meanwhile, which loses it.
    func finishSnapshot() throws {
        guard let pending = pendingSnapshot else { return }
        pendingSnapshot = nil
        if let job = pending.job { lane?.settle(job) }
        if let failure = pending.failure { throw SimulationError("the cloud could not be backed up: \(failure)") }
        guard let cloud, incarnation == pending.incarnation else {
            pending.copy.discard()
            return
        }
        try cloud.recordSnapshot(pending.copy)
        // What this backup made durable below K goes from the log.
        if sabotage != .purge { contentPurged += try cloud.purgeWithdrawnContent(dryRun: false).contentMessages }
        snapshots.append(pending.copy.destination)
        // The two latest are kept.
        if snapshots.count > 2 { StoreFiles.remove(snapshots.removeFirst()) }
    }

    /// A snapshot still being written when the run went quiet never became
    /// the cloud's backup.
    func discardPendingSnapshot() {
        pendingSnapshot?.copy.discard()
        pendingSnapshot = nil
    }
}

/// A cloud restore being staged while the cloud is down (`CloudHost.beginRestore`).
///
/// With a call lane, the restore thread extracts the backup and copies what
/// it extracted, and the cloud comes up on the extraction as soon as it is
/// there (`CloudHost.bringUp`), while the same thread checks the copy
/// (`CloudIndex.verifyStaged`: the integrity check, the log's chain and the
/// projections against a replay, most of a restore's time). The copy is the
/// same bytes as the store the cloud serves, so the checks say what they
/// would have said before it came up; if they fail the run stops as it did
/// when they ran first (`CloudHost.settleRestoreChecks`), and the event
/// loop does not wait for them. Without a lane, as in a drill, the checks
/// come first, as `CloudIndex.stageRestore` makes them.
final class PendingCloudRestore: @unchecked Sendable {
    /// The backup's place in `CloudHost.snapshots`.
    let chosen: Int
    let snapshot: String
    let staging: String
    /// Where the copy that is checked is kept: a path of this restore's
    /// own, since the last restore's checks may still be reading theirs.
    let checked: String
    var extraction: CallLane.Job?
    var verification: CallLane.Job?
    private var manifest: CloudSnapshotManifest?
    private var copied = false
    private(set) var extractionFailure: CloudError?
    private(set) var verificationFailure: CloudError?

    init(chosen: Int, snapshot: String, staging: String, checked: String) {
        self.chosen = chosen
        self.snapshot = snapshot
        self.staging = staging
        self.checked = checked
    }

    func extract(copyingForChecks copying: Bool) {
        do {
            let extracted = try CloudIndex.extractForRestore(snapshot: snapshot, at: staging)
            if copying {
                StoreFiles.remove(checked)
                try FileManager.default.copyItem(atPath: staging, toPath: checked)
                copied = true
            }
            manifest = extracted
        } catch let error as CloudError {
            extractionFailure = error
        } catch {
            StoreFiles.remove(staging)
            extractionFailure = CloudError(.snapshot, "cannot copy the extracted cloud store for its checks: \(error)")
        }
    }

    func verify() {
        guard let manifest else { return }
        do {
            // Opened only to be checked: the store's clock and random source
            // reach nothing the run keeps.
            try CloudIndex.verifyStaged(copied ? checked : staging, manifest: manifest,
                                        options: CloudOptions(clock: ManualClock(Timestamp(millisecondsSince1970: 0)),
                                                              random: SeededRandom(seed: 0), durability: .normal))
        } catch {
            verificationFailure = error
        }
        if copied { StoreFiles.remove(checked) }
    }
}

/// A cloud snapshot whose file is being written, on the lane or already.
final class PendingCloudSnapshot: @unchecked Sendable {
    let copy: CloudSnapshotCopy
    /// The cloud's incarnation when the copy was taken.
    let incarnation: Int
    var job: CallLane.Job?
    private(set) var failure: CloudError?

    init(copy: CloudSnapshotCopy, incarnation: Int) {
        self.copy = copy
        self.incarnation = incarnation
    }

    /// Writes the file with one thread: the other core is the event loop's.
    func write() {
        do {
            try copy.write(workers: 1)
        } catch {
            failure = error
        }
    }
}
