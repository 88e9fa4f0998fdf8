import CloudCore
import CloudSQLite
import DeviceStore
import IndexModel
import SyncWire

/// One checked property of a finished run.
public struct InvariantResult: Hashable, Sendable {
    public let name: String
    public let passed: Bool
    /// What was checked, or the first divergence in words (and how many
    /// more there are).
    public let detail: String
    /// Every divergence found, in words; empty when the invariant holds.
    public let problems: [String]

    init(name: String, passed: Bool, detail: String, problems: [String]? = nil) {
        self.name = name
        self.passed = passed
        self.detail = detail
        self.problems = problems ?? (passed ? [] : [detail])
    }

    /// The result in `report.json` and `--json`: every problem listed.
    public var jsonValue: JSONValue {
        .object(["name": .string(name), "passed": .bool(passed), "detail": .string(detail),
                 "problems": .array(problems.map { .string($0) })])
    }
}

/// A property every run must have: its name, the problems it finds in a
/// finished run, and what it says when it finds none. Each reads the run's
/// evidence only, so each can be broken on purpose by changing one value.
struct Invariant: Sendable {
    let name: String
    let check: @Sendable (FinishedRun) -> [String]
    let holds: @Sendable (FinishedRun) -> String

    func result(_ run: FinishedRun) -> InvariantResult {
        let problems = check(run)
        let detail = problems.first.map { problems.count > 1 ? "\($0) (and \(problems.count - 1) more)" : $0 } ?? holds(run)
        return InvariantResult(name: name, passed: problems.isEmpty, detail: detail, problems: problems)
    }

    /// Every invariant, in the order reports list them.
    static let all: [Invariant] = [
        converged, cloudLogDense, acknowledgedNotLost, messagesMatchCalls, countsExact, publicIndex, sybilNeverPublic,
        hostileContained, noPrivateLeak, journalsVerify, deviceIndexMatchesCalls, noDeletedItemReturned, searchMatchesCalls,
        projectionsEqualRebuild, epochsNeverReused, privacyBudget, votesMatchDevices, withdrawnContentPurged,
    ]

    /// The cloud log keeps no content of a hash below K once a backup holds
    /// the hash's fall below K: every backup and every restore is followed
    /// by a purge (`docs/CLOUD.md`, "Purging withdrawn content").
    static let withdrawnContentPurged = Invariant(name: "withdrawn-content-purged") { run in
        switch run.evidence.unpurgedContent {
        case .success(let left)? where left > 0:
            ["the cloud log still holds \(left) content message(s) of hashes below K that a backup made purgeable"]
        case .failure(let error)?:
            ["the cloud log cannot be read for a purge: \(error)"]
        default:
            []
        }
    } holds: { run in
        run.evidence.unpurgedContent == nil
            ? "not checked against a served cloud, which purges after its own snapshots"
            : "no content of a hash below K that a backup holds the fall of is left in the cloud log; purges took \(run.evidence.contentPurged)"
    }

    /// A vote the cloud counts is one its device holds, and the other way
    /// round: a device restored from a backup no longer knows the votes it
    /// cast or withdrew after it, and its reindex ask makes it state them again.
    static let votesMatchDevices = Invariant(name: "votes-match-devices") { run in
        let catalogue = run.evidence.catalogue
        let devices = Dictionary(run.evidence.devices.map { ($0.number, $0) }, uniquingKeysWith: { first, _ in first })
        var problems: [String] = []
        for check in run.evidence.deviceChecks {
            guard check.journal != nil, let device = devices[check.device] else { continue }
            for number in catalogue.entries.indices {
                let counted = run.matching.model.entries[number]?.live.contains(device.name) ?? false
                let held = check.votes.contains(catalogue.entry(number).hash)
                if counted != held {
                    problems.append(counted
                        ? "the cloud counts device \(device.number)'s vote for entry \(number), which the device does not hold"
                        : "device \(device.number) holds a vote for entry \(number) that the cloud does not count")
                }
            }
        }
        return problems
    } holds: { run in
        """
        every vote the cloud counts is one its device holds, and every vote a device holds is counted, after \(run.evidence.restores) \
        restore(s) and \(run.evidence.counters.votesRestated) vote(s) stated again
        """
    }

    static let converged = Invariant(name: "converged") { run in
        run.evidence.converged ? [] : [Invariant.notConverged]
    } holds: { run in
        "quiet \(run.evidence.convergenceMilliseconds / 1_000) virtual seconds after the faults ended"
    }

    static let notConverged = "the run did not go quiet within \(Simulator.convergenceLimit / 60_000) virtual minutes of the faults ending"

    static let cloudLogDense = Invariant(name: "cloud-log-dense") { run in
        (run.evidence.logReadProblem.map { [$0] } ?? []) + run.matching.denseProblems
    } holds: { _ in
        "every (device, epoch) in the cloud log is dense from seq 1"
    }

