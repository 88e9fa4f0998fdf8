import CloudCore
import CloudSQLite
import DeviceStore
import Foundation
import IndexModel
import IndexQuery
import Snapshot
import SyncWire

/// The faults that are not the network's: partitions, crashes, restores, clocks, the hostile device.
extension Simulator {
    // MARK: - Faults

    func chaos() throws {
        let perTick = 1.0 / 3_600.0
        let count = Double(devices.count)
        /// Whether a fault of `rate` an hour (a device, or the whole fleet's
        /// with `perDevice`) happens in this virtual second: at most one a
        /// second on a busy run, and a day draws each as rarely as its
        /// backups (`dayStretch`), at most one in 360 seconds.
        func happens(_ rate: Double, perDevice: Bool = true) -> Bool {
            faultRandom.chance(min(1, rate * perTick * (perDevice ? count : 1)) / Double(dayStretch))
        }
        if happens(plan.partitions, perDevice: false) { partition() }
        if happens(plan.deviceCrashes) { try crash(randomDevice()) }
        if happens(plan.offlinePeriods) {
            let device = randomDevice()
            try settle(device)
            counters.fault(.offline, device: device.number)
            device.offlineUntil = world.milliseconds + faultRandom.between(60_000, 600_000)
            dropSession(device)
        }
        if happens(plan.deviceRestores) {
            let backedUp = fleet.backedUp
            if !backedUp.isEmpty { try restore(devices[backedUp[faultRandom.below(backedUp.count)]]) }
        }
        if happens(plan.clockJumps) {
            let device = randomDevice()
            try settle(device)
            counters.fault(.clockJump, device: device.number)
            device.clock.skewMilliseconds += faultRandom.between(-600_000, 600_000)
        }
        if cloud != nil, happens(plan.cloudCrashes, perDevice: false) { crashCloud(restore: false) }
        if cloud != nil, !cloudHost.snapshots.isEmpty, happens(plan.cloudRestores, perDevice: false) { crashCloud(restore: true) }
    }

    func randomDevice() -> SimDevice { devices[faultRandom.below(devices.count)] }

    func partition() {
        let members: Set<Int>?
        switch faultRandom.below(100) {
        case 0..<50: members = [faultRandom.below(devices.count)]
        case 50..<85: members = Set((0..<devices.count).filter { _ in faultRandom.chance(0.4) })
        default: members = nil
        }
        let direction = faultRandom.below(10)
        let id = network.partition(members: members, blocksRequests: direction != 0, blocksReplies: direction != 1)
        counters.fault(.partition)
        queue.schedule(.heal(partition: id), at: world.milliseconds + faultRandom.between(5_000, 120_000))
    }

    /// Ends the device's sync session where it stands. The device must be
    /// settled: a reply it took and the loop has not acted on yet
    /// (`takeReply`) holds the session's latest report, and is dropped.
    func dropSession(_ device: SimDevice) {
        if let session = device.takenReply?.session ?? device.session { counters.absorb(session.report) }
        device.session = nil
        device.inFlight = nil
        device.takenReply = nil
    }

    /// The device's process dies: its sync session and anything in flight are
    /// gone; its store is opened again from what was committed.
    func crash(_ device: SimDevice) throws {
        try settle(device)
        counters.fault(.deviceCrash, device: device.number)
        dropSession(device)
        if case .file = device.location {
            try device.replace { try DeviceStore(at: device.location, options: device.storeOptions) }
        }
    }

    /// Backs the device up. With the call lane, the lane writes the file (the
    /// device is settled before anything reads the backup or the store).
    /// That takes it off the event loop, which near the end of the calls is
    /// the only thread with work.
    func takeBackup(_ device: SimDevice) throws {
        device.backupsTaken += 1
        let backup = SimDevice.Backup(path: directory + "/device-\(device.number)-backup-\(device.backupsTaken).slsnap",
                                      model: device.model, epoch: device.epoch, calls: device.calls, takenAt: world.milliseconds,
                                      positions: device.truth.positions)
        fleet.noteBackup(of: device)
        counters.record(RunEvent.deviceBackup, device: device.number)
        device.backups.append(backup)
        if device.backups.count > 3 {
            StoreFiles.remove(device.backups.removeFirst().path)
        }
        device.keepTruthForBackups()
        try handOff(device) { device in
            do {
                device.noteWaiting(try backup.write(device.store))
                return SimDevice.Turn()
            } catch {
                return SimDevice.Turn(failure: SimulationError("device \(device.number) could not be backed up: \(error)"))
            }
        }
    }

