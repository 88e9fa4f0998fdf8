import CloudCore
import CloudSQLite
import IndexModel
import SyncWire

/// One device's new messages in the cloud log, by epoch, in seq order.
typealias HeldLog = [Epoch: [RunEvidence.Held]]

/// The oracle's reading of the cloud log: each device's messages matched,
/// epoch by epoch, against the groups its calls implied (a group is one
/// call's messages, in any order within it), and the oracle's cloud folded
/// from the matched ones, then from what the hostile device got in. It also
/// checks that each (device, epoch) is dense from seq 1 and that devices'
/// content is the catalogue's.
///
/// The log is read one device at a time (`read`, in the order of
/// `CloudStore.scanLogByDevice`), and nothing of a device's messages is kept
/// once read, so the checks of a large run never hold the whole log. The
/// oracle's cloud adds each device's messages on their own (a vote counts
/// per device, allowances are per device), so the order of devices does
/// not change it.
struct Matching {
    /// The oracle's cloud from the honest devices' messages.
    var honest = CloudModel()
    /// The same with the hostile device's messages the cloud took.
    var model = CloudModel()
    var messageProblems: [String] = []
    var lossProblems: [String] = []
    var hostileProblems: [String] = []
    /// What the hostile device's signals added to its target's counts, and
    /// on how many days it sent.
    var hostileAdded = Popularity()
    var hostileDays: UInt64 = 0
    /// The hostile device's reports the cloud counted.
    var hostileReports = 0
    /// Held messages no call implied (or implied once and held twice).
    var extraMessages = 0
    /// Messages calls implied that the cloud does not hold.
    var missingMessages = 0
    /// A (device, epoch) whose seqs are not dense from 1 (`cloud-log-dense`).
    var denseProblems: [String] = []
    /// Content from a device that is not the catalogue's (`public-index`).
    var contentProblems: [String] = []

    private let devices: [SimDevice]
    private let heads: [OutboxPosition?]
    private let catalogue: Catalogue
    /// Each simulated device's number, by name, until `finish`.
    private var numbers: [DeviceID: Int]
    /// Which devices `read` has matched, by number, until `finish`.
    private var matched: [Bool]

    /// Begins a reading of the log of `evidence`'s run.
    init(_ evidence: RunEvidence) {
        devices = evidence.devices
        heads = evidence.heads
        catalogue = evidence.catalogue
        model.privately = evidence.privately
        numbers = Dictionary(evidence.devices.map { ($0.name, $0.number) }, uniquingKeysWith: { first, _ in first })
        matched = [Bool](repeating: false, count: evidence.devices.count)
    }

    /// Reads the messages of every device of `log` (a test's log, whole),
    /// then finishes.
    init(_ evidence: RunEvidence, log: [DeviceID: HeldLog]) {
        self.init(evidence)
        for name in log.keys.sorted() { read(name, log[name] ?? [:]) }
        finish(evidence)
    }

    /// Reads one device's messages, all of them at once: each device is
    /// read once.
    mutating func read(_ name: DeviceID, _ held: HeldLog) {
        let epochs = held.sorted { $0.key < $1.key }
        checkDense(name, epochs)
        if name != Simulator.hostileName { checkContent(name, epochs) }
        if let number = numbers[name] {
            matched[number] = true
            match(devices[number], head: heads[number], held: held, catalogue)
        } else if name != Simulator.hostileName {
            messageProblems.append("the cloud log holds frames of \(name), which is no simulated device")
        }
    }

    /// Matches the devices the log holds nothing of (all they implied is
    /// missing), then folds in the hostile device's messages (`evidence`'s
    /// `hostileMessages`, read with the log).
    mutating func finish(_ evidence: RunEvidence) {
        for (number, wasRead) in matched.enumerated() where !wasRead {
            match(devices[number], head: heads[number], held: [:], catalogue)
        }
        // Kept with the run's reading: what only the reading needed goes.
        numbers = [:]
        matched = []
        honest = model
        foldHostile(evidence)
    }

    /// Each check takes the device's epochs in order.
    private typealias Epochs = [(key: Epoch, value: [RunEvidence.Held])]

    private mutating func checkDense(_ name: DeviceID, _ epochs: Epochs) {
        for (epoch, messages) in epochs {
            var last = OutboxSeq.beforeFirst
            for message in messages {
                guard message.seq == last.next else {
                    denseProblems.append("the cloud log holds \(name) epoch \(epoch) seq \(message.seq) after seq \(last)")
                    break
                }
                last = message.seq
            }
        }
    }

    private mutating func checkContent(_ name: DeviceID, _ epochs: Epochs) {
        for (_, messages) in epochs {
            for case .content(let hash, let content) in messages.map(\.message) {
                if let number = catalogue.number(of: hash) {
                    if catalogue.entry(number).content != content {
                        contentProblems.append("content for entry \(number) from \(name) differs from the catalogue's")
                    }
                } else {
                    contentProblems.append("\(name) sent content for a hash no catalogue entry has")
                }
            }
        }
    }

