import CloudIndex
import DeviceStore
import Foundation
import IndexModel
import SyncWire

/// One checked property of a finished run.
public struct InvariantResult: Hashable, Sendable {
    public let name: String
    public let passed: Bool
    /// What was checked, or the first divergence in words.
    public let detail: String
}

/// The checks at the end of a run: the oracle against the real stores.
struct Invariants {
    let simulator: Simulator
    let converged: Bool

    /// The messages the cloud log holds for one (device, epoch), new ones
    /// only, in position order.
    struct Held {
        /// Each message with its seq and the day of cloud time it was accepted on.
        var messages: [(seq: OutboxSeq, message: OutboxMessage, day: Int64)] = []
    }

    /// Messages counted while checking.
    struct Tally {
        /// Held messages no call implied (or implied once and held twice).
        var extraMessages = 0
        /// Messages calls implied that the cloud does not hold.
        var missingMessages = 0
        /// Each device's verified journal, by device number, for the digest.
        var journals: [Int: JournalVerification] = [:]
    }

    func run() -> ([InvariantResult], Tally) {
        var results: [InvariantResult] = []
        var tally = Tally()
        func check(_ name: String, _ problems: [String], _ passed: String) {
            results.append(InvariantResult(name: name, passed: problems.isEmpty,
                                           detail: problems.first.map { problems.count > 1 ? "\($0) (and \(problems.count - 1) more)" : $0 } ?? passed))
        }
        let catalogue = simulator.catalogue
        let threshold = simulator.options.threshold
        check("converged", converged ? [] : ["the run did not go quiet within \(Simulator.convergenceLimit / 60_000) virtual minutes of the faults ending"],
              "quiet \(simulator.convergenceMilliseconds / 1_000) virtual seconds after the faults ended")

        let cloud: CloudIndex
        do {
            cloud = try simulator.cloud ?? CloudIndex(at: .file(simulator.cloudPath))
        } catch {
            check("cloud-readable", ["the cloud store cannot be opened: \(error)"], "")
            return (results, tally)
        }

        // Each device's own checks read only that device, and the cloud's
        // only the cloud: with the call lane (idle now) the lane checks
        // devices from the last one down at once, and runs the cloud's checks
        // as soon as this thread is done reading the cloud; this thread then
        // checks devices from the first one up, until the two meet. (At
        // 10,000 devices this thread's reading and matching of the cloud log
        // took 2 s, the cloud's checks 3.5 s, the devices' 7 s.)
        let cloudChecks = LaneCargo(value: CloudChecks(cloud: cloud))
        let deviceChecks = DeviceChecks(devices: simulator.devices,
                                        cloudChecks: simulator.lane == nil ? nil : { cloudChecks.value.run() })
        let checksJob = simulator.lane?.hand { deviceChecks.run(fromEnd: true) }

        // The cloud log, per device and epoch.
        var held: [DeviceID: [Epoch: Held]] = [:]
        var logProblems: [String] = []
        var contentProblems: [String] = []
        var hostileMessages: [(message: OutboxMessage, day: Int64)] = []
        do {
            try cloud.scanLog { record in
                let new = record.messages.dropFirst(record.firstSeq.count(before: record.acceptedFrom))
                if record.device == Simulator.hostileName {
                    let day = PopularityRule.day(milliseconds: record.receivedAt.millisecondsSince1970)
                    hostileMessages += new.map { ($0, day) }
                }
                var epoch = held[record.device, default: [:]][record.epoch, default: Held()]
                let day = PopularityRule.day(milliseconds: record.receivedAt.millisecondsSince1970)
                for (seq, message) in zip(sequence(first: record.acceptedFrom) { $0.next }, new) {
                    let last = epoch.messages.last?.seq ?? .beforeFirst
                    if seq != last.next {
                        logProblems.append("the cloud log holds \(record.device) epoch \(record.epoch) seq \(seq) after seq \(last)")
                    }
                    epoch.messages.append((seq, message, day))
                    if case .content(let hash, let content) = message, record.device != Simulator.hostileName {
                        if let number = catalogue.number(of: hash) {
                            if catalogue.entry(number).content != content {
                                contentProblems.append("content for entry \(number) from \(record.device) differs from the catalogue's")
                            }
                        } else {
                            contentProblems.append("\(record.device) sent content for a hash no catalogue entry has")
                        }
                    }
                }
                held[record.device, default: [:]][record.epoch] = epoch
                return true
            }
        } catch {
            logProblems.append("the cloud log cannot be read: \(error)")
        }

        // Each device's messages against the groups its calls implied; the
        // matched messages fold into the oracle's counts.
        var model = CloudModel()
        var messageProblems: [String] = []
        var lossProblems: [String] = []
        let names = Set(simulator.devices.map(\.name))
        for device in simulator.devices {
            let epochs = held[device.name] ?? [:]
            for epoch in epochs.keys.sorted() where device.expected[epoch] == nil {
                messageProblems.append("the cloud holds messages of device \(device.number) in epoch \(epoch), which the device never wrote in")
            }
            for epoch in device.expected.keys.sorted() {
                let groups = device.expected[epoch]!
                let messages = epochs[epoch]?.messages ?? []
                let plain = messages.filter { if case .content = $0.message { false } else { true } }
                var position = 0
                for group in groups where position < plain.count {
                    let take = plain[position..<min(position + group.count, plain.count)]
                    let actual = take.compactMap { Invariants.expected($0.message, catalogue) }
                    guard actual.count == take.count else {
                        messageProblems.append("device \(device.number) epoch \(epoch): the cloud holds a message for a hash no catalogue entry has")
                        break
                    }
                    if take.count == group.count {
                        guard actual.sorted() == group.sorted() else {
                            messageProblems.append("""
                                device \(device.number) epoch \(epoch) seq \(take.first!.seq): the cloud holds \
                                \(actual.map(\.description).joined(separator: ", ")); the calls imply \
                                \(group.map(\.description).joined(separator: ", "))
                                """)
                            break
                        }
                    } else {
                        var remaining = group
                        for message in actual {
                            guard let index = remaining.firstIndex(of: message) else {
                                messageProblems.append("device \(device.number) epoch \(epoch) seq \(take.first!.seq): the cloud holds \(message), which no call implied there")
                                break
                            }
                            remaining.remove(at: index)
                        }
                    }
                    for (message, source) in zip(actual, take) { model.apply(message, device: device.name, day: source.day) }
                    position += take.count
                }
                let implied = groups.reduce(0) { $0 + $1.count }
                tally.extraMessages += max(0, plain.count - implied)
                tally.missingMessages += max(0, implied - plain.count)
                if position < plain.count {
                    messageProblems.append("""
                        device \(device.number) epoch \(epoch): the cloud holds \(plain.count - position) message(s) after \
                        everything the calls imply, from seq \(plain[position].seq)
                        """)
                }
                let lastHeld = messages.last?.seq ?? .beforeFirst
                if epoch == device.epoch {
                    let head = (try? device.store.syncStatus().head) ?? .nothing
                    let wanted = head.epoch == epoch ? head.seq : .beforeFirst
                    if lastHeld < wanted || plain.count < implied {
                        lossProblems.append("""
                            device \(device.number): the cloud holds its current epoch \(epoch) through seq \(lastHeld) \
                            of \(wanted), \(plain.count) of the \(implied) messages its calls imply
                            """)
                    }
                } else {
                    let floor = max(device.mustHold[epoch]?.seq ?? .beforeFirst, device.durableSeen[epoch] ?? .beforeFirst)
                    if lastHeld < floor {
                        lossProblems.append("""
                            device \(device.number): the cloud holds ended epoch \(epoch) through seq \(lastHeld), \
                            but the device was told (or resent after its restore) up to seq \(floor)
                            """)
                    }
                }
            }
        }
        // The hostile device's messages the cloud took: only its vote for its
        // target and signals for it may be there, and they count, within the
        // daily cap, as any device's would.
        let honest = model
        var hostileProblems: [String] = []
        let target = simulator.hostileTarget
        for (message, day) in hostileMessages {
            switch message {
            case .vote(target.hash, Simulator.hostileToken):
                model.apply(.vote(target.number), device: Simulator.hostileName, day: day)
            case .signal(target.hash, let counts):
                model.signal(target.number, counts, device: Simulator.hostileName, day: day)
            case .content(let hash, let content) where catalogue.number(of: hash).map { content == Simulator.poisoned(catalogue.entry($0)) } == true:
                // The voter's offer for its own entry, ignored for any other;
                // public-index checks that it never shows.
                break
            default:
                if hostileProblems.count < 5 { hostileProblems.append("the cloud log took \(message) from the hostile device") }
            }
        }
        let hostileDays = UInt64(Set(hostileMessages.map(\.day)).count)
        let full = model.entries[target.number]?.popularity ?? Popularity()
        let honestPart = honest.entries[target.number]?.popularity ?? Popularity()
        let added = Popularity(views: full.views - honestPart.views, shown: full.shown - honestPart.shown,
                               engaged: full.engaged - honestPart.engaged)
        let cap = PopularityRule.maximumPerDevicePerDay * hostileDays
        if added.views > cap || added.shown > cap || added.engaged > cap {
            hostileProblems.append("the hostile device's signals counted \(Invariants.describe(added)) over \(hostileDays) day(s), above \(cap) each")
        }
        for name in held.keys.sorted() where !names.contains(name) && name != Simulator.hostileName {
            messageProblems.append("the cloud log holds frames of \(name), which is no simulated device")
        }
        check("cloud-log-dense", logProblems, "every (device, epoch) in the cloud log is dense from seq 1")
        check("acknowledged-not-lost", lossProblems,
              "the cloud holds every message of each device's current epoch, and of each ended epoch what the device was told was durable")
        messageProblems += simulator.findings.filter { $0.contains(SimDevice.notTheLast) }
        check("messages-match-calls", messageProblems,
              "every message in the cloud log is one the device's calls implied, once, in order")

        // Counts, exactly.
        var countProblems: [String] = []
        var publicProblems: [String] = contentProblems
        var counted = 0
        for number in 0...catalogue.sybil.number {
            let entry = catalogue.entry(number)
            let expected = model.entries[number]
            let actual: HashEntry?
            do {
                actual = try cloud.entry(app: simulator.options.app, hash: entry.hash)
            } catch {
                countProblems.append("entry \(number) cannot be read from the cloud: \(error)")
                continue
            }
            if actual != nil { counted += 1 }
            let live = expected?.live.count ?? 0
            let voters = expected?.everVoted.count ?? 0
            let popularity = expected?.popularity ?? Popularity()
            let got = (live: actual?.liveVotes ?? 0, voters: actual?.voters ?? 0, popularity: actual?.popularity ?? Popularity())
            if got.live != live || got.voters != voters || got.popularity != popularity {
                countProblems.append("""
                    entry \(number): the cloud counts \(got.live) live votes, \(got.voters) voters, \(Invariants.describe(got.popularity)); \
                    the oracle \(live), \(voters), \(Invariants.describe(popularity))
                    """)
            }
            // The honest devices whose vote the cloud counts live and that
            // can answer for the entry: each offers the catalogue's content
            // (`ContentRule`). A device restored from a backup may hold a
            // vote the cloud no longer counts, or the other way round.
            let agreeing = simulator.devices.filter { $0.model.holdsLiveVote(number) && expected?.live.contains($0.name) == true }.count
            let isPublic = actual?.isPublic ?? false
            if live < threshold && isPublic {
                publicProblems.append("entry \(number) is public with \(live) live votes, below K = \(threshold)")
            }
            if live >= threshold && agreeing >= threshold && !isPublic {
                publicProblems.append("""
                    entry \(number) has \(live) live votes (K = \(threshold)) and \(agreeing) live voters that can send the same content, \
                    but is not public
                    """)
            }
            if isPublic, actual?.content != entry.content {
                publicProblems.append("entry \(number) is public with content that differs from the catalogue's")
            }
        }
        let entries = (try? cloud.entries(app: simulator.options.app).count) ?? -1
        if entries != counted {
            countProblems.append("the cloud counts \(entries) hashes, \(entries - counted) of them no catalogue entry's")
        }
        check("counts-exact", countProblems, "views, impressions, engagements, live votes and voters equal the oracle's for all \(counted) counted entries")
        check("public-index", publicProblems,
              "public exactly the entries with at least K = \(threshold) live votes and K live voters able to agree, with the catalogue's content")

        let sybil = try? cloud.entry(app: simulator.options.app, hash: catalogue.sybil.hash)
        check("sybil-never-public", (sybil?.isPublic ?? false) || (sybil?.liveVotes ?? 0) >= threshold
              ? ["the Sybil group's entry reached \(sybil?.liveVotes ?? 0) live votes (K = \(threshold))"] : [],
              simulator.plan.sybil ? "the Sybil group's entry has \(sybil?.liveVotes ?? 0) live votes, below K = \(threshold)" : "no Sybil group in this run")
        check("hostile-contained", hostileProblems, simulator.plan.hostile ? """
              of the hostile device's \(simulator.counters.faults[.hostileFrame] ?? 0) attacks the cloud took only its one vote, \
              its poisoned content (never public) and its signals, \(Invariants.describe(added)) of them counted (cap \(PopularityRule.maximumPerDevicePerDay) per day)
              """ : "no hostile device in this run")
        check("no-private-leak", simulator.counters.leaks > 0 ? ["\(simulator.counters.leaks) frame(s) carried the private canary"] : [],
              "no frame carried private text (\(simulator.counters.framesScanned) frames scanned)")

        // This thread is done with the cloud.
        deviceChecks.releaseCloud()
        deviceChecks.run(fromEnd: false)
        if let checksJob { simulator.lane?.settle(checksJob) } else { cloudChecks.value.run() }
        var journalProblems: [String] = []
        var indexProblems: [String] = []
        var returnedProblems: [String] = []
        var rebuildProblems: [String] = []
        for check in deviceChecks.checked {
            if let journal = check.journal { tally.journals[check.device] = journal }
            journalProblems += check.journalProblems
            indexProblems += check.indexProblems
            returnedProblems += check.returnedProblems
            rebuildProblems += check.rebuildProblems
        }
        journalProblems += cloudChecks.value.journalProblems
        rebuildProblems += cloudChecks.value.rebuildProblems
        check("journals-verify", journalProblems, "every device journal and the cloud log verify")
        check("device-index-matches-calls", indexProblems, "every device's index equals what its app's calls imply")
        check("no-deleted-item-returned", returnedProblems, "no item the app deleted is in any index")
        check("search-matches-calls", simulator.findings.filter { $0.contains("'s search") },
              "\(simulator.counters.searches) searches before engagements returned nothing the app deleted and found each live activity they looked for")
        check("projections-equal-rebuild", rebuildProblems, "the cloud's and the devices' projections equal rebuilds from their logs")
        check("epochs-never-reused", simulator.findings.filter { ["already used", "clock ran back", "not above"].contains(where: $0.contains) },
              "\(simulator.restores.count) restore(s), each in a new epoch")
        return (results, tally)
    }

