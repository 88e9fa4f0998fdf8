import CloudCore
import IndexModel
import SyncWire

/// The cloud's fold (`CloudFold`) for one public hash of one app, read back
/// from its log with what each message did and why: a vote counted or not,
/// the threshold reached or lost, content asked for, offered, agreed,
/// published or withdrawn. It applies the same rules as the fold
/// (`ThresholdRule`, `ContentRule`, `PopularityRule`) in the same order, so
/// its end state is the cloud's projection of the hash; `Tracer` compares
/// the two and says so when they differ.
///
/// It keys votes by device name, as the log does; the cloud's projections
/// key them by a pseudonym of the device, one for one.
struct HashFold {
    struct Vote {
        var token: [UInt8]
        var live: Bool
        var allowance = PopularityRule.Allowance.none
    }

    let app: AppID
    let hash: PublicHash
    let threshold: Int
    let agreement: Int
    private(set) var votes: [DeviceID: Vote] = [:]
    private(set) var liveVotes: Int64 = 0
    private(set) var isWanted = false
    private(set) var content: PublicContent?
    /// Each live voter's offer while the hash is wanted.
    private(set) var offers: [DeviceID: PublicContent] = [:]
    /// How many of `offers` are each content, so that an offer counts its
    /// agreement in constant time however many voters offered.
    private(set) var agreeing: [PublicContent: Int] = [:]
    private(set) var popularity = Popularity()
    /// The log row whose message made the content public.
    private(set) var publishedBy: Int64?
    /// Votes withdrawn and not cast again.
    var withdrawn: Int { votes.values.filter { !$0.live }.count }

    init(app: AppID, hash: PublicHash, threshold: Int, agreement: Int) {
        self.app = app
        self.hash = hash
        self.threshold = threshold
        self.agreement = agreement
    }

    private var bar: String { (liveVotes == 1 ? "1 live vote" : "\(liveVotes) live votes") + " of K = \(threshold)" }

    /// Folds one message of `device` for this hash, logged in row `logSeq`,
    /// and says what it did. Signals are summed by the caller per frame
    /// (`signals(_:device:day:)`), as the fold does.
    mutating func apply(_ message: OutboxMessage, device: DeviceID, logSeq: Int64, crawled: Set<String>) -> [TraceDecision] {
        switch message {
        case .vote(_, let token):
            guard var vote = votes[device] else {
                votes[device] = Vote(token: token.bytes, live: true)
                return [TraceDecision(.counted, "vote counted")] + change(by: 1)
            }
            guard vote.token == token.bytes else {
                return [TraceDecision(.refused, "vote with another token than the device's first: the cloud refuses such a frame")]
            }
            guard !vote.live else { return [TraceDecision(.ignored, "vote already counted (\(bar))")] }
            vote.live = true
            votes[device] = vote
            return [TraceDecision(.counted, "vote counted again")] + change(by: 1)
        case .withdraw(_, let token):
            guard var vote = votes[device] else {
                return [TraceDecision(.ignored, "withdrawal of a vote the cloud never counted: nothing to withdraw")]
            }
            guard vote.token == token.bytes else {
                return [TraceDecision(.refused, "withdrawal with another token than the device's vote: the cloud refuses such a frame")]
            }
            guard vote.live else { return [TraceDecision(.ignored, "withdrawal of a vote already withdrawn")] }
            vote.live = false
            votes[device] = vote
            var decisions = [TraceDecision(.withdrawn, "vote withdrawn")]
            if replaceOffer(of: device, with: nil) {
                decisions.append(TraceDecision(.offerDropped, "the device's offer of content goes with its vote"))
            }
            return decisions + change(by: -1)
        case .content(_, let offered):
            if offered.holdsNUL { return [TraceDecision(.ignored, "content holding a NUL folds to nothing")] }
            let vote = votes[device]
            switch ContentRule.verdict(hasVoted: vote != nil, isLive: vote?.live == true, liveVotes: liveVotes,
                                       threshold: threshold, hasContent: content != nil) {
            case .ignore:
                let why = vote == nil ? "the device has no vote for it"
                    : vote?.live != true ? "the device's vote is withdrawn"
                    : content != nil ? "its content is public already"
                    : "it is below K (\(bar)), so no content is asked for"
                return [TraceDecision(.ignored, "content ignored: \(why)")]
            case .offer:
                if let url = offered.webpageURL, crawled.contains(url) {
                    publish(ContentRule.fromPage(offered), logSeq: logSeq)
                    return [TraceDecision(.published, "published: its URL is a crawled page's, which shows in place of any offer")]
                }
                replaceOffer(of: device, with: offered)
                let agreeing = self.agreeing[offered] ?? 0
                if ContentRule.publishes(agreeing: Int64(agreeing), agreement: agreement, liveVotes: liveVotes,
                                         threshold: threshold, hasContent: false) {
                    publish(offered, logSeq: logSeq)
                    return [TraceDecision(.published, "published: \(agreeing) live voters offered the same content (agreement \(agreement))")]
                }
                return [TraceDecision(.offered, "content offered: \(agreeing) of the \(agreement) agreeing offers needed")]
            }
        case .contentPurged:
            return [TraceDecision(.purged, "content taken out of the log by a purge (the hash was below K)")]
        case .contentWithheld:
            return [TraceDecision(.ignored, "content withheld: the device purged the activity before it was asked")]
        case .signal, .page, .report, .reindexAsk:
            return []
        }
    }

