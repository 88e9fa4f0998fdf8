import Foundation
import IndexModel
import SyncWire

/// A message the cloud refuses although its frame is well formed and signed:
/// the whole frame is refused and nothing of it is kept.
package struct Refusal: Error {
    package let message: String
}

/// The fold from accepted outbox messages to the cloud's projections, the
/// same code for every backend (`FoldRows` is where a backend keeps the rows).
/// Ingest and a rebuild both call `apply`, and nothing else writes the
/// projections, so a rebuild from the cloud log equals the incremental state.
///
/// Per (app, public hash), under the hash's *key* (`CloudSecrets.key`, a keyed
/// hash: the raw hash is stored only while it has at least K live votes):
/// - a *vote* counts once per device: under the cloud's pseudonym for the
///   device and hash (`CloudSecrets.voter`), with the token the device sent,
///   which must stay the same;
/// - a *withdraw* makes that vote not live;
/// - *signals* add to views, shown and engaged;
/// - *reports* add to the app's sketch when its popularity is private and
///   they fit its sketch, within the device's daily allowance (`ReportRule`);
/// - *content* must hash to the hash it claims; a live voter's content is its
///   offer while the hash is wanted (other content is ignored), and
///   content that K live voters offered byte for byte becomes public
///   (`ContentRule`), or the first offer at once when its URL is a crawled
///   page's;
/// - a *page* is recorded under its URL, from the crawler's stream only
///   (`CrawlerRule`); a frame that records pages drops the offers of the
///   app's wanted hashes, so their voters are asked again.
///
/// When live votes reach K without content, the hash is *wanted*: its raw hash
/// is kept, it gets the next wanted seq, and acks ask its live voters for its
/// content until content is agreed. Below K the raw hash, the content and the
/// offers are dropped: only counts under keyed hashes remain.
package struct CloudFold<Rows: FoldRows> {
    package let rows: Rows
    package let threshold: Int
    /// How many live voters must offer the same content (`ContentRule`).
    package let agreement: Int
    package let secrets: CloudSecrets
    /// The settings of each app whose popularity is private (`PopularityMode.ldp`).
    package let popularity: [AppID: PrivatePopularity]

    package init(rows: Rows, threshold: Int, agreement: Int, secrets: CloudSecrets, popularity: [AppID: PrivatePopularity] = [:]) {
        self.rows = rows
        self.threshold = threshold
        self.agreement = agreement
        self.secrets = secrets
        self.popularity = popularity
    }

    /// Folds one frame's messages, accepted at `receivedAt`, with `memory`
    /// (kept across frames by a backend that may, one for a whole replay).
    /// Signals only add to counts that nothing else in the fold reads, so
    /// they are summed per hash and written once at the end of the frame;
    /// everything else is applied in order. The device's allowances are
    /// written when `memory` is flushed: the caller flushes it before its
    /// transaction commits.
    package func apply(_ messages: ArraySlice<OutboxMessage>, device: DeviceID, app: AppID, logSeq: Int64,
                       receivedAt: Timestamp, memory: FoldMemory) throws {
        var signals: [PublicHash: Popularity] = [:]
        // The device's entries, taken out of the memory while the frame is
        // folded (so that changing them copies nothing) and put back after.
        let stream = DeviceStream(app: app, device: device)
        var known = memory.devices.removeValue(forKey: stream) ?? [:]
        defer { memory.devices[stream] = known }
        var recordedPages = false
        var reports: [PrivateReport] = []
        for message in messages {
            if case .page(let hash, let page) = message {
                guard CrawlerRule.mayRecordPages(device) else {
                    throw Refusal(message: "a page message comes only from the cloud's crawler, not from device \(device)")
                }
                guard CrawledPage.hash(app: app, url: page.url) == hash else {
                    throw Refusal(message: "a page message's hash is not the hash of its URL")
                }
                try rows.recordPage(page, app: app, logSeq: logSeq)
                recordedPages = true
                continue
            }
            // What a purge left of content, or a device's withheld answer:
            // nothing to fold, so no key to compute.
            switch message {
            case .contentPurged, .contentWithheld: continue
            default: break
            }
            guard let hash = message.hash else {
                if case .report(let report) = message { reports.append(report) }
                continue
            }
            let state: FoldMemory.Entry
            if let remembered = known[hash] {
                state = remembered
            } else {
                state = FoldMemory.Entry(app: app, key: Data(secrets.key(app: app, hash: hash)),
                                         voter: secrets.voter(device: device, hash: hash))
                known[hash] = state
                memory.count += 1
            }
            let key = state.key
            switch message {
            case .vote(_, let token):
                if state.vote == nil {
                    // Insert first: on a first vote (every vote of a replay
                    // from scratch) the row's absence needs no read.
                    if try rows.insertVote(app: app, key: key, voter: state.voter, token: token.bytes) {
                        state.vote = FoldMemory.Vote(token: token.bytes, live: true, allowance: .none)
                        state.isLoaded = true
                        try changeVotes(app: app, key: key, hash: hash, live: 1, voters: 1, asks: memory.asks)
                        continue
                    }
                    try load(state, app: app)
                }
                guard var vote = state.vote else {
                    // The insert met a row that the read then did not find.
                    throw CloudError(.database, "a vote row was neither inserted nor found")
                }
                guard vote.token == token.bytes else {
                    throw Refusal(message: "a vote carries a different token than this device's earlier vote for the same hash")
                }
                if vote.live { continue }
                vote.live = true
                state.vote = vote
                try rows.setVote(live: true, app: app, key: key, voter: state.voter)
                try changeVotes(app: app, key: key, hash: hash, live: 1, voters: 0, asks: memory.asks)
            case .withdraw(_, let token):
                if !state.isLoaded { try load(state, app: app) }
                guard var vote = state.vote else { continue }
                guard vote.token == token.bytes else {
                    throw Refusal(message: "a withdrawal carries a different token than this device's vote for the same hash")
                }
                guard vote.live else { continue }
                vote.live = false
                state.vote = vote
                try rows.setVote(live: false, app: app, key: key, voter: state.voter)
                // An offer lasts as long as the vote it was made under.
                try rows.dropOffer(app: app, key: key, voter: state.voter)
                try changeVotes(app: app, key: key, hash: hash, live: -1, voters: 0, asks: memory.asks)
            case .signal(_, let counts):
                if !state.isLoaded { try load(state, app: app) }
                // Only a live voter's signals count (`PopularityRule`).
                guard state.vote?.live == true else { continue }
                signals[hash, default: Popularity()] += counts
            case .content(_, let content):
                guard PublicHash.of(app: app, content: content) == hash else {
                    throw Refusal(message: "content does not hash to the public hash it was sent for")
                }
                // No frame carries a NUL (`UploadFrame.messages`); a log row an
                // older build accepted may, and neither backend could keep it.
                guard !content.holdsNUL else { continue }
                if !state.isLoaded { try load(state, app: app) }
                let open = try rows.hashState(app: app, key: key)
                switch ContentRule.verdict(hasVoted: state.vote != nil, isLive: state.vote?.live == true,
                                           liveVotes: open?.liveVotes ?? 0, threshold: threshold, hasContent: open?.hasContent ?? false) {
                case .ignore:
                    continue
                case .offer:
                    if let url = content.webpageURL, try rows.hasPage(app: app, url: url) {
                        try rows.publish(ContentRule.fromPage(content), app: app, key: key, logSeq: logSeq)
                        memory.asks.changed(hash)
                    } else if try offer(content, app: app, key: key, voter: state.voter, liveVotes: open?.liveVotes ?? 0,
                                        logSeq: logSeq) {
                        memory.asks.changed(hash)
                    }
                }
            case .page, .report, .reindexAsk, .contentPurged, .contentWithheld:
                continue
            }
        }
        if recordedPages {
            // A wanted hash whose voters all offered before its page came
            // would wait for another voter: their offers go, so that every
            // live voter is asked again and its next offer meets the page.
            for hash in try rows.dropOffersOfWanted(app: app) { memory.asks.changed(hash) }
        }
        let day = PopularityRule.day(milliseconds: receivedAt.millisecondsSince1970)
        if !reports.isEmpty { try count(reports, device: device, app: app, day: day) }
        for (hash, offered) in signals.sorted(by: { $0.key < $1.key }) {
            guard let state = known[hash], var vote = state.vote else { continue }
            let (counted, allowance) = PopularityRule.admit(offered, on: day, after: vote.allowance)
            guard allowance != vote.allowance else { continue }
            vote.allowance = allowance
            state.vote = vote
            if state.isAllowanceWritten {
                state.isAllowanceWritten = false
                memory.unwritten.append(state)
            }
            try rows.addSignals(counted, app: app, key: state.key)
        }
    }

    /// Adds the frame's reports that fit the app's sketch to it, as many as
    /// the device's allowance for `day` has room for, in the frame's order
    /// (`ReportRule`).
    private func count(_ reports: [PrivateReport], device: DeviceID, app: AppID, day: Int64) throws {
        guard let settings = popularity[app] else { return }
        let fitting = reports.filter(settings.fits)
        guard !fitting.isEmpty else { return }
        let before = try rows.reportAllowance(app: app, device: device)
        let (counted, allowance) = ReportRule.admit(fitting.count, on: day, after: before, perDay: settings.reportsPerDay)
        guard counted > 0 else { return }
        var cells: [Int64: SketchCell] = [:]
        for report in fitting.prefix(counted) {
            var cell = cells[Int64(report.cell)] ?? SketchCell()
            cell.reports += 1
            cell.total += report.positive ? 1 : -1
            cells[Int64(report.cell)] = cell
        }
        try rows.addReports(cells, app: app)
        try rows.writeReportAllowance(allowance, app: app, device: device)
    }

    /// Writes the allowances `memory` changed to their vote rows. With
    /// `forgetting`, `memory` then forgets everything (the end of a replay, or
    /// a memory past its bound); otherwise it goes on knowing the rows, as the
    /// store now holds them.
    package func flush(_ memory: FoldMemory, forgetting: Bool) throws {
        for state in memory.unwritten {
            guard let vote = state.vote else { continue }
            try rows.writeAllowance(vote.allowance, app: state.app, key: state.key, voter: state.voter)
            state.isAllowanceWritten = true
        }
        memory.unwritten.removeAll(keepingCapacity: true)
        if forgetting || memory.count > memory.limit { memory.forget() }
    }

    /// Keeps `content` as the voter's offer for the hash, replacing the
    /// voter's earlier one, and makes it public once `agreement` live voters
    /// offered the same bytes. Offers are kept only while the hash is wanted.
    /// Returns whether the content became public.
    private func offer(_ content: PublicContent, app: AppID, key: Data, voter: [UInt8], liveVotes: Int64, logSeq: Int64) throws -> Bool {
        let agreeing = try rows.offer(Data(secrets.contentDigest(app: app, content: content)), app: app, key: key, voter: voter)
        guard ContentRule.publishes(agreeing: agreeing, agreement: agreement, liveVotes: liveVotes, threshold: threshold,
                                    hasContent: false) else { return false }
        try rows.publish(content, app: app, key: key, logSeq: logSeq)
        return true
    }

    /// Reads the device's vote row for the entry's hash into it.
    private func load(_ state: FoldMemory.Entry, app: AppID) throws {
        if let read = try rows.readVote(app: app, key: state.key, voter: state.voter) {
            state.vote = read
        }
        state.isLoaded = true
    }

    /// Moves the live-vote and distinct-voter counts, then the hash's state
    /// around the threshold: at K without content it becomes wanted (and its
    /// raw hash is kept, to ask for it); below K its raw hash, content and
    /// offers go.
    private func changeVotes(app: AppID, key: Data, hash: PublicHash, live: Int64, voters: Int64, asks: AskMemory) throws {
        guard let state = try rows.changeVotes(app: app, key: key, live: live, voters: voters) else { return }
        // The raw hash is held exactly while live votes are at least K, so the
        // rule derives whether it was held from the count.
        let actions = ThresholdRule.actions(liveVotes: state.liveVotes, delta: live, threshold: threshold,
                                            hasContent: state.hasContent, isWanted: state.isWanted)
        if actions.keepRawHash {
            try rows.keepRawHash(hash, app: app, key: key)
        }
        if actions.markWanted {
            try rows.markWanted(app: app, key: key)
            asks.changed(hash)
        }
        if actions.dropContent {
            try rows.dropContent(app: app, key: key)
        }
        if actions.dropWanted {
            try rows.dropOffers(app: app, key: key)
            asks.changed(hash)
        }
        if actions.dropRawHash || actions.dropContent || actions.dropWanted {
            try rows.clearPublicState(app: app, key: key)
        }
    }
}

/// Keywords as `public_content.keywords` holds them: a `list<string>` of the
/// event encoding, so any keyword text round-trips.
package enum PublicKeywords {
    package static func encode(_ keywords: [String]) -> [UInt8] {
        var writer = BinaryWriter()
        writer.uvarint(UInt64(keywords.count))
        for keyword in keywords { writer.string(keyword) }
        return writer.bytes
    }

    package static func decode(_ bytes: [UInt8]) -> [String]? {
        var reader = BinaryReader(bytes)
        guard let count = try? reader.uvarint(), count <= UInt64(bytes.count) else { return nil }
        var keywords: [String] = []
        for _ in 0..<count {
            guard let keyword = try? reader.string() else { return nil }
            keywords.append(keyword)
        }
        return reader.isAtEnd ? keywords : nil
    }
}
