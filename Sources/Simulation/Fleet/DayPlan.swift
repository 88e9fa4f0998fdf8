/// What a run's users do: how often they act, and when.
public enum WorkloadShape: String, CaseIterable, Sendable {
    /// Every user acts all run, 2 to 22 virtual seconds apart, until their
    /// calls are made: no device is idle for long (the default).
    case busy
    /// One simulated day (`DayPlan`): each user opens the app a few times in
    /// a daily rhythm in their time zone, and is idle the rest of the day.
    case day
}

/// One user's day under `WorkloadShape.day`: the virtual times, in
/// milliseconds from the run's start (midnight UTC), at which they open the
/// app, and how many actions each visit lasts. Drawn from the device's own
/// seed, so a day replays exactly.
///
/// - **Who.** One user in twenty is a heavy user, who opens the app 8 to 16
///   times; the others 1 to 4 times.
/// - **When.** Each user lives in one of 24 time zones (UTC−11 to UTC+12),
///   and opens the app at a local hour drawn from `hourWeights`: little at
///   night, a peak on the way to work, one at lunch and the largest in the
///   evening.
/// - **How long.** A visit is 1 to 4 actions, each 1 to 7 calls as on a
///   busy day, 2 to 22 virtual seconds apart.
/// - **Background refresh.** The phone first asks the cloud for news at a
///   time of its own in the first `refreshInterval` of the day, as a
///   phone's system spreads background refreshes over its devices.
struct DayPlan: Equatable {
    /// When each visit begins, earliest first.
    var starts: [Int64]
    /// Actions in each visit, in the same order.
    var actions: [Int]
    /// The user's time zone, in hours from UTC.
    let zone: Int
    /// When the device first refreshes in the background, in milliseconds
    /// from the run's start; then every `refreshInterval` after its last sync.
    let firstRefresh: Int64

    /// How often an idle device asks the cloud for news: a phone's
    /// background refresh, a few times a day.
    static let refreshInterval: Int64 = 6 * 3_600_000

    static let dayMilliseconds: Int64 = 86_400_000
    static let hourMilliseconds: Int64 = 3_600_000
    /// How likely a visit begins in each local hour, midnight first.
    static let hourWeights: [Double] = [0.3, 0.15, 0.1, 0.1, 0.1, 0.3, 0.8, 1.6, 2.0, 1.5, 1.1, 1.2,
                                        1.8, 1.4, 1.0, 1.0, 1.2, 1.6, 2.0, 2.4, 2.6, 2.2, 1.4, 0.7]
    static let heavyShare = 20
    static let visits = 1...4
    static let heavyVisits = 8...16
    static let actionsPerVisit = 1...4

    init(random: inout SimRandom) {
        zone = random.below(24) - 11
        let heavy = random.below(DayPlan.heavyShare) == 0
        let range = heavy ? DayPlan.heavyVisits : DayPlan.visits
        let count = range.lowerBound + random.below(range.count)
        var visits: [(start: Int64, actions: Int)] = []
        for _ in 0..<count {
            let local = Int64(DayPlan.localHour(random.unit())) * DayPlan.hourMilliseconds
                + random.between(0, DayPlan.hourMilliseconds - 1)
            let start = ((local - Int64(zone) * DayPlan.hourMilliseconds) % DayPlan.dayMilliseconds + DayPlan.dayMilliseconds)
                % DayPlan.dayMilliseconds
            visits.append((start, DayPlan.actionsPerVisit.lowerBound + random.below(DayPlan.actionsPerVisit.count)))
        }
        visits.sort { $0.start < $1.start }
        starts = visits.map(\.start)
        actions = visits.map(\.actions)
        firstRefresh = random.between(0, DayPlan.refreshInterval - 1)
    }

    /// The local hour at which the point `unit` (in 0..<1) of the day's
    /// visits falls, by `hourWeights`.
    static func localHour(_ unit: Double) -> Int {
        let total = hourWeights.reduce(0, +)
        var reached = 0.0
        for (hour, weight) in hourWeights.enumerated() {
            reached += weight / total
            if unit < reached { return hour }
        }
        return hourWeights.count - 1
    }
}
