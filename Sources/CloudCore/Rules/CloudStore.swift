import ByteCoding
import Crypto
import IndexModel
import IndexQuery
import LocalPrivacy
import SyncWire

/// What serving devices and searchers needs of the cloud, whatever keeps
/// its data: enrolment, authenticating and ingesting frames, and the reads
/// a public search and a device's ack make. `CloudServer` serves any
/// `CloudService`; `CloudStore` adds what an operator needs.
public protocol CloudService: AnyObject, Sendable {
    /// K: live votes from distinct devices before a hash's content is asked for and shown.
    var threshold: Int { get }
    /// How many live voters must offer byte-identical content before it is public (`ContentRule`).
    var agreement: Int { get }
    /// The store's current time (its injected clock), for `$time` in queries.
    var now: Timestamp { get }
    /// Where the store is, for messages: a path, or a URL without its password.
    var displayName: String { get }
    /// How `app`'s devices report popularity; exact for an app not registered.
    func popularity(app: AppID) throws(CloudError) -> PopularityMode
    /// The cells of `app`'s sketch of private reports that any report fell
    /// in, in cell order (`ReportRule`).
    func sketchCells(app: AppID) throws(CloudError) -> [(cell: Int64, counted: SketchCell)]
    /// The sketches reading built, kept while the app's log does not move.
    var sketchCache: SketchCache { get }
    /// The dictionaries this process's devices deflate their frames against.
    var frameDictionaries: FrameDictionaries { get }
    /// Whether `app` is registered.
    func isRegistered(_ app: AppID) throws(CloudError) -> Bool
    /// Enrols a device and returns its 32-byte key; the same `proof` gets
    /// the same key again (`CloudIndex.enrol`).
    func enrol(app: AppID, device: DeviceID, enrolmentSecret: String, proof: [UInt8]?) throws(CloudError) -> [UInt8]
    /// Reads a frame and checks its signature, storing nothing: the device is
    /// proven, or the refusal to send comes back (`docs/CLOUD.md`, "Ingest").
    func authenticate(_ frame: [UInt8]) -> FrameAuthentication
    /// Ingests an authenticated frame whose messages the caller inflated,
    /// and returns the reply; never throws. The frame's payload is what the
    /// log keeps, so it must name no dictionary (`open(_:)` makes it so, and
    /// `ingest(_ opened:)` is how callers ingest).
    func ingest(_ frame: AuthenticatedFrame, messages: [OutboxMessage]) -> IngestResult
    func entries(app: AppID) throws(CloudError) -> [HashEntry]
    /// The pages the crawler recorded for `app`, in URL order.
    func crawledPages(app: AppID) throws(CloudError) -> [CrawledPage]
    /// The page the crawler recorded for `app` at `url`, if any.
    func crawledPage(app: AppID, url: String) throws(CloudError) -> CrawledPage?
    /// The pages the crawler recorded for `app` at any of `urls`, by URL.
    func crawledPages(app: AppID, urls: Set<String>) throws(CloudError) -> [String: CrawledPage]
    func entry(app: AppID, hash: PublicHash) throws(CloudError) -> HashEntry?
    func stats() throws(CloudError) -> CloudStats
    /// Each registered app's log rows, public items and devices, in app
    /// order, without scanning the log (`AppFigures`).
    func appFigures() throws(CloudError) -> [AppFigures]
    /// How the backend's connection pool is used now; nil for a backend
    /// without one (SQLite opens its connections itself).
    var connectionPoolUse: ConnectionPoolUse? { get }
    /// Each app's cloud log head: its rows and its last row's hash.
    func logHeads() throws(CloudError) -> [CloudLogHead]
    /// The uncompressed payloads of the newest log rows of `device` of
    /// `app`, newest first (by epoch, then last seq), each checked against
    /// its digest: at most `limit` rows, and only as many as fit in
    /// `maximumBytes` uncompressed together (`FrameDictionaries.rows`), read
    /// from their lengths before any payload is. What `FrameDictionaries`
    /// recovers a dictionary from.
    func newestLoggedPayloads(app: AppID, device: DeviceID, limit: Int, maximumBytes: Int) throws(CloudError) -> [[UInt8]]
}