    /// Wipes the device and restores it from one of its backups (of random
    /// age), then lets the app reindex.
    func restore(_ device: SimDevice, from chosen: SimDevice.Backup? = nil) throws {
        try settle(device)
        let backup = chosen ?? device.backups[faultRandom.below(device.backups.count)]
        counters.fault(.deviceRestore, device: device.number)
        dropSession(device)
        let head = try device.store.verifyJournal().head
        // What an earlier restore owed the cloud but had not sent yet is
        // wiped with the device: only what the cloud acknowledged stays owed.
        let acknowledged = try device.store.syncStatus().acknowledged
        for epoch in device.mustHold.keys.sorted() where device.mustHold[epoch]! > acknowledged {
            device.mustHold[epoch] = acknowledged.epoch == epoch ? acknowledged : nil
        }
        // Nor can the cloud be owed more than it still holds: it may have been
        // restored since it acknowledged, and the wipe took the device's copies.
        try owe(device, atMost: cloudHolds(device))
        // A new file for each restore: the replaced store is closed first and
        // its files removed, so no connection outlives its file's name.
        let path = directory + "/" + Simulator.storeFile(device.number, generation: device.restores + 1)
        // What the wiped store purged must not come back with an older backup.
        device.purged.formUnion(try device.store.purgedPayloadHashes())
        let report: RestoreReport
        do {
            report = try DeviceStore.restore(snapshot: backup.path, to: path, force: true, purged: device.purged,
                                             options: storeOptions(clock: device.clock, random: device.random))
        } catch {
            throw SimulationError("device \(device.number) could not be restored from \(backup.path): \(error)")
        }
        if let kept = report.replacedStoreKeptAt { StoreFiles.remove(kept) }
        let replaced = device.location
        try device.replace { try DeviceStore(at: .file(path), options: device.storeOptions) }
        device.location = .file(path)
        // What the backup covers and the cloud's backup held may go at once;
        // a restore that forgot what the wiped store purged has purged already.
        if let purged = report.purge { device.noteWaiting(purged) } else { try device.purge() }
        if case .file(let old) = replaced { StoreFiles.remove(old) }
        // What the device was told was durable may be gone from a cloud
        // restored from an older backup; the restored journal has it or not.
        capDurableSeen(device, atMost: try reach(device, cloudHolds: cloudHolds(device)))
        // A backup of the current epoch: the restored device resends its
        // messages, so the cloud must end up with them. A backup of an epoch
        // the device had already left by an earlier restore: its tail beyond
        // what the cloud held when that epoch ended is lost for good (the
        // cloud refuses to grow an ended epoch), so nothing more is owed.
        // The same holds for a backup of the current epoch whose outbox ends
        // in an older epoch that the cloud has ended since (an earlier
        // incarnation began a later one there).
        if backup.outboxHead.seq > .beforeFirst && backup.epoch == device.epoch {
            let epoch = backup.outboxHead.epoch
            device.mustHold[epoch] = max(device.mustHold[epoch] ?? backup.outboxHead, backup.outboxHead)
            let held = try cloudHolds(device)
            if let newest = held.keys.max(), newest > epoch { try owe(device, atMost: held, in: [epoch]) }
        }
        if device.expected[report.newEpoch] != nil {
            findings.append("""
                device \(device.number) restored from a backup of epoch \(backup.epoch) began epoch \(report.newEpoch), \
                which it had already used: (epoch, seq) positions repeat
                """)
            counters.epochReuses += 1
        }
        device.restores += 1
        device.model = backup.model
        device.epoch = report.newEpoch
        // The restore's own call asks the cloud about votes beyond its journal.
        device.expected[report.newEpoch] = [[.reindexAsk]]
        if !report.deletedAgain.isEmpty || !report.activitiesDeletedAgain.isEmpty {
            // The restore deleted them in one call of its own, at the restore's time.
            let now = device.clock.now()
            let messages = report.deletedAgain.flatMap { key in device.model.deleteAgain(key, now: now, catalogue: catalogue) }
                + report.activitiesDeletedAgain.flatMap { key in device.model.deleteActivityAgain(key) }
            device.expected[report.newEpoch, default: []].append(messages)
            counters.itemsDeletedAgain += report.deletedAgain.count
            counters.activitiesDeletedAgain += report.activitiesDeletedAgain.count
        }
        restores.append(RestoreRecord(device: device.number, at: world.milliseconds - Simulator.start.millisecondsSince1970,
                                      backupAge: world.milliseconds - backup.takenAt,
                                      journalEventsLost: head.count(after: backup.journalHead),
                                      callsLost: device.calls - backup.calls))
        do {
            try device.store.processReindexRequests(with: SimReindexer(device: device, catalogue: catalogue))
        } catch {
            throw SimulationError("device \(device.number) could not reindex after its restore: \(error)")
        }
    }

