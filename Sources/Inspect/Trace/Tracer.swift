import CloudCore
import DeviceStore
import IndexModel
import SyncWire

/// Makes a `Trace`: reads each device store's journal and outbox and the
/// cloud store's log, keeps what concerns the target, and merges it into one
/// timeline. Every store is read once or twice from start to end, so a trace
/// costs what reading the stores costs, whatever it follows.
public struct Tracer {
    public let devices: [TraceDevice]
    public let cloud: (any CloudStore)?
    /// Each device's label by its id, for the cloud log's rows.
    private let labels: [DeviceID: String]

    /// Adds a step: its time, place, position, event, text, hash and the
    /// cloud's decisions.
    typealias Append = (Timestamp, TraceStep.Place, TraceStep.Position, String, String, PublicHash?, [TraceDecision]) -> Void

    public init(devices: [TraceDevice], cloud: (any CloudStore)?) {
        self.devices = devices
        self.cloud = cloud
        var labels: [DeviceID: String] = [:]
        for device in devices { labels[device.store.deviceID] = device.label }
        self.labels = labels
    }

    /// What the trace follows once the journals named the activities the
    /// target is about: their keys, references and public hashes.
    struct Subjects {
        var identifier: String?
        var urls: Set<String> = []
        var keys: Set<String> = []
        var refs: Set<String> = []
        /// Each public hash met, with its app (a hash is salted with it).
        var hashes: [PublicHash: AppID] = [:]
        var wantedHash: PublicHash?

        /// Whether the target names `activity` (whose public hash is `hash`).
        func names(_ activity: UserActivity, hash: PublicHash?) -> Bool {
            if let identifier, activity.key == identifier || activity.persistentIdentifier == identifier
                || activity.relatedUniqueIdentifier == identifier || activity.weakRelatedUniqueIdentifier == identifier {
                return true
            }
            if let url = activity.webpageURL, urls.contains(url) { return true }
            if let hash, hash == wantedHash { return true }
            return false
        }

        /// Whether the trace follows `hash`: the target names it, or an
        /// activity the target names has it.
        func follows(_ hash: PublicHash) -> Bool { hashes[hash] != nil || hash == wantedHash }

        mutating func add(_ activity: UserActivity, hash: PublicHash?, app: AppID) {
            keys.insert(activity.key)
            refs.formUnion(activity.engagementRefs)
            if let url = activity.webpageURL { urls.insert(url) }
            if let hash { hashes[hash] = app }
        }
    }

    public func trace(_ target: TraceTarget) -> Trace {
        var problems: [String] = []
        var steps: [TraceStep] = []
        var order = 0
        func append(_ time: Timestamp, _ place: TraceStep.Place, _ position: TraceStep.Position, _ event: String, _ text: String,
                    hash: PublicHash? = nil, decisions: [TraceDecision] = []) {
            steps.append(TraceStep(time: time, place: place, position: position, event: event, text: text, hash: hash,
                                   decisions: decisions, order: order))
            order += 1
        }
        var subjects = Subjects()
        var device: DeviceID?
        switch target {
        case .identifier(let identifier):
            subjects.identifier = identifier
            subjects.refs.insert(identifier)
        case .url(let url):
            subjects.urls.insert(url)
            subjects.refs.insert(url)
        case .hash(let hash):
            subjects.wantedHash = hash
        case .device(let selector):
            guard let found = devices.first(where: { $0.label == "device \(selector)" || $0.store.deviceID.rawValue == selector }) else {
                // A device the cloud knows but no store was given for.
                device = DeviceID(selector)
                break
            }
            device = found.store.deviceID
        }
        if let device {
            for traced in devices where traced.store.deviceID == device {
                readDevice(traced, problems: &problems, append: append)
            }
            readCloudRows(of: device, problems: &problems, append: append)
            let sorted = steps.sorted { ($0.time, $0.order) < ($1.time, $1.order) }
            return Trace(target: target, steps: sorted, verdicts: [], problems: problems, devicesRead: devices.count,
                         cloudRead: cloud != nil)
        }
        // The activities the target names, on any device: their keys,
        // references and hashes are followed everywhere.
        for traced in devices {
            do {
                let app = traced.store.app
                let scan = try traced.store.scanEntries { entry in
                    if case .activityRecorded(let activity) = entry.event {
                        let hash = Tracer.publicHash(of: activity, app: app)
                        if subjects.names(activity, hash: hash) { subjects.add(activity, hash: hash, app: app) }
                    }
                    return true
                }
                if let stop = scan.scan.stop { problems.append("\(traced.label): the journal stops being readable: \(stop.message)") }
            } catch {
                problems.append("\(traced.label): \(Tracer.words(error))")
            }
        }
        if subjects.hashes.isEmpty, case .url(let url) = target {
            for (hash, app) in publicHashes(at: url, problems: &problems) { subjects.hashes[hash] = app }
        }
        for traced in devices {
            readDevice(traced, subjects: subjects, problems: &problems, append: append)
        }
        var folds = readCloudLog(for: subjects, problems: &problems, append: append)
        // A hash no device named gets its app from the first log row with it.
        for (hash, fold) in folds where subjects.hashes[hash] == nil { subjects.hashes[hash] = fold.app }
        var verdicts: [PublicVerdict] = []
        for (hash, app) in subjects.hashes.sorted(by: { $0.key < $1.key }) {
            guard let cloud else { break }
            let fold = folds.removeValue(forKey: hash) ?? HashFold(app: app, hash: hash, threshold: cloud.threshold,
                                                                   agreement: cloud.agreement)
            compare(fold, problems: &problems)
            verdicts.append(verdict(of: fold, problems: &problems))
        }
        let sorted = steps.sorted { ($0.time, $0.order) < ($1.time, $1.order) }
        return Trace(target: target, steps: sorted, verdicts: verdicts, problems: problems, devicesRead: devices.count,
                     cloudRead: cloud != nil)
    }