/// The cloud aggregator's operations, whatever keeps its data: serving
/// (`CloudService`) and what an operator does beside it (registering apps,
/// verifying, rebuilding, purging, backing up). `CloudIndex` is its backend
/// on SQLite (GRDB) and `PostgresCloud` on PostgreSQL. The rules a backend
/// applies are kept free of storage, so that every backend calls the same
/// code: `FramePlacement` for exactly-once ingestion, `ThresholdRule` and
/// `ContentRule` for the public index, `PopularityRule` for the counts.
public protocol CloudStore: CloudService {
    func registerApp(_ app: AppID, enrolmentSecret: String, maximumDevices: Int?) throws(CloudError)
    /// Chooses how `app` (registered) counts popularity. Devices learn it in
    /// their next ack. A change folds the log again in the same
    /// transaction, since which reports count depends on it.
    func setPopularity(_ mode: PopularityMode, app: AppID) throws(CloudError)
    /// How many entries are public: `stats().publicItems` without the counts
    /// that scan the whole log.
    func publicItemCount() throws(CloudError) -> Int
    /// The last seq held of each epoch of each device of `app` (of `device` alone when given).
    func heldEpochsByDevice(app: AppID, device: DeviceID?) throws(CloudError) -> [DeviceID: [Epoch: OutboxSeq]]
    /// The app's last wanted seq (`CloudIndex.contentRequestHead(app:)`).
    func contentRequestHead(app: AppID) throws(CloudError) -> Int64
    func verifyLog() throws(CloudError) -> CloudLogVerification
    /// Reads the cloud log of `app` (of every app, one after another, when
    /// nil) from log seq `start` on, until `body` returns false.
    func scanLog(app: AppID?, from start: Int64, _ body: (CloudLogRecord) throws -> Bool) throws(CloudError)
    /// Reads `app`'s cloud log device by device, each device's rows by
    /// epoch, outbox seq and log seq (the order of the `cloud_log_by_device`
    /// index), until `body` returns false: a reader that checks one device
    /// at a time holds one device's rows, not the whole log.
    func scanLogByDevice(app: AppID, _ body: (CloudLogRecord) throws -> Bool) throws(CloudError)
    func projectionDigest() throws(CloudError) -> String
    func rebuiltProjectionDigest() throws(CloudError) -> String
    func rebuildProjections() throws(CloudError)
    /// Takes out of the cloud log the content of hashes below K that a
    /// backup no longer needs (`CloudPurgePlanner`); with `dryRun`, says
    /// what it would take and changes nothing.
    @discardableResult
    func purgeWithdrawnContent(dryRun: Bool) throws(CloudError) -> CloudPurgeReport
    /// Copies the store, consistently, into a cloud store file for a backup
    /// snapshot at `path` (`CloudSnapshotCopy.write` then writes the snapshot).
    func copyForSnapshot(to path: String) throws(CloudError) -> CloudSnapshotCopy
    /// Makes the snapshot written from `copy` the cloud's backup: each
    /// device's backed-up position moves up to what the copy holds of it.
    @discardableResult
    func recordSnapshot(_ copy: CloudSnapshotCopy) throws(CloudError) -> CloudSnapshotManifest
}

/// Where a frame falls against the positions the cloud holds for its device:
/// the rules of exactly-once ingestion, the same for every backend.
public enum FramePlacement: Hashable, Sendable {
    /// A gap, or new messages for an epoch that has ended.
    case refuse(Rejection)
    /// Every message is held already: acknowledge through `head` again, once the
    /// positions `overlap` are found to carry the same messages.
    case duplicate(head: OutboxPosition, overlap: ClosedRange<OutboxSeq>)
    /// The messages from `acceptedFrom` are new; those in `overlap`, if any,
    /// must carry the same messages as the held ones.
    case append(acceptedFrom: OutboxSeq, overlap: ClosedRange<OutboxSeq>?)