    /// The cloud goes down; with `restore`, to come up from a backup.
    func crashCloud(restore: Bool) {
        counters.fault(restore ? .cloudRestore : .cloudCrash)
        cloudHost.crash()
        queue.schedule(.cloudUp(restore: restore, incarnation: cloudHost.incarnation),
                       at: world.milliseconds + faultRandom.between(2_000, 30_000))
        if restore { beginCloudRestore() }
    }

    /// Stages the cloud's restore from its latest backup, or a third of the
    /// time the one before, whose messages the devices may have dropped
    /// since (they make them again from their journals).
    func beginCloudRestore() {
        cloudHost.beginRestore { faultRandom.chance(1.0 / 3) }
    }

    /// Brings the cloud up. After a restore, what the restored cloud lacks a
    /// device sends again from its outbox or makes again from its journal;
    /// what neither the cloud nor the device's journal has (a wipe took it)
    /// is lost with both copies: no longer owed.
    func bringCloudUp(restore: Bool) throws {
        guard let held = try cloudHost.bringUp(restore: restore) else { return }
        // The operator crawls the app's pages again: the backup may predate
        // the crawl, and nobody else resends it. What the restored cloud has
        // already is left out.
        try cloud?.recordPages(crawledPages, app: options.app)
        for device in devices {
            let holds = try reach(device, cloudHolds: held[device.name] ?? [:])
            try owe(device, atMost: holds)
            capDurableSeen(device, atMost: holds)
        }
    }

    /// How far each epoch of `device` can still reach the cloud, which holds
    /// `held` of it: as far as the cloud holds it, or as far as the device's
    /// outbox or journal can send it again (`impliedOutboxHeads`), whichever
    /// is further. Only epochs where the cloud holds less than the device is
    /// owed or was told was durable matter to `owe` and `capDurableSeen`, so
    /// only those are looked up: the outbox head answers for its own epoch
    /// (the journal implies the same last message), and the journal is
    /// replayed only for an older one: replaying every device's journal after
    /// each cloud restore would be a large part of a run of thousands of devices.
    func reach(_ device: SimDevice, cloudHolds held: [Epoch: OutboxSeq]) throws -> [Epoch: OutboxSeq] {
        let short = Set(device.mustHold.compactMap { epoch, owed in owed.seq > (held[epoch] ?? .beforeFirst) ? epoch : nil })
            .union(device.durableSeen.compactMap { epoch, seen in seen > (held[epoch] ?? .beforeFirst) ? epoch : nil })
        guard !short.isEmpty else { return held }
        let head = try device.store.syncStatus().head
        let implied = short == [head.epoch] ? [head.epoch: head.seq] : try device.store.impliedOutboxHeads()
        return held.merging(implied, uniquingKeysWith: max)
    }