    /// The public hash the cloud knows `activity` by, nil when it is private.
    static func publicHash(of activity: UserActivity, app: AppID) -> PublicHash? {
        PublicContent(activity).flatMap { PublicHash.of(app: app, content: $0) }
    }

    // MARK: - Devices

    /// A device's steps for the subjects: the events about them, then the
    /// restores and epochs of the device, when anything was about them.
    private func readDevice(_ traced: TraceDevice, subjects: Subjects, problems: inout [String],
                            append: Append) {
        let store = traced.store
        let place = TraceStep.Place.device(label: traced.label, id: store.deviceID)
        var found: [(JournalEntry, String, PublicHash?)] = []
        var context: [(JournalEntry, String)] = []
        var times: [UInt64: Timestamp] = [:]
        var live: Set<String> = []
        // The items this device's activities of the subjects are strongly
        // related to: deleting one of them withdraws their votes here.
        var relatedHere: Set<String> = []
        func hashes(_ list: [[UInt8]]) -> [PublicHash] {
            list.compactMap(PublicHash.init).filter(subjects.follows)
        }
        do {
            let scan = try store.scanEntries { entry in
                var line: String?
                var hash: PublicHash?
                switch entry.event {
                case .itemIndexed(let index, let item) where item.uniqueIdentifier == subjects.identifier:
                    line = (live.insert(index).inserted ? "item indexed in " : "item indexed again (replaced) in ") + TextRule.printable(index)
                case .itemUpdated(let index, let update) where update.uniqueIdentifier == subjects.identifier:
                    let names = update.attributes.sortedEntries.map(\.key.name)
                    line = "item updated in \(TextRule.printable(index))" + (names.isEmpty ? "" : ": " + names.joined(separator: ", "))
                case .itemDeleted(let index, let identifier, let cause)
                    where identifier == subjects.identifier || relatedHere.contains(identifier):
                    live.remove(index)
                    line = "item \(TextRule.printable(identifier)) deleted from \(TextRule.printable(index)) \(Tracer.words(cause))"
                        + Tracer.relatedWords(identifier, relatedHere)
                case .itemExpired(let index, let identifier) where identifier == subjects.identifier || relatedHere.contains(identifier):
                    live.remove(index)
                    line = "item \(TextRule.printable(identifier)) expired in \(TextRule.printable(index))" + Tracer.relatedWords(identifier, relatedHere)
                case .activityRecorded(let activity):
                    hash = Tracer.publicHash(of: activity, app: store.app)
                    guard subjects.keys.contains(activity.key) || hash.map(subjects.follows) == true else { break }
                    if let item = activity.relatedUniqueIdentifier { relatedHere.insert(item) }
                    line = "activity \(TextRule.printable(activity.key)) recorded: " + Tracer.publicWords(activity, hash: hash)
                case .activityDeleted(let key, let cause) where subjects.keys.contains(key):
                    line = "activity \(TextRule.printable(key)) deleted \(Tracer.words(cause)): its vote is withdrawn"
                case .activityExpired(let key) where subjects.keys.contains(key):
                    line = "activity \(TextRule.printable(key)) expired: its vote is withdrawn"
                case .activityPurged(let purged):
                    guard let bytes = purged.publicHash, let purgedHash = PublicHash(bytes), subjects.follows(purgedHash) else { break }
                    hash = purgedHash
                    line = "a purge took this activity's content out of the journal; its public hash stays"
                case .resultShown(let ref) where subjects.refs.contains(ref):
                    line = "shown as a search result (\(TextRule.printable(ref)))"
                case .resultEngaged(let ref) where subjects.refs.contains(ref):
                    line = "engaged with (\(TextRule.printable(ref)))"
                case .publicContentRequested(let requested):
                    let asked = hashes(requested)
                    guard let first = asked.first else { break }
                    hash = first
                    line = "the cloud asked for the content of \(asked.map(\.description).joined(separator: ", "))"
                case .votesReindexRequested(let request):
                    let asked = hashes(request.hashes)
                    guard let first = asked.first else { break }
                    hash = first
                    line = "asked to state its vote again for \(asked.map(\.description).joined(separator: ", "))"
                case .storeRestored, .epochAdvanced, .cloudReindexAsked:
                    context.append((entry, Tracer.syncWords(entry.event)))
                default:
                    break
                }
                if let line {
                    found.append((entry, line + (entry.record.isPurged ? " (payload purged)" : ""), hash))
                    times[entry.record.seq.rawValue] = entry.record.time
                }
                return true
            }
            if let stop = scan.scan.stop { problems.append("\(traced.label): the journal stops being readable: \(stop.message)") }
            if !scan.undecodable.isEmpty {
                problems.append("\(traced.label): \(scan.undecodable.count) journal event(s) do not decode, first at seq \(scan.undecodable[0])")
            }
        } catch {
            problems.append("\(traced.label): \(Tracer.words(error))")
            return
        }
        guard !found.isEmpty else { return }
        for (entry, line, hash) in found + context.map({ ($0.0, $0.1, nil) }) {
            let record = entry.record
            append(record.time, place, .journal(seq: record.seq.rawValue, epoch: record.epoch.rawValue, call: record.call.rawValue),
                   entry.event.kind.name, line, hash, [])
        }
        // What still waits to be sent.
        do {
            let status = try store.syncStatus()
            let last = found.last?.0.record.time ?? Timestamp(millisecondsSince1970: 0)
            for entry in try store.outboxEntries(after: status.acknowledged) {
                guard let hash = entry.message.hash, subjects.follows(hash) else { continue }
                append(times[entry.journalSeq.rawValue] ?? last, place,
                       .outbox(epoch: entry.position.epoch.rawValue, seq: entry.position.seq.rawValue, journalSeq: entry.journalSeq.rawValue),
                       entry.message.kindName, "\(entry.message.kindName) \(hash) waits in the outbox at \(entry.position): the cloud has not acknowledged it",
                       hash, [])
            }
        } catch {
            problems.append("\(traced.label): the outbox cannot be read: \(Tracer.words(error))")
        }
    }

