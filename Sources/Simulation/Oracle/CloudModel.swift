import CloudCore
import CloudSQLite
import IndexModel
import SyncWire

/// The oracle's cloud: the fold of the messages the cloud holds, written from
/// the semantics (a vote counts once per device while live; a device's signals
/// add while its vote is live, up to its daily allowance per hash; under
/// private popularity a device's reports count up to its daily allowance).
struct CloudModel {
    struct Entry {
        var live: Set<DeviceID> = []
        var everVoted: Set<DeviceID> = []
        var popularity = Popularity()
        /// What each device added on the day it last signalled.
        var allowances: [DeviceID: PopularityRule.Allowance] = [:]
        /// Reports of the entry the cloud counted: the truth its sketch estimates.
        var reports = 0
    }

    var entries: [Int: Entry] = [:]
    /// The app's private popularity (nil: exact, and no report counts).
    var privately: PrivatePopularity?
    /// Every report the cloud counted, whatever its entry.
    private(set) var reportsCounted = 0
    /// What each device reported on its last day of reports.
    private var reportAllowances: [DeviceID: ReportRule.Allowance] = [:]

    mutating func apply(_ message: ExpectedMessage, device: DeviceID, day: Int64) {
        switch message {
        case .vote(let number):
            // In place: a copy of the entry would copy its sets, which hold
            // every voter of a popular entry, on every vote.
            entries[number, default: Entry()].live.insert(device)
            entries[number, default: Entry()].everVoted.insert(device)
        case .withdraw(let number):
            entries[number, default: Entry()].live.remove(device)
        case .view(let number):
            signal(number, Popularity(views: 1), device: device, day: day)
        case .shown(let number):
            signal(number, Popularity(shown: 1), device: device, day: day)
        case .engaged(let number):
            signal(number, Popularity(engaged: 1), device: device, day: day)
        case .report(let number):
            guard let privately else { return }
            let admitted = ReportRule.admit(1, on: day, after: reportAllowances[device], perDay: privately.reportsPerDay)
            reportAllowances[device] = admitted.allowance
            guard admitted.counted == 1 else { return }
            reportsCounted += 1
            if number != ExpectedMessage.unnamed { entries[number, default: Entry()].reports += 1 }
        case .reindexAsk:
            break
        }
    }

    mutating func signal(_ number: Int, _ counts: Popularity, device: DeviceID, day: Int64) {
        guard entries[number]?.live.contains(device) == true else { return }
        let used = entries[number]?.allowances[device] ?? PopularityRule.Allowance(day: day, used: Popularity())
        let admitted = PopularityRule.admit(counts, on: day, after: used)
        // In place, as a vote is.
        entries[number, default: Entry()].allowances[device] = admitted.allowance
        entries[number, default: Entry()].popularity += admitted.counted
    }

    /// The message a call implied that `message` is, or nil for content and
    /// for hashes no catalogue entry has; a report names no entry.
    static func expected(_ message: OutboxMessage, _ catalogue: Catalogue) -> ExpectedMessage? {
        if case .report = message { return .report(ExpectedMessage.unnamed) }
        if case .reindexAsk = message { return .reindexAsk }
        guard let hash = message.hash, let number = catalogue.number(of: hash) else { return nil }
        switch message {
        case .vote: return .vote(number)
        case .withdraw: return .withdraw(number)
        case .signal(_, let counts):
            if counts == Popularity(views: 1) { return .view(number) }
            if counts == Popularity(shown: 1) { return .shown(number) }
            if counts == Popularity(engaged: 1) { return .engaged(number) }
            return nil
        case .content, .page, .report, .reindexAsk, .contentPurged, .contentWithheld: return nil
        }
    }
}