    /// Lowers what `device` is owed to at most `held` (the last seq per epoch
    /// some copy still has), for `epochs` or every epoch it is owed.
    func owe(_ device: SimDevice, atMost held: [Epoch: OutboxSeq], in epochs: [Epoch]? = nil) throws {
        for epoch in epochs ?? Array(device.mustHold.keys) {
            guard let owed = device.mustHold[epoch] else { continue }
            let last = held[epoch] ?? .beforeFirst
            if owed.seq > last { device.mustHold[epoch] = last > .beforeFirst ? OutboxPosition(epoch: epoch, seq: last) : nil }
        }
    }

    /// Lowers the durable watermarks `device` was told to at most `holds`
    /// per epoch. A durable message is in the cloud's latest backup; once the
    /// cloud is restored from an older one, only the cloud or the device's
    /// journal can still have it, and what neither has is lost with both.
    func capDurableSeen(_ device: SimDevice, atMost holds: [Epoch: OutboxSeq]) {
        for (epoch, seen) in device.durableSeen where seen > (holds[epoch] ?? .beforeFirst) {
            device.durableSeen[epoch] = holds[epoch] ?? .beforeFirst
        }
    }

    /// What the cloud holds of `device` now, per epoch, even while it is down.
    func cloudHolds(_ device: SimDevice) throws -> [Epoch: OutboxSeq] {
        try cloudHost.holds(device: device.name)
    }

    /// Takes a cloud snapshot, which becomes the cloud's backup once its
    /// file is written, `cloudSnapshotWriteTime` later.
    func takeCloudSnapshot() throws {
        if try cloudHost.takeSnapshot() {
            queue.schedule(.cloudSnapshotWritten, at: world.milliseconds + Simulator.cloudSnapshotWriteTime)
        }
    }