    /// A device's own steps, for a device trace: its restores, epochs and
    /// what the cloud asked of it, then its sync cursor.
    private func readDevice(_ traced: TraceDevice, problems: inout [String],
                            append: Append) {
        let store = traced.store
        let place = TraceStep.Place.device(label: traced.label, id: store.deviceID)
        var events = 0
        var last: JournalRecord?
        do {
            let scan = try store.scanEntries { entry in
                events += 1
                last = entry.record
                switch entry.event {
                case .storeRestored, .epochAdvanced, .cloudReindexAsked, .votesReindexRequested, .publicContentRequested,
                     .popularityModeLearned:
                    let record = entry.record
                    append(record.time, place, .journal(seq: record.seq.rawValue, epoch: record.epoch.rawValue, call: record.call.rawValue),
                           entry.event.kind.name, Tracer.syncWords(entry.event), nil, [])
                default:
                    break
                }
                return true
            }
            if let stop = scan.scan.stop { problems.append("\(traced.label): the journal stops being readable: \(stop.message)") }
            let status = try store.syncStatus()
            if let last {
                append(last.time, place, .journal(seq: last.seq.rawValue, epoch: last.epoch.rawValue, call: last.call.rawValue),
                       "syncCursor", """
                       \(events) journal events; outbox: acknowledged through \(status.acknowledged), durable through \(status.durable), \
                       \(status.pending) message(s) waiting, head \(status.head)
                       """, nil, [])
            }
        } catch {
            problems.append("\(traced.label): \(Tracer.words(error))")
        }
    }