    private mutating func match(_ device: SimDevice, head: OutboxPosition?, held: [Epoch: [RunEvidence.Held]], _ catalogue: Catalogue) {
        for epoch in held.keys.sorted() where device.expected[epoch] == nil {
            messageProblems.append("the cloud holds messages of device \(device.number) in epoch \(epoch), which the device never wrote in")
        }
        for (epoch, groups) in device.expected.sorted(by: { $0.key < $1.key }) {
            let messages = held[epoch] ?? []
            // Content, what a purge of the cloud log left of it, and a
            // device's withheld answer are checked on their own.
            let plain = messages.filter {
                switch $0.message {
                case .content, .contentPurged, .contentWithheld: false
                default: true
                }
            }
            var position = 0
            for group in groups where position < plain.count {
                let take = plain[position..<min(position + group.count, plain.count)]
                let actual = take.compactMap { CloudModel.expected($0.message, catalogue) }
                let at = take.first.map { "seq \($0.seq)" } ?? "the end"
                guard actual.count == take.count else {
                    messageProblems.append("device \(device.number) epoch \(epoch): the cloud holds a message for a hash no catalogue entry has")
                    break
                }
                if take.count == group.count {
                    guard actual.sorted() == group.sorted() else {
                        messageProblems.append("""
                            device \(device.number) epoch \(epoch) \(at): the cloud holds \
                            \(actual.map(\.description).joined(separator: ", ")); the calls imply \
                            \(group.map(\.description).joined(separator: ", "))
                            """)
                        break
                    }
                } else {
                    var remaining = group
                    for message in actual {
                        guard let index = remaining.firstIndex(of: message) else {
                            messageProblems.append("device \(device.number) epoch \(epoch) \(at): the cloud holds \(message), which no call implied there")
                            break
                        }
                        remaining.remove(at: index)
                    }
                }
                // A held report names no entry: the call's reports, in order, say which it was.
                var named = group.filter { if case .report = $0 { true } else { false } }.map(\.entry)[...]
                for (message, source) in zip(actual, take) {
                    let applied = if case .report = message, let entry = named.popFirst() { ExpectedMessage.report(entry) } else { message }
                    model.apply(applied, device: device.name, day: source.day)
                }
                position += take.count
            }
            let implied = groups.reduce(0) { $0 + $1.count }
            extraMessages += max(0, plain.count - implied)
            missingMessages += max(0, implied - plain.count)
            if position < plain.count {
                messageProblems.append("""
                    device \(device.number) epoch \(epoch): the cloud holds \(plain.count - position) message(s) after \
                    everything the calls imply, from seq \(plain[position].seq)
                    """)
            }
            let lastHeld = messages.last?.seq ?? .beforeFirst
            if epoch == device.epoch {
                let wanted = head.map { $0.epoch == epoch ? $0.seq : .beforeFirst } ?? .beforeFirst
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

    /// The hostile device's messages the cloud took: only its vote for its
    /// target and signals for it may be there, and they count, within the
    /// daily cap, as any device's would.
    private mutating func foldHostile(_ evidence: RunEvidence) {
        let catalogue = evidence.catalogue
        let target = evidence.hostileTarget
        for held in evidence.hostileMessages {
            switch held.message {
            case .vote(target.hash, Simulator.hostileToken):
                model.apply(.vote(target.number), device: Simulator.hostileName, day: held.day)
            case .signal(target.hash, let counts):
                model.signal(target.number, counts, device: Simulator.hostileName, day: held.day)
            case .report(let report) where evidence.privately?.fits(report) == true:
                model.apply(.report(target.number), device: Simulator.hostileName, day: held.day)
            case .report:
                // Made for another sketch: the cloud drops it.
                break
            case .content(let hash, let content) where catalogue.number(of: hash).map { content == Simulator.poisoned(catalogue.entry($0)) } == true:
                // The voter's offer for its own entry, ignored for any other;
                // public-index checks that it never shows.
                break
            case .contentPurged(let hash, _) where catalogue.number(of: hash) != nil:
                // The same, once a purge of the cloud log took it out.
                break
            default:
                if hostileProblems.count < 5 { hostileProblems.append("the cloud log took \(held.message) from the hostile device") }
            }
        }
        hostileDays = UInt64(Set(evidence.hostileMessages.map(\.day)).count)
        let full = model.entries[target.number]?.popularity ?? Popularity()
        let honestPart = honest.entries[target.number]?.popularity ?? Popularity()
        hostileAdded = Popularity(views: full.views - honestPart.views, shown: full.shown - honestPart.shown,
                                  engaged: full.engaged - honestPart.engaged)
        let cap = PopularityRule.maximumPerDevicePerDay * hostileDays
        if hostileAdded.views > cap || hostileAdded.shown > cap || hostileAdded.engaged > cap {
            hostileProblems.append("the hostile device's signals counted \(Invariant.describe(hostileAdded)) over \(hostileDays) day(s), above \(cap) each")
        }
        hostileReports = model.reportsCounted - honest.reportsCounted
        let reportCap = (evidence.privately?.reportsPerDay ?? 0) * Int(hostileDays)
        if hostileReports > reportCap {
            hostileProblems.append("the hostile device's reports counted \(hostileReports) times over \(hostileDays) day(s), above \(reportCap)")
        }
    }
}