    /// `held` is the last seq held per epoch of the frame's device, by epoch.
    /// `follows` and `isProbe` are the frame's (`UploadFrame`).
    public static func of(epoch: Epoch, firstSeq: OutboxSeq, lastSeq: OutboxSeq, follows: OutboxPosition, isProbe: Bool,
                          held: [(epoch: Epoch, last: OutboxSeq)]) -> FramePlacement {
        let current = held.max { $0.epoch < $1.epoch } ?? (epoch: .beforeFirst, last: .beforeFirst)
        let last = held.first { $0.epoch == epoch }?.last ?? .beforeFirst
        /// Sends the device on to after the newest epoch the cloud holds of it.
        func head(_ why: String) -> FramePlacement {
            guard current.epoch > .beforeFirst else {
                // Nothing of the device is held (a cloud restored from a
                // snapshot older than its first frame): everything from its
                // very first message, whatever epoch that is in.
                return .refuse(Rejection(WireError(.gap, "\(why); the cloud holds nothing of this device"),
                                         expected: OutboxPosition(epoch: .beforeFirst, seq: .first)))
            }
            return .refuse(Rejection(WireError(.gap, "\(why): continue after \(current.epoch):\(current.last)"),
                                     expected: OutboxPosition(epoch: current.epoch, seq: current.last.next)))
        }
        if epoch < current.epoch {
            // An ended epoch cannot grow: the device's history went on in a
            // later epoch (a restore from an older backup resurfaced messages
            // the cloud never got). A device whose own newest epoch is below
            // the cloud's (its clock ran back past an earlier restore) moves
            // it above when told where the cloud is.
            guard lastSeq <= last else {
                // The device learns where its epoch ended, and moves what
                // comes after it to an epoch above the cloud's
                // (`Rejection.ended`).
                return .refuse(Rejection(WireError(.gap, """
                    epoch \(epoch) ended at seq \(last) when epoch \(current.epoch) began; messages \(epoch):\(last.next)... \
                    cannot be added to it: continue after \(current.epoch):\(current.last)
                    """), expected: OutboxPosition(epoch: current.epoch, seq: current.last.next),
                    ended: OutboxPosition(epoch: epoch, seq: last)))
            }
        } else if epoch == current.epoch {
            if firstSeq > last.next {
                return .refuse(Rejection(WireError(.gap, "expected \(epoch):\(last.next), the frame starts at \(epoch):\(firstSeq)"),
                                         expected: OutboxPosition(epoch: epoch, seq: last.next)))
            }
        } else if firstSeq != .first {
            // A new epoch that does not start at 1: the cloud lost its start
            // (it was restored), and perhaps more before it.
            return head("epoch \(epoch) is new here and must start at seq 1")
        } else if isProbe {
            return head("epoch \(epoch) is new here, and a probe does not begin an epoch")
        } else if follows.seq > .beforeFirst {
            // The new epoch ends the one before for good, so the cloud must
            // hold the device through where the frame says the previous
            // epoch ended. A cloud restored since the device last heard from
            // it holds less, and asks for the rest first.
            let followed = held.first { $0.epoch == follows.epoch }?.last ?? .beforeFirst
            if followed < follows.seq {
                guard follows.epoch != current.epoch else {
                    return .refuse(Rejection(WireError(.gap, """
                        epoch \(epoch) follows \(follows), but the cloud holds epoch \(follows.epoch) only through seq \(followed)
                        """), expected: OutboxPosition(epoch: follows.epoch, seq: followed.next)))
                }
                // What is missing can no longer be added (that epoch is not
                // held, or has ended): the device goes on from the cloud's head.
                return head("epoch \(epoch) follows \(follows), which the cloud does not hold")
            }
        }
        let overlap = firstSeq <= last ? firstSeq...min(last, lastSeq) : nil
        if lastSeq <= last, let overlap {
            // Acknowledged through the frame's own epoch, even one the cloud
            // has ended: the device's next messages there are refused with
            // where it ended, and move on from exactly that point.
            return .duplicate(head: OutboxPosition(epoch: epoch, seq: last), overlap: overlap)
        }
        if isProbe {
            return .refuse(Rejection(WireError(.gap, "the cloud holds epoch \(epoch) through seq \(last), before the probe"),
                                     expected: OutboxPosition(epoch: epoch, seq: last.next)))
        }
        return .append(acceptedFrom: last.next, overlap: overlap)
    }
}