    static func expected(_ message: OutboxMessage, _ catalogue: Catalogue) -> ExpectedMessage? {
        guard let number = catalogue.number(of: message.hash) else { return nil }
        switch message {
        case .vote: return .vote(number)
        case .withdraw: return .withdraw(number)
        case .signal(_, let counts):
            if counts == Popularity(views: 1) { return .view(number) }
            if counts == Popularity(shown: 1) { return .shown(number) }
            if counts == Popularity(engaged: 1) { return .engaged(number) }
            return nil
        case .content: return nil
        }
    }

    static func describe(_ popularity: Popularity) -> String {
        "\(popularity.views) views, \(popularity.shown) shown, \(popularity.engaged) engaged"
    }
}

/// What the checks found on one device.
struct DeviceCheck {
    let device: Int
    var journal: JournalVerification?
    var journalProblems: [String] = []
    var indexProblems: [String] = []
    var returnedProblems: [String] = []
    var rebuildProblems: [String] = []
}

/// The checks of each device's store against the oracle's model of it, run
/// by up to two threads at once: one takes devices from the first up, the
/// other from the last down, so that both finish together whatever each
/// device costs. A device is checked by one thread only, and reads nothing
/// another device's check writes.
///
/// The thread from the end also runs `cloudChecks`, once, as soon as the
/// other thread releases the cloud (`releaseCloud()`), which it waits for
/// when it runs out of devices first.
final class DeviceChecks: @unchecked Sendable {
    private let devices: [SimDevice]
    private let condition = NSCondition()
    /// Devices below `front` and from `back` on are taken.
    private var front = 0
    private var back: Int
    private var cloudChecks: (() -> Void)?
    private var cloudReleased = false