    /// Whether a signal of `device` counts when the frame's end adds it up:
    /// only a live voter's, as it is when the fold meets the message.
    func countsSignal(of device: DeviceID) -> Bool {
        votes[device]?.live == true
    }

    /// Adds a frame's signals of `device` for this hash, summed, as the fold
    /// does at the end of the frame: within the device's daily allowance.
    mutating func signals(_ offered: Popularity, device: DeviceID, day: Int64) -> TraceDecision {
        guard var vote = votes[device] else { return TraceDecision(.ignored, "signals ignored: the device has no vote") }
        let (counted, allowance) = PopularityRule.admit(offered, on: day, after: vote.allowance)
        vote.allowance = allowance
        votes[device] = vote
        popularity += counted
        let clipped = counted == offered ? "" : " (the rest is over the device's daily allowance)"
        return TraceDecision(.counted, "signals counted: +\(counted.views) views, +\(counted.shown) shown, +\(counted.engaged) engaged\(clipped)")
    }

    /// A frame of the app recorded crawled pages: the offers of every wanted
    /// hash go, so that their voters are asked again.
    mutating func pagesRecorded() -> [TraceDecision] {
        guard isWanted, !offers.isEmpty else { return [] }
        dropOffers()
        return [TraceDecision(.offerDropped, "offers dropped: the crawler recorded pages, so the live voters are asked again")]
    }

    private mutating func dropOffers() {
        offers.removeAll()
        agreeing.removeAll()
    }

    /// Sets or drops `device`'s offer, keeping `agreeing` in step; whether
    /// it had one.
    @discardableResult
    private mutating func replaceOffer(of device: DeviceID, with content: PublicContent?) -> Bool {
        let old = content.map { offers.updateValue($0, forKey: device) } ?? offers.removeValue(forKey: device)
        if let old {
            agreeing[old, default: 1] -= 1
            if agreeing[old] == 0 { agreeing[old] = nil }
        }
        if let content { agreeing[content, default: 0] += 1 }
        return old != nil
    }

    private mutating func publish(_ published: PublicContent, logSeq: Int64) {
        content = published
        publishedBy = logSeq
        isWanted = false
        dropOffers()
    }

    /// Moves the live votes by `delta` and applies the threshold's actions.
    private mutating func change(by delta: Int64) -> [TraceDecision] {
        liveVotes += delta
        let actions = ThresholdRule.actions(liveVotes: liveVotes, delta: delta, threshold: threshold,
                                            hasContent: content != nil, isWanted: isWanted)
        var decisions = [TraceDecision(.votes, bar)]
        if actions.keepRawHash { decisions.append(TraceDecision(.reachedK, "reached K: the cloud keeps the raw hash")) }
        if actions.markWanted {
            isWanted = true
            decisions.append(TraceDecision(.wanted, "wanted: acks ask its live voters for its content"))
        }
        if actions.dropContent {
            content = nil
            publishedBy = nil
            decisions.append(TraceDecision(.unpublished, "public content withdrawn: below K"))
        }
        if actions.dropWanted {
            dropOffers()
            decisions.append(TraceDecision(.offerDropped, "no longer wanted: its offers dropped"))
        }
        if actions.dropRawHash || actions.dropContent || actions.dropWanted {
            isWanted = false
            if actions.dropRawHash { decisions.append(TraceDecision(.belowK, "below K: the cloud keeps only counts under a keyed hash")) }
        }
        return decisions
    }
}

/// What the cloud did with one message, in words and as a kind a machine
/// can match.
public struct TraceDecision: Hashable, Sendable {
    public enum Kind: String, Hashable, Sendable {
        case counted, ignored, refused, withdrawn, votes, reachedK, belowK, wanted, offered, offerDropped, published,
             unpublished, purged
    }

    public let kind: Kind
    public let text: String

    init(_ kind: Kind, _ text: String) {
        self.kind = kind
        self.text = text
    }
}