    static let acknowledgedNotLost = Invariant(name: "acknowledged-not-lost") { run in
        run.matching.lossProblems
    } holds: { _ in
        "the cloud holds every message of each device's current epoch, and of each ended epoch what the device was told was durable"
    }

    static let messagesMatchCalls = Invariant(name: "messages-match-calls") { run in
        run.matching.messageProblems + run.evidence.findings.filter { $0.contains(SimDevice.notTheLast) }
    } holds: { _ in
        "every message in the cloud log is one the device's calls implied, once, in order"
    }

    static let countsExact = Invariant(name: "counts-exact") { run in
        var problems: [String] = []
        if run.evidence.privately != nil, run.evidence.cloudReports != run.matching.model.reportsCounted {
            problems.append("""
                the cloud counted \(run.evidence.cloudReports.map(String.init) ?? "an unreadable number of") private reports; \
                the oracle \(run.matching.model.reportsCounted)
                """)
        }
        var counted = 0
        for (number, read) in run.evidence.counts.enumerated() {
            let actual: HashEntry?
            switch read {
            case .success(let entry): actual = entry
            case .failure(let error):
                problems.append("entry \(number) cannot be read from the cloud: \(error)")
                continue
            }
            if actual != nil { counted += 1 }
            let expected = run.matching.model.entries[number]
            let live = expected?.live.count ?? 0, voters = expected?.everVoted.count ?? 0
            let popularity = expected?.popularity ?? Popularity()
            let got = (live: actual?.liveVotes ?? 0, voters: actual?.voters ?? 0, popularity: actual?.popularity ?? Popularity())
            if got.live != live || got.voters != voters || got.popularity != popularity {
                problems.append("""
                    entry \(number): the cloud counts \(got.live) live votes, \(got.voters) voters, \(Invariant.describe(got.popularity)); \
                    the oracle \(live), \(voters), \(Invariant.describe(popularity))
                    """)
            }
        }
        let hashes = run.evidence.hashesCounted ?? -1
        if hashes != counted {
            problems.append("the cloud counts \(hashes) hashes, \(hashes - counted) of them no catalogue entry's")
        }
        return problems
    } holds: { run in
        let counted = run.evidence.counts.filter { (try? $0.get()) != nil }.count
        let reports = run.evidence.privately == nil ? "" : ", and the \(run.matching.model.reportsCounted) private reports it counted"
        return "views, impressions, engagements, live votes and voters equal the oracle's for all \(counted) counted entries\(reports)"
    }

    static let publicIndex = Invariant(name: "public-index") { run in
        let evidence = run.evidence, catalogue = evidence.catalogue, threshold = evidence.threshold
        var problems = run.matching.contentProblems
        // The operator's crawl is in the cloud, page for page, and came from
        // the crawler's stream alone.
        let crawled = evidence.crawled
        switch evidence.pages {
        case .success(let pages) where Set(pages) != Set(crawled):
            problems.append("the cloud holds \(pages.count) crawled pages, not the \(crawled.count) the operator crawled")
        case .failure(let error):
            problems.append("the crawled pages cannot be read: \(error)")
        default:
            break
        }
        if evidence.crawlerMessages.contains(where: { if case .page = $0 { false } else { true } }) {
            problems.append("the crawler's stream holds a message that is no page")
        }
        let pageURLs = Set(crawled.map(\.url))
        for (number, read) in evidence.counts.enumerated() {
            guard case .success(let actual) = read else { continue }
            let expected = run.matching.model.entries[number]
            let live = expected?.live.count ?? 0
            // The honest devices whose vote the cloud counts live and that
            // can answer for the entry: each offers the catalogue's content
            // (`ContentRule`). A device restored from a backup may hold a
            // vote the cloud no longer counts, or the other way round.
            let agreeing = evidence.devices.filter { $0.model.holdsLiveVote(number) && expected?.live.contains($0.name) == true }.count
            // An entry with a crawled page needs one such voter's offer,
            // and keeps of it only the type and URL (`ContentRule.fromPage`).
            let hasPage = pageURLs.contains(catalogue.entry(number).url)
            let isPublic = actual?.isPublic ?? false
            if live < threshold && isPublic {
                problems.append("entry \(number) is public with \(live) live votes, below K = \(threshold)")
            }
            if live >= threshold && agreeing >= (hasPage ? 1 : threshold) && !isPublic {
                problems.append("""
                    entry \(number) has \(live) live votes (K = \(threshold)) and \(agreeing) live voters that can send the same content\
                    \(hasPage ? " for its crawled page" : ""), but is not public
                    """)
            }
            let content = catalogue.entry(number).content
            if isPublic, actual?.content != (hasPage ? ContentRule.fromPage(content) : content) {
                problems.append("entry \(number) is public with content that differs from the catalogue's"
                                + (hasPage ? " type and URL (it has a crawled page)" : ""))
            }
        }
        return problems
    } holds: { run in
        """
        public exactly the entries with at least K = \(run.evidence.threshold) live votes and K live voters able to agree (one, \
        for the \(run.evidence.crawled.count) with a crawled page), with the catalogue's content
        """
    }