    init(devices: [SimDevice], cloudChecks: (() -> Void)? = nil) {
        self.devices = devices
        back = devices.count
        self.cloudChecks = cloudChecks
    }

    /// The other thread no longer reads the cloud: its checks may run.
    func releaseCloud() {
        condition.lock()
        cloudReleased = true
        condition.broadcast()
        condition.unlock()
    }

    /// What was found on each device, in device order, once both ends are done.
    var checked: [DeviceCheck] { fromStart + fromEnd.reversed() }
    private var fromStart: [DeviceCheck] = []
    private var fromEnd: [DeviceCheck] = []

    /// Checks devices from one end until none is left (from the end, with
    /// the cloud's checks as soon as the cloud is released).
    func run(fromEnd end: Bool) {
        var checked: [DeviceCheck] = []
        while true {
            if end, let cloud = takeCloudChecks(waiting: false) { cloud() }
            guard let number = take(fromEnd: end) else { break }
            checked.append(check(devices[number]))
        }
        if end, let cloud = takeCloudChecks(waiting: true) { cloud() }
        if end { fromEnd = checked } else { fromStart = checked }
    }

    /// The cloud's checks once released (waiting for that, or not), the first time only.
    private func takeCloudChecks(waiting: Bool) -> (() -> Void)? {
        condition.lock()
        defer { condition.unlock() }
        guard cloudChecks != nil else { return nil }
        while waiting && !cloudReleased { condition.wait() }
        guard cloudReleased else { return nil }
        defer { cloudChecks = nil }
        return cloudChecks
    }