    /// An error's message, without the type's decoration.
    static func words(_ error: any Error) -> String {
        if let error = error as? DeviceStoreError { return error.message }
        if let error = error as? CloudError { return error.message }
        return "\(error)"
    }

    static func votes(_ count: Int64) -> String { count == 1 ? "1 live vote" : "\(count) live votes" }

    /// What deleting an item does to the activities strongly related to it.
    static func relatedWords(_ identifier: String, _ related: Set<String>) -> String {
        guard related.contains(identifier) else { return "" }
        return ": the activities strongly related to it turn private, and their votes are withdrawn"
    }

    static func publicWords(_ activity: UserActivity, hash: PublicHash?) -> String {
        if let hash { return "public, hash \(hash) (its vote goes at its first engagement)" }
        if !activity.eligibleForSearch || !activity.eligibleForPublicIndexing { return "private (not eligible for public indexing)" }
        return "private (no URL or title, or over the wire's limits)"
    }

    static func words(_ cause: DeletionCause) -> String {
        switch cause {
        case .identifier: "by identifier"
        case .domain(let domain): "with domain \(TextRule.printable(domain))"
        case .all: "by delete-all"
        }
    }

    static func syncWords(_ event: JournalEvent) -> String {
        switch event {
        case .storeRestored(let restore):
            return "restored from a backup (journal through seq \(restore.snapshotHead)); epoch \(restore.previousEpoch) ended and a new one began"
        case .epochAdvanced(let from, let to, let kept):
            return "epoch moved from \(from) to \(to): the cloud had begun a later one (it kept \(kept.rawValue) message(s) of \(from))"
        case .cloudReindexAsked(let epoch, let seq):
            return "asks the cloud which votes its messages after \(epoch):\(seq) held"
        case .votesReindexRequested(let request):
            return "the cloud asked it to state \(request.hashes.count) vote(s) again" + (request.more ? ", and more after" : "")
        case .publicContentRequested(let hashes):
            return "the cloud asked for the content of \(hashes.count) public hash(es)"
        case .popularityModeLearned(let mode):
            return "learned that its app counts popularity \(mode)"
        default:
            return event.kind.name
        }
    }

    // MARK: - Cloud

    /// The public entries whose content is at `url`, in any app.
    private func publicHashes(at url: String, problems: inout [String]) -> [(PublicHash, AppID)] {
        guard let cloud else { return [] }
        do {
            return try cloud.logHeads().flatMap { head in
                try cloud.entries(app: head.app).compactMap { entry -> (PublicHash, AppID)? in
                    guard let hash = entry.hash, entry.content?.webpageURL == url else { return nil }
                    return (hash, head.app)
                }
            }
        } catch {
            problems.append("cloud: \(Tracer.words(error))")
            return []
        }
    }

    /// Every log row of `device`: what the cloud received and acknowledged.
    private func readCloudRows(of device: DeviceID, problems: inout [String],
                               append: Append) {
        guard let cloud else { return }
        var last = Timestamp(millisecondsSince1970: 0)
        do {
            try cloud.scanLog(app: nil, from: 1) { record in
                last = max(last, record.receivedAt)
                guard record.device == device else { return true }
                let new = record.messages.dropFirst(record.firstSeq.count(before: record.acceptedFrom))
                var kinds: [String: Int] = [:]
                for message in new { kinds[message.kindName, default: 0] += 1 }
                let counts = kinds.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
                let resent = record.firstSeq.count(before: record.acceptedFrom)
                append(record.receivedAt, .cloud, position(record, seq: nil), "frame", """
                       accepted and acknowledged messages \(record.epoch):\(record.firstSeq)…\(record.lastSeq)\
                       \(resent > 0 ? " (\(resent) held already)" : ""): \(counts.isEmpty ? "nothing new" : counts)
                       """, nil, [])
                return true
            }
            for head in try cloud.logHeads() {
                guard let held = try cloud.heldEpochsByDevice(app: head.app)[device] else { continue }
                let epochs = held.sorted { $0.key < $1.key }.map { "\($0.key) through \($0.value)" }.joined(separator: ", ")
                append(last, .cloud, .cloudState(app: head.app, device: device, sender: labels[device]), "cloudPosition",
                       "the cloud holds of this device, per epoch: \(epochs)", nil, [])
            }
        } catch {
            problems.append("cloud: the log cannot be read: \(Tracer.words(error))")
        }
    }

