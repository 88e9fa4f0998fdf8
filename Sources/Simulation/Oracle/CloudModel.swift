import CloudIndex
import IndexModel
import SyncWire

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
            var entry = entries[number, default: Entry()]
            entry.live.insert(device)
            entry.everVoted.insert(device)
            entries[number] = entry
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

    /// The message a call implied that `message` is, or nil for content and
    /// for reports and for hashes no catalogue entry has.
    static func expected(_ message: OutboxMessage, _ catalogue: Catalogue) -> ExpectedMessage? {
        guard let hash = message.hash, let number = catalogue.number(of: hash) else { return nil }
        switch message {
        case .vote: return .vote(number)
        case .withdraw: return .withdraw(number)
        case .signal(_, let counts):
            if counts == Popularity(views: 1) { return .view(number) }
            if counts == Popularity(shown: 1) { return .shown(number) }
            if counts == Popularity(engaged: 1) { return .engaged(number) }
            return nil
        case .content, .page, .report: return nil
        }
    }
}