    private func take(fromEnd: Bool) -> Int? {
        condition.lock()
        defer { condition.unlock() }
        guard front < back else { return nil }
        if fromEnd {
            back -= 1
            return back
        }
        front += 1
        return front - 1
    }

    private func check(_ device: SimDevice) -> DeviceCheck {
        var result = DeviceCheck(device: device.number)
        let store = device.store
        do {
            let journal = try store.verifyJournal()
            result.journal = journal
            if let problem = journal.firstProblem {
                result.journalProblems.append("device \(device.number): \(problem.message)")
            }
            for index in Set(AppTruth.indexes + (try store.indexNames())).sorted() {
                let items = try store.items(in: index).sorted { $0.uniqueIdentifier < $1.uniqueIdentifier }
                let expected = (device.model.items[index] ?? [:]).values.sorted { $0.uniqueIdentifier < $1.uniqueIdentifier }
                if items != expected {
                    let have = Set(items.map(\.uniqueIdentifier)), want = Set(expected.map(\.uniqueIdentifier))
                    let extra = have.subtracting(want).sorted(), missing = want.subtracting(have).sorted()
                    result.indexProblems.append("""
                        device \(device.number) index \(index): \(extra.isEmpty ? "" : "has \(extra.prefix(3).joined(separator: ", ")) it should not; ")\
                        \(missing.isEmpty ? "" : "lacks \(missing.prefix(3).joined(separator: ", ")); ")\
                        \(extra.isEmpty && missing.isEmpty ? "an item's fields differ from what the calls imply" : "")
                        """)
                }
                let deleted = Set(items.map(\.uniqueIdentifier)).subtracting(Set((device.truth.items[index] ?? [:]).keys))
                if !deleted.isEmpty {
                    result.returnedProblems.append("device \(device.number) index \(index) holds \(deleted.sorted().prefix(3).joined(separator: ", ")), which the app deleted")
                }
            }
            if devices.count <= 500 || device.number % (devices.count / 100) == 0 {
                if try store.projectionDigest() != store.rebuiltProjectionDigest() {
                    result.rebuildProblems.append("device \(device.number): its projections differ from a rebuild of its journal")
                }
            }
        } catch {
            result.journalProblems.append("device \(device.number) cannot be read: \(error)")
        }
        return result
    }
}