    private func position(_ record: CloudLogRecord, seq: OutboxSeq?) -> TraceStep.Position {
        .log(app: record.app, row: record.seq, device: record.device, sender: labels[record.device], epoch: record.epoch.rawValue,
             firstSeq: record.firstSeq.rawValue, lastSeq: record.lastSeq.rawValue, seq: seq?.rawValue)
    }

    /// Folds the log for each of the subjects' hashes (`HashFold`), with a
    /// step for each message about one, and for crawled pages at their URLs.
    private func readCloudLog(for subjects: Subjects, problems: inout [String],
                              append: Append)
        -> [PublicHash: HashFold] {
        guard let cloud, !subjects.hashes.isEmpty || !subjects.urls.isEmpty || subjects.wantedHash != nil else { return [:] }
        var folds: [PublicHash: HashFold] = [:]
        for (hash, app) in subjects.hashes {
            folds[hash] = HashFold(app: app, hash: hash, threshold: cloud.threshold, agreement: cloud.agreement)
        }
        var crawled: [AppID: Set<String>] = [:]
        do {
            try cloud.scanLog(app: nil, from: 1) { record in
                // A row an older build logged for a name no store keeps folds to nothing (`LogReplay`).
                guard !record.device.rawValue.utf8.contains(0) else { return true }
                let skipped = record.firstSeq.count(before: record.acceptedFrom)
                var seq = record.acceptedFrom
                var signals: [PublicHash: (Popularity, OutboxSeq)] = [:]
                var recordedPages = false
                for message in record.messages.dropFirst(skipped) {
                    defer { seq = seq.next }
                    if case .page(_, let page) = message {
                        recordedPages = true
                        crawled[record.app, default: []].insert(page.url)
                        if subjects.urls.contains(page.url) {
                            append(record.receivedAt, .cloud, position(record, seq: seq), "page",
                                   "the crawler recorded the page at \(TextRule.printable(page.url))", nil, [])
                        }
                        continue
                    }
                    guard let hash = message.hash, subjects.follows(hash) else { continue }
                    // The target's hash, when no device named it, is folded from its first row.
                    var fold = folds[hash] ?? HashFold(app: record.app, hash: hash, threshold: cloud.threshold, agreement: cloud.agreement)
                    guard fold.app == record.app else { continue }
                    if folds[hash] == nil { folds[hash] = fold }
                    if case .signal(_, let counts) = message {
                        if fold.countsSignal(of: record.device) {
                            var sum = signals[hash]?.0 ?? Popularity()
                            sum += counts
                            signals[hash] = (sum, signals[hash]?.1 ?? seq)
                        } else {
                            append(record.receivedAt, .cloud, position(record, seq: seq), "signal", "signal \(hash)", hash,
                                   [TraceDecision(.ignored, "signal ignored: only a live voter's count")])
                        }
                        continue
                    }
                    let decisions = fold.apply(message, device: record.device, logSeq: record.seq,
                                               crawled: crawled[record.app] ?? [])
                    folds[hash] = fold
                    append(record.receivedAt, .cloud, position(record, seq: seq), message.kindName, "\(message.kindName) \(hash)",
                           hash, decisions)
                }
                if recordedPages {
                    for (hash, var fold) in folds where fold.app == record.app {
                        let decisions = fold.pagesRecorded()
                        folds[hash] = fold
                        if !decisions.isEmpty {
                            append(record.receivedAt, .cloud, position(record, seq: nil), "pages", "the crawler recorded pages",
                                   hash, decisions)
                        }
                    }
                }
                let day = PopularityRule.day(milliseconds: record.receivedAt.millisecondsSince1970)
                for (hash, (offered, first)) in signals.sorted(by: { $0.key < $1.key }) {
                    guard var fold = folds[hash] else { continue }
                    let decision = fold.signals(offered, device: record.device, day: day)
                    folds[hash] = fold
                    append(record.receivedAt, .cloud, position(record, seq: first), "signal", "signals \(hash)", hash, [decision])
                }
                return true
            }
        } catch {
            problems.append("cloud: the log cannot be read: \(Tracer.words(error))")
        }
        return folds
    }

