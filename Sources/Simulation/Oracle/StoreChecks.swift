import CloudCore
import CloudSQLite
import DeviceStore
import Foundation
import IndexModel
import SyncWire

/// What the checks found on one device.
struct DeviceCheck {
    let device: Int
    var journal: JournalVerification?
    var journalProblems: [String] = []
    var indexProblems: [String] = []
    var returnedProblems: [String] = []
    var rebuildProblems: [String] = []
    var budgetProblems: [String] = []
    /// The public hashes the store holds a live vote for.
    var votes: Set<PublicHash> = []
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
        // A sleeping store is woken for the check alone, and let go after it.
        let store: DeviceStore
        do {
            store = try device.storeForReading()
        } catch {
            result.journalProblems.append("device \(device.number) cannot be read: \(error)")
            return result
        }
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
            // Every backup is followed by a purge, and a restore purges again
            // what its wiped store had. A purge takes only what a backup
            // covers: a device never backed up (most, on a large day) has
            // nothing it must have purged, and is spared the journal's reading.
            if device.backupsTaken > 0 {
                let unpurged = try store.purge(dryRun: true)
                if !unpurged.purgedSeqs.isEmpty {
                    result.returnedProblems.append("""
                        device \(device.number) still holds the content of \((unpurged.items.map(\.description) + unpurged.activities).prefix(3).joined(separator: ", ")) \
                        (seqs \(unpurged.purgedSeqs.prefix(5).map(\.description).joined(separator: ", "))), deleted and backed up but not purged
                        """)
                }
            }
            result.votes = Set(try store.liveVotes())
            let ledger = try store.privacyLedger()
            let allowed = device.model.privately.map(PrivacyBudget.dailyThousandths) ?? 0
            for (day, spent) in ledger.sorted(by: { $0.key < $1.key }) where spent > allowed {
                result.budgetProblems.append("device \(device.number) spent ε \(PrivatePopularity.decimal(Int(spent))) on day \(day), above its \(PrivatePopularity.decimal(allowed))")
            }
            if ledger != device.model.spent.mapValues(Int64.init) {
                result.budgetProblems.append("device \(device.number)'s privacy ledger is \(ledger.sorted { $0.key < $1.key }); its calls imply \(device.model.spent.sorted { $0.key < $1.key })")
            }
            if devices.count <= 500 || device.number % (devices.count / 100) == 0 {
                if try store.projectionDigest() != store.rebuiltProjectionDigest() {
                    result.rebuildProblems.append("device \(device.number): its projections differ from a rebuild of its journal")
                }
            }
        } catch {
            result.journalProblems.append("device \(device.number) cannot be read: \(error)")
        }
        // The run is over: without this, the statements the checks prepare
        // would stay on every store and add to the run's peak memory.
        store.releaseStatements()
        return result
    }
}

/// The checks of the cloud store against itself: its log's hash chain, and
/// its projections against a rebuild from the log.
final class CloudChecks {
    let cloud: any CloudStore
    private(set) var journalProblems: [String] = []
    private(set) var rebuildProblems: [String] = []

    init(cloud: any CloudStore) { self.cloud = cloud }

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