/// What a change of a hash's live votes does to its public state, the same for
/// every backend: at K without content the hash becomes wanted and its raw hash
/// is kept; below K its raw hash, content and wanted mark go.
public enum ThresholdRule {
    /// What a backend must do to a hash's rows after a change of its live votes.
    public struct Actions: Hashable, Sendable {
        public var keepRawHash = false
        public var dropRawHash = false
        public var markWanted = false
        public var dropContent = false
        public var dropWanted = false

        public init() {}
    }

    /// `liveVotes` is the count after the change, `delta` the change itself.
    public static func actions(liveVotes: Int64, delta: Int64, threshold: Int, hasContent: Bool, isWanted: Bool) -> Actions {
        var actions = Actions()
        let wasPublic = liveVotes - delta >= Int64(threshold)
        if liveVotes >= Int64(threshold) {
            actions.keepRawHash = !wasPublic
            actions.markWanted = !hasContent && !isWanted
        } else if wasPublic || hasContent || isWanted {
            actions.dropRawHash = true
            actions.dropContent = hasContent
            actions.dropWanted = isWanted
        }
        return actions
    }
}

extension CloudService {
    /// Enrols a device that offers no proof: its name can be enrolled once.
    public func enrol(app: AppID, device: DeviceID, enrolmentSecret: String) throws(CloudError) -> [UInt8] {
        try enrol(app: app, device: device, enrolmentSecret: enrolmentSecret, proof: nil)
    }

    /// Inflates an authenticated frame's messages and ingests them; never
    /// throws: a frame whose messages do not decode, or whose dictionary
    /// this process does not hold, is refused, and changes nothing.
    public func ingest(_ authenticated: AuthenticatedFrame) -> IngestResult {
        do {
            return ingest(try open(authenticated))
        } catch {
            return .rejecting(error, device: authenticated.device, frame: authenticated.frame, key: authenticated.key)
        }
    }

    /// Inflates an authenticated frame, against the dictionary it names when
    /// it names one, and decodes its messages. A dictionary this process
    /// does not hold is recovered from the device's newest log rows
    /// (`FrameDictionary.recover`), or the frame is answered `unknownBase`.
    /// Reads nothing but those rows, and only then, so a server calls it
    /// outside any transaction.
    public func open(_ authenticated: AuthenticatedFrame) throws(WireError) -> OpenedFrame {
        let frame = authenticated.frame
        var dictionary = FrameDictionary.empty
        var recovered = false
        if let base = frame.base {
            if let held = frameDictionaries.dictionary(app: authenticated.app, device: frame.device, digest: base) {
                dictionary = held
            } else {
                dictionary = try recoverDictionary(app: authenticated.app, device: frame.device, digest: base)
                recovered = true
            }
        }
        let plain: [UInt8]
        do {
            plain = try frame.plainPayload(dictionary: dictionary)
        } catch where frame.base != nil {
            // Deflated against another dictionary of the same name (or
            // damaged): either way, deflated alone it can be read.
            throw WireError(.unknownBase, "the frame does not inflate against dictionary \(Hex.encode(dictionary.digest)): \(error.message); send it again deflated alone")
        }
        let messages = try UploadFrame.messages(in: plain, count: frame.count)
        return OpenedFrame(authenticated: AuthenticatedFrame(frame: frame.asLogged(plain), app: authenticated.app, key: authenticated.key),
                           messages: messages, plain: plain, dictionary: dictionary, recoveredDictionary: recovered)
    }