    /// Says where the log's fold and the cloud's projections differ: a
    /// rebuild would change the store (`journal verify` on it says more).
    private func compare(_ fold: HashFold, problems: inout [String]) {
        guard let cloud else { return }
        do {
            let entry = try cloud.entry(app: fold.app, hash: fold.hash)
            let stored = (live: Int64(entry?.liveVotes ?? 0), voters: entry?.voters ?? 0, isPublic: entry?.isPublic ?? false,
                          popularity: entry?.popularity ?? Popularity())
            let folded = (live: fold.liveVotes, voters: fold.votes.count, isPublic: fold.content != nil, popularity: fold.popularity)
            if stored.live != folded.live || stored.voters != folded.voters || stored.isPublic != folded.isPublic
                || stored.popularity != folded.popularity {
                problems.append("""
                    cloud: for \(fold.hash) the log folds to \(folded.live) live votes of \(folded.voters) voters\
                    \(folded.isPublic ? ", public" : ""), the projections hold \(stored.live) of \(stored.voters)\
                    \(stored.isPublic ? ", public" : ""): run `sightline journal verify` on the cloud store
                    """)
            }
        } catch {
            problems.append("cloud: \(Tracer.words(error))")
        }
    }

    /// Why `fold`'s hash is public or not, with what the device stores hold.
    private func verdict(of fold: HashFold, problems: inout [String]) -> PublicVerdict {
        var holding = 0
        var counted = 0
        var waiting = 0
        for traced in devices where traced.store.app == fold.app {
            do {
                guard try traced.store.liveVotes().contains(fold.hash) else { continue }
                holding += 1
                if fold.votes[traced.store.deviceID]?.live == true {
                    counted += 1
                    continue
                }
                let status = try traced.store.syncStatus()
                if try traced.store.outboxEntries(after: status.acknowledged).contains(where: {
                    if case .vote(let hash, _) = $0.message { return hash == fold.hash }
                    return false
                }) {
                    waiting += 1
                }
            } catch {
                problems.append("\(traced.label): \(Tracer.words(error))")
            }
        }
        let groups = fold.agreeing
        let largest = groups.values.max() ?? 0
        var reasons: [String] = []
        let k = fold.threshold
        if let row = fold.publishedBy, fold.content != nil {
            reasons.append("public: \(Tracer.votes(fold.liveVotes)) of K = \(k), content agreed in log row \(row)")
        } else if fold.votes.isEmpty {
            reasons.append("the cloud's log holds no vote for it")
        } else if fold.liveVotes < Int64(k) {
            reasons.append("below the bar: \(Tracer.votes(fold.liveVotes)) of the K = \(k) needed")
        } else if fold.offers.isEmpty {
            reasons.append("\(Tracer.votes(fold.liveVotes)) reach K = \(k); the cloud asked its live voters for content and none has offered any yet")
        } else {
            reasons.append("""
                \(Tracer.votes(fold.liveVotes)) reach K = \(k), but the offers do not agree: \(fold.offers.count) offer(s) in \
                \(groups.count) version(s), at most \(largest) alike, and \(fold.agreement) must be (a title that differs \
                per device never agrees)
                """)
        }
        if fold.withdrawn > 0 { reasons.append("\(fold.withdrawn) vote(s) were withdrawn and not cast again") }
        if holding > counted {
            let lost = holding - counted - waiting
            var text = "\(holding - counted) of the \(devices.count) device stores read hold a live vote the cloud does not count"
            if waiting > 0 { text += ": \(waiting) wait(s) in the outbox" }
            if lost > 0 {
                text += "\(waiting > 0 ? "," : ":") \(lost) the cloud acknowledged and no longer holds (an ended epoch or a cloud restore; a reindex request states it again)"
            }
            reasons.append(text)
        }
        return PublicVerdict(app: fold.app, hash: fold.hash, isPublic: fold.content != nil, liveVotes: fold.liveVotes, threshold: k,
                             agreement: fold.agreement, withdrawn: fold.withdrawn, offers: fold.offers.count, versions: groups.count,
                             largestAgreeing: largest, devicesHolding: holding, devicesCounted: counted, devicesWaiting: waiting,
                             reasons: reasons)
    }
}