/// The checks of the cloud store against itself: its log's hash chain, and
/// its projections against a rebuild from the log.
final class CloudChecks {
    let cloud: CloudIndex
    private(set) var journalProblems: [String] = []
    private(set) var rebuildProblems: [String] = []

    init(cloud: CloudIndex) { self.cloud = cloud }

    func run() {
        do {
            if let problem = try cloud.verifyLog().firstProblem { journalProblems.append("cloud log: \(problem)") }
            if try cloud.projectionDigest() != cloud.rebuiltProjectionDigest() {
                rebuildProblems.append("the cloud's projections differ from a rebuild of its log")
            }
        } catch {
            journalProblems.append("the cloud cannot be read: \(error)")
        }
    }
}

/// The oracle's cloud: the fold of the messages the cloud holds, written from
/// the semantics (a vote counts once per device while live; a device's signals
/// add while its vote is live, up to its daily allowance per hash).
struct CloudModel {
    struct Entry {
        var live: Set<DeviceID> = []
        var everVoted: Set<DeviceID> = []
        var popularity = Popularity()
        /// What each device added on the day it last signalled.
        var allowances: [DeviceID: PopularityRule.Allowance] = [:]
    }

    var entries: [Int: Entry] = [:]

    mutating func apply(_ message: ExpectedMessage, device: DeviceID, day: Int64) {
        switch message {
        case .vote(let number):
            entries[number, default: Entry()].live.insert(device)
            entries[number]!.everVoted.insert(device)
        case .withdraw(let number):
            entries[number, default: Entry()].live.remove(device)
        case .view(let number):
            signal(number, Popularity(views: 1), device: device, day: day)
        case .shown(let number):
            signal(number, Popularity(shown: 1), device: device, day: day)
        case .engaged(let number):
            signal(number, Popularity(engaged: 1), device: device, day: day)
        }
    }

    mutating func signal(_ number: Int, _ counts: Popularity, device: DeviceID, day: Int64) {
        var entry = entries[number, default: Entry()]
        defer { entries[number] = entry }
        guard entry.live.contains(device) else { return }
        let used = entry.allowances[device] ?? PopularityRule.Allowance(day: day, used: Popularity())
        let admitted = PopularityRule.admit(counts, on: day, after: used)
        entry.allowances[device] = admitted.allowance
        entry.popularity += admitted.counted
    }
}