    /// The dictionary of `digest` made from `device`'s newest log rows, now
    /// held; `unknownBase` when none of them makes it (the device's frames
    /// since it started its dictionary are not the newest rows, or the log
    /// cannot be read).
    private func recoverDictionary(app: AppID, device: DeviceID, digest: [UInt8]) throws(WireError) -> FrameDictionary {
        let reason: String
        do {
            // A busy device's few newest frames list 1,024 hashes already,
            // and frames are up to a MiB: read more only when those do not do.
            let budget = FrameDictionaries.recoveryBytes
            var payloads = try newestLoggedPayloads(app: app, device: device, limit: FrameDictionaries.firstRecoveryRows, maximumBytes: budget)
            var recovered = FrameDictionary.recover(digest: digest, fromNewestFirst: payloads)
            if recovered == nil && payloads.count == FrameDictionaries.firstRecoveryRows {
                payloads = try newestLoggedPayloads(app: app, device: device, limit: FrameDictionaries.recoveryRows, maximumBytes: budget)
                recovered = FrameDictionary.recover(digest: digest, fromNewestFirst: payloads)
            }
            if let recovered {
                frameDictionaries.keep(recovered, app: app, device: device, recovered: true)
                return recovered
            }
            reason = "which this cloud process does not hold and cannot make from the device's newest log rows (\(payloads.count) read)"
        } catch {
            reason = "which this cloud process does not hold and could not recover from its log (\(error.message))"
        }
        frameDictionaries.noteUnrecovered()
        throw WireError(.unknownBase, "the frame is deflated against dictionary \(Hex.encode(digest)), \(reason): send it again deflated alone")
    }

    /// Ingests an opened frame and returns the reply; never throws. Once the
    /// frame is acknowledged (and is not a probe), this process holds the
    /// dictionary the device's next frame is deflated against, unless the
    /// device speaks a version without dictionaries.
    public func ingest(_ opened: OpenedFrame) -> IngestResult {
        let result = ingest(opened.authenticated, messages: opened.messages)
        let frame = opened.authenticated.frame
        switch result.outcome {
        case .accepted, .duplicate:
            // A payload that decoded lists its hashes, so this does not throw.
            if !frame.isProbe, frame.version >= UploadFrame.Flags.firstBasedVersion,
               let next = try? opened.dictionary.following(opened.plain) {
                frameDictionaries.keep(next, app: opened.authenticated.app, device: frame.device)
            }
        case .rejected:
            break
        }
        return result
    }

    /// Takes one upload frame and returns the reply; never throws: a frame
    /// that does not authenticate is refused, and changes nothing.
    public func ingest(_ frame: [UInt8]) -> IngestResult {
        switch authenticate(frame) {
        case .authenticated(let authenticated): ingest(authenticated)
        case .refused(let refusal): refusal
        }
    }

    /// The public index of `app`: the hashes with K live votes whose content
    /// arrived, most engaged first, each with the crawled page at its web
    /// page URL, if any (`HashEntry.page`), and, when the app's popularity
    /// is private, its estimated engagements (`HashEntry.estimatedEngaged`).
    public func publicIndex(app: AppID) throws(CloudError) -> [HashEntry] {
        let shown = try entries(app: app).filter(\.isPublic)
        // Only the pages public items name: a site may have many more.
        let pages = try crawledPages(app: app, urls: Set(shown.compactMap { $0.content?.webpageURL }))
        var sketch = shown.isEmpty ? nil : try privateSketch(app: app)
        return shown.map { entry in
            var entry = entry
            entry.page = entry.content?.webpageURL.flatMap { pages[$0] }
            if let hash = entry.hash { entry.estimatedEngaged = sketch?.estimate(hash.bytes) }
            return entry
        }.sorted { a, b in
            if a.rankedEngagements != b.rankedEngagements { return a.rankedEngagements > b.rankedEngagements }
            if a.popularity.views != b.popularity.views { return a.popularity.views > b.popularity.views }
            return a.key.lexicographicallyPrecedes(b.key)
        }
    }