    static let sybilNeverPublic = Invariant(name: "sybil-never-public") { run in
        let sybil = run.sybilEntry
        let votes = sybil?.liveVotes ?? 0
        return (sybil?.isPublic ?? false) || votes >= run.evidence.threshold
            ? ["the Sybil group's entry reached \(votes) live votes (K = \(run.evidence.threshold))"] : []
    } holds: { run in
        run.evidence.plan.sybil
            ? "the Sybil group's entry has \(run.sybilEntry?.liveVotes ?? 0) live votes, below K = \(run.evidence.threshold)"
            : "no Sybil group in this run"
    }

    static let hostileContained = Invariant(name: "hostile-contained") { run in
        run.matching.hostileProblems + run.evidence.counters.hostileFindings
    } holds: { run in
        run.evidence.plan.hostile ? """
            of the hostile device's \(run.evidence.counters.faults[.hostileFrame] ?? 0) attacks the cloud took only its one vote, \
            its poisoned content (never public) and its signals, \(Invariant.describe(run.matching.hostileAdded)) of them counted \
            (cap \(PopularityRule.maximumPerDevicePerDay) per day)\(run.evidence.privately.map { privately in
                ", and \(run.matching.hostileReports) of its private reports (cap \(privately.reportsPerDay) per day)"
            } ?? ""); its names with a NUL or a control character were refused, and of its expensive public searches \
            \(run.evidence.counters.hostileSearches.answered) finished within their budget and \
            \(run.evidence.counters.hostileSearches.refused) were refused as too expensive
            """ : "no hostile device in this run"
    }

    static let noPrivateLeak = Invariant(name: "no-private-leak") { run in
        let leaks = run.evidence.counters.leaks
        return leaks > 0 ? ["\(leaks) frame(s) carried the private canary"] : []
    } holds: { run in
        "no frame carried private text (\(run.evidence.counters.framesScanned) frames scanned)"
    }

    static let journalsVerify = Invariant(name: "journals-verify") { run in
        run.evidence.deviceChecks.flatMap(\.journalProblems) + run.evidence.cloudJournalProblems
    } holds: { _ in
        "every device journal and the cloud log verify"
    }

    static let deviceIndexMatchesCalls = Invariant(name: "device-index-matches-calls") { run in
        run.evidence.deviceChecks.flatMap(\.indexProblems)
    } holds: { _ in
        "every device's index equals what its app's calls imply"
    }

    static let noDeletedItemReturned = Invariant(name: "no-deleted-item-returned") { run in
        run.evidence.deviceChecks.flatMap(\.returnedProblems)
    } holds: { run in
        """
        no item the app deleted is in any index, every deletion a backup covers (and, of a public activity, \
        the cloud's backup too) is purged, and restores deleted \(run.evidence.counters.itemsDeletedAgain) purged item(s) \
        and \(run.evidence.counters.activitiesDeletedAgain) purged activit(ies) again
        """
    }

    static let searchMatchesCalls = Invariant(name: "search-matches-calls") { run in
        run.evidence.findings.filter { $0.contains("'s search") }
    } holds: { run in
        "\(run.evidence.counters.searches) searches before engagements returned nothing the app deleted and found each live activity they looked for"
    }

    static let projectionsEqualRebuild = Invariant(name: "projections-equal-rebuild") { run in
        run.evidence.deviceChecks.flatMap(\.rebuildProblems) + run.evidence.cloudRebuildProblems
    } holds: { _ in
        "the cloud's and the devices' projections equal rebuilds from their logs"
    }

    static let epochsNeverReused = Invariant(name: "epochs-never-reused") { run in
        run.evidence.findings.filter { ["already used", "clock ran back", "not above"].contains(where: $0.contains) }
    } holds: { run in
        "\(run.evidence.restores) restore(s), each in a new epoch"
    }

    static let privacyBudget = Invariant(name: "privacy-budget") { run in
        run.evidence.deviceChecks.flatMap(\.budgetProblems)
    } holds: { run in
        guard let privately = run.evidence.privately else { return "popularity is exact: no device reported privately" }
        let days = run.evidence.devices.reduce(0) { $0 + $1.model.spent.count }
        return """
            no device spent more than ε \(PrivatePopularity.decimal(PrivacyBudget.dailyThousandths(privately))) a day \
            (\(days) device-days with reports), and each device's ledger is what its calls imply
            """
    }

    static func describe(_ popularity: Popularity) -> String {
        "\(popularity.views) views, \(popularity.shown) shown, \(popularity.engaged) engaged"
    }
}

extension FinishedRun {
    /// What the cloud counts for the Sybil group's entry (the catalogue's last).
    var sybilEntry: HashEntry? {
        guard let last = evidence.counts.last, case .success(let entry) = last else { return nil }
        return entry
    }

    /// Every invariant's result, in order.
    var results: [InvariantResult] { Invariant.all.map { $0.result(self) } }
}