    /// A hostile device, enrolled like any other, attacks:
    /// 0. a frame signed with a made-up key in an honest device's name;
    /// 1. an honest frame replayed;
    /// 2. ballot stuffing: many votes with different tokens in one frame;
    /// 3. a signed frame at positions near 2^64;
    /// 4. poisoned content (`Simulator.poisoned`) for a catalogue entry it
    ///    never voted for;
    /// 5. a signal flood: one live vote for `Simulator.hostileTarget`, then
    ///    frames of its poisoned content (`Simulator.poisoned`) and
    ///    1,000-count signals for it; under private popularity also 100
    ///    reports of it that no coin flipped, and 10 made for another
    ///    sketch (`Simulator.hostileReports`);
    /// and, besides, in turn (`hostileText`), one of
    /// 6. content for its target whose title holds a NUL (which no store
    ///    keeps as written), signed, at its next position;
    /// 7. names no store keeps as written: enrolments as `hostile-device`
    ///    followed by a NUL or a control character, and a frame signed with
    ///    its own key naming itself with a NUL after its name (which a store
    ///    that ends text at a NUL would take as its own);
    /// 8. an expensive public search: 256 wildcard predicates on `**`, under
    ///    the public route's budget (`QueryBudget.publicSearchUnits`).
    /// The cloud must refuse 0–3, 6 and 7, count of 5 no more than the daily
    /// cap (`Invariant.hostileContained`), never show the poisoned content
    /// of 4 and 5 (public-index: a non-voter's content is no offer, and one
    /// voter's offer never agrees), and answer 8 within its budget or refuse
    /// it as too expensive. 4 and 5 need the embedded cloud's head for the
    /// device; without it (a remote or a down cloud) the attack is a forgery.
    func hostileFrame() {
        guard let hostileKey else { return }
        counters.fault(.hostileFrame)
        func vote() -> OutboxMessage {
            .vote(catalogue.sybil.hash, VoteToken((0..<16).map { _ in UInt8(truncatingIfNeeded: faultRandom.next()) })!)
        }
        func signed(_ messages: [OutboxMessage], epoch: Epoch = .first, from seq: OutboxSeq) -> [UInt8] {
            let records = zip(sequence(first: seq) { $0.next }, messages).map {
                OutboxRecord(position: OutboxPosition(epoch: epoch, seq: $0), message: $1)
            }
            return UploadFrame(app: options.app, device: Simulator.hostileName, records: records, key: hostileKey).encoded
        }
        hostileText()
        let attack = faultRandom.below(6)
        let head = attack >= 4 && options.remote == nil
            ? (try? cloud?.heldEpochs(app: options.app, device: Simulator.hostileName))?.map { $0[.first] ?? .beforeFirst } : nil
        let bytes: [UInt8]
        switch (attack, head) {
        case (1, _) where !network.captured.isEmpty:
            bytes = network.captured[faultRandom.below(network.captured.count)]
        case (2, _):
            bytes = signed((1...20).map { _ in vote() }, from: .first)
        case (3, _):
            // An epoch past any a frame may name: the cloud refuses it unread.
            bytes = signed([vote()], epoch: Epoch(UInt64.max - UInt64(faultRandom.below(1_000))), from: .first)
        case (4, let head?):
            let other = catalogue.entry((hostileTarget.number + 1) % catalogue.entries.count)
            bytes = signed([.content(other.hash, Simulator.poisoned(other))], from: head.next)
        case (5, let head?):
            let target = hostileTarget.hash
            let flood = [OutboxMessage.content(target, Simulator.poisoned(hostileTarget))]
                + Array(repeating: OutboxMessage.signal(target, Popularity(views: 1_000, shown: 1_000, engaged: 1_000)), count: 199)
                + (options.popularity.map { Simulator.hostileReports(of: target, $0) } ?? [])
            bytes = signed(head == .beforeFirst ? [.vote(target, Simulator.hostileToken)] + flood.dropLast() : flood, from: head.next)
        default:
            let victim = randomDevice()
            let forgedKey = (0..<32).map { _ in UInt8(truncatingIfNeeded: faultRandom.next()) }
            bytes = UploadFrame(app: options.app, device: victim.name,
                                records: [OutboxRecord(position: OutboxPosition(epoch: .first, seq: .first), message: vote())],
                                key: forgedKey).encoded
        }
        queue.schedule(.toCloud(from: nil, request: 0, bytes: bytes), at: world.milliseconds + network.latency())
    }

    /// Attacks 6 to 8, one each time in turn. They draw nothing from the
    /// run's random sources and go to the embedded cloud directly, not
    /// through the network: what they may change is only what the cloud
    /// must refuse, so every seed runs as it would without them, and
    /// anything they got in is the oracle's to find.
    func hostileText() {
        guard let hostileKey else { return }
        switch (counters.faults[.hostileFrame] ?? 0) % 3 {
        case 0:
            guard options.remote == nil, let cloud,
                  let head = (try? cloud.heldEpochs(app: options.app, device: Simulator.hostileName))?[.first] else { return }
            var poisoned = Simulator.poisoned(hostileTarget)
            poisoned.title = (poisoned.title ?? "") + "\u{0}Day"
            let record = OutboxRecord(position: OutboxPosition(epoch: .first, seq: head.next), message: .content(hostileTarget.hash, poisoned))
            _ = cloud.ingest(UploadFrame(app: options.app, device: Simulator.hostileName, records: [record], key: hostileKey).encoded)
        case 1:
            hostileNames()
            guard options.remote == nil, let cloud else { return }
            let record = OutboxRecord(position: OutboxPosition(epoch: .first, seq: .first),
                                      message: .vote(catalogue.sybil.hash, Simulator.hostileToken))
            _ = cloud.ingest(UploadFrame(app: options.app, device: DeviceID(Simulator.hostileName.rawValue + "\u{0}x"),
                                         records: [record], key: hostileKey).encoded)
        default:
            guard options.remote == nil, let cloud else { return }
            hostileSearch(cloud)
        }
    }