    /// One public item of `app`, with the crawled page at its web page URL,
    /// if any, and its estimated engagements when the app's popularity is
    /// private; nil when the hash is not public.
    public func publicEntry(app: AppID, hash: PublicHash) throws(CloudError) -> HashEntry? {
        guard var entry = try entry(app: app, hash: hash), let content = entry.content else { return nil }
        entry.page = try content.webpageURL.flatMap { url throws(CloudError) in try crawledPage(app: app, url: url) }
        var sketch = try privateSketch(app: app)
        entry.estimatedEngaged = sketch?.estimate(hash.bytes)
        return entry
    }

    /// `app`'s count-mean sketch of the private reports counted, when its
    /// popularity is private; nil when it is exact. A stored cell out of
    /// range is a `corruptStore` error. Built once per log head and
    /// settings (`SketchCache`).
    public func privateSketch(app: AppID) throws(CloudError) -> CountMeanSketch? {
        guard let settings = try popularity(app: app).privateSettings else { return nil }
        let head = try logHeads().first { $0.app == app }
        if let kept = sketchCache.sketch(app: app, head: head, settings: settings) { return kept }
        var sketch = try storedSketch(app: app, settings: settings)
        sketch.prepareEstimates()
        sketchCache.keep(sketch, app: app, head: head, settings: settings)
        return sketch
    }

    /// `app`'s sketch as its cells are stored.
    private func storedSketch(app: AppID, settings: PrivatePopularity) throws(CloudError) -> CountMeanSketch {
        let cells = try sketchCells(app: app)
        var reports: Int64 = 0
        for (cell, counted) in cells {
            guard counted.reports >= 0, counted.reports <= Stored.maximumCount - reports else {
                throw CloudError(.corruptStore, "sketch_cells.reports of app \(app) cell \(cell) is \(counted.reports), not a count")
            }
            reports += counted.reports
        }
        do {
            return try CountMeanSketch(settings.sketch, cells: cells.map { (Int(clamping: $0.cell), $0.counted.total) },
                                       reports: Int(reports))
        } catch {
            throw CloudError(.corruptStore, "the sketch of app \(app) is not one ingest makes: \(error)")
        }
    }

}

extension CloudStore {
    /// Registers an app without a device quota.
    public func registerApp(_ app: AppID, enrolmentSecret: String) throws(CloudError) {
        try registerApp(app, enrolmentSecret: enrolmentSecret, maximumDevices: nil)
    }

    /// The last seq the cloud holds of each epoch of `device` of `app`.
    public func heldEpochs(app: AppID, device: DeviceID) throws(CloudError) -> [Epoch: OutboxSeq] {
        try heldEpochsByDevice(app: app, device: device)[device] ?? [:]
    }

    /// `heldEpochsByDevice(app:device:)` of every device of `app`.
    public func heldEpochsByDevice(app: AppID) throws(CloudError) -> [DeviceID: [Epoch: OutboxSeq]] {
        try heldEpochsByDevice(app: app, device: nil)
    }

    /// Writes a backup snapshot of the cloud store while it keeps serving, in
    /// the device snapshot's container (`Journal/FORMAT.md`, "Snapshot
    /// files"). Afterwards each device's *backed-up* position is what the
    /// snapshot holds of it; acks carry it, and devices keep every message
    /// after it, so that a restore of this snapshot can be brought up to date
    /// by resending. It is `copyForSnapshot(to:)`, `CloudSnapshotCopy.write`
    /// and `recordSnapshot(_:)` in a row.
    @discardableResult
    public func snapshot(to path: String, key: SymmetricKey? = nil) throws(CloudError) -> CloudSnapshotManifest {
        let copy = try copyForSnapshot(to: path)
        try copy.write(key: key)
        return try recordSnapshot(copy)
    }

    /// Reads the whole cloud log, each app's in order, until `body` returns false.
    public func scanLog(_ body: (CloudLogRecord) throws -> Bool) throws(CloudError) {
        try scanLog(app: nil, from: 1, body)
    }
}