    /// Attack 7's enrolments: names with a NUL or a control character after
    /// the hostile device's own. Each must be refused; a key the cloud gave
    /// for one is a finding of `hostile-contained`.
    func hostileNames() {
        for suffix in ["\u{0}x", "\u{1B}[2J", "\n", "\u{2028}"] {
            let name = DeviceID(Simulator.hostileName.rawValue + suffix)
            let enrolled: Bool
            if let remote = options.remote {
                enrolled = (try? remote.enrol(app: options.app, device: name)) != nil
            } else {
                enrolled = (try? cloud?.enrol(app: options.app, device: name, enrolmentSecret: Simulator.enrolmentSecret, proof: nil)) != nil
            }
            if enrolled { counters.hostileFindings.append("the cloud enrolled \(TextRule.printable(name.rawValue))") }
        }
    }

    /// Attack 8: a public search of 256 wildcard predicates on `**`, under
    /// the public route's budget. It is answered or refused as too
    /// expensive; anything else is a finding of `hostile-contained`.
    func hostileSearch(_ cloud: any CloudStore) {
        // 256 predicates of 31 characters: as long as a query may be.
        let pattern = "*e*e*e*e*e*e*e*q*"
        let query = (0..<QueryLimits.predicates).map { _ in #"** == "\#(pattern)"cd"# }.joined(separator: " || ")
        do {
            let filter = CompiledQuery(try QueryParser.parse(query), now: cloud.now)
            _ = try cloud.search(app: options.app, text: "", filter: filter, limit: 20,
                                 budget: QueryBudget(units: QueryBudget.publicSearchUnits))
            counters.hostileSearches.answered += 1
        } catch let error as CloudError where error.code == .queryTooExpensive {
            counters.hostileSearches.refused += 1
        } catch {
            counters.hostileFindings.append("the hostile search failed otherwise than as too expensive: \(error)")
        }
    }

    /// The hostile device's reports of `target`: 100 that say it as loudly as
    /// a report can (each hash function in turn, a row each, the sign no
    /// coin flipped), then 10 made for a sketch with one more hash function,
    /// which the cloud must drop.
    static func hostileReports(of target: PublicHash, _ settings: PrivatePopularity) -> [OutboxMessage] {
        let sketch = settings.sketch
        let loud = (0..<100).map { index -> OutboxMessage in
            let function = index % sketch.k, row = (index * 7) % sketch.m
            let bucket = sketch.bucket(target.bytes, hash: function)
            return .report(PrivateReport(settings: settings, function: function, row: row,
                                         positive: (row & bucket).nonzeroBitCount % 2 == 0))
        }
        let other = (0..<10).compactMap { index in
            try? PrivateReport(epsilonThousandths: settings.epsilonThousandths, hashes: settings.hashes + 1, buckets: settings.buckets,
                               function: index, row: index, positive: true)
        }.map(OutboxMessage.report)
        return loud + other
    }

    /// The catalogue entry the hostile device votes for and floods.
    var hostileTarget: Catalogue.Entry { Simulator.hostileTarget(catalogue) }

    static func hostileTarget(_ catalogue: Catalogue) -> Catalogue.Entry { catalogue.entry(min(1, catalogue.entries.count - 1)) }

    /// The app's web pages the operator crawls when the cloud is set up and
    /// after each restore (`CloudStore.recordPages`): one catalogue entry in
    /// three (1, 4, 7…, the hostile target among them) has a page, whose
    /// markup gives a title, description and deep link of its own.
    static func crawledPages(_ catalogue: Catalogue) -> [CrawledPage] {
        catalogue.entries.filter { $0.number % 3 == 1 }.map { entry in
            CrawledPage(url: entry.url, title: "\(entry.title), the page", description: "What the page of entry \(entry.number) says.",
                        keywords: entry.keywords, deepLink: "sim://place/\(entry.number)", type: "place")
        }
    }

    /// The content the hostile device offers for `entry`: the entry's own,
    /// with a title of its choosing (same URL, so the same public hash).
    static func poisoned(_ entry: Catalogue.Entry) -> PublicContent {
        var content = entry.content
        content.title = "Poisoned " + (content.title ?? "")
        return content
    }
}
