import SyncWire

/// Which content of a hash becomes public, the same for every backend
/// (`docs/CLOUD.md`, "Content agreement"). The threshold decides *whether* a
/// hash is public; this rule decides *what* it shows.
///
/// - Content is asked for only while the hash has at least K live votes and
///   no public content (`ThresholdRule`'s *wanted*).
/// - Content from a device without a live vote for the hash is ignored, and
///   the frame accepted. Refusing the frame would wedge an honest device for
///   good, since it sends the same frame again: a device restored from a
///   backup can believe in a vote it withdrew after the backup, and a device
///   whose vote the cloud lost with an ended epoch (a cloud restored from an
///   older snapshot after the device moved on) believes in a vote the cloud
///   never counted.
/// - A live voter's content is its *offer*: the cloud keeps a keyed digest of
///   the content's bytes per voter, and a later offer replaces an earlier
///   one. An offer ends when its voter's vote does, and all offers go when
///   the hash falls below K (they are kept only while the hash is wanted).
/// - Content becomes public once `agreement` live voters (K) offered
///   byte-identical content. A personalised title that differs per device
///   never agrees, so it never becomes public, and one device can never
///   choose what a public hash shows.
/// - Public content stays while the hash has K live votes, like the hash.
/// - A hash whose web page the crawler recorded (`CrawlerRule`) needs no
///   agreement: the first live voter's offer whose URL is a crawled page's
///   makes it public. Its hash fixes the activity's type and URL, so the
///   offer cannot lie about them, and of the offer only those two are kept
///   (`fromPage`): everything the hash shows comes from the page.
public enum ContentRule {
    /// What to do with content a device sent for a hash.
    public enum Verdict: Hashable, Sendable {
        /// Nothing is kept, and the frame is accepted.
        case ignore
        /// The content is this voter's offer.
        case offer
    }

    /// `hasVoted` and `isLive` describe the sending device's vote for the
    /// hash; `liveVotes` and `hasContent` the hash.
    public static func verdict(hasVoted: Bool, isLive: Bool, liveVotes: Int64, threshold: Int, hasContent: Bool) -> Verdict {
        guard hasVoted, isLive, liveVotes >= Int64(threshold), !hasContent else { return .ignore }
        return .offer
    }

    /// Whether content that `agreeing` live voters offered, byte for byte,
    /// becomes the hash's public content.
    public static func publishes(agreeing: Int64, agreement: Int, liveVotes: Int64, threshold: Int, hasContent: Bool) -> Bool {
        !hasContent && liveVotes >= Int64(threshold) && agreeing >= Int64(agreement)
    }

    /// The content kept for a hash that a crawled page at `content`'s URL
    /// shows: its type and URL, which its hash fixes, and nothing a device
    /// chose.
    public static func fromPage(_ content: PublicContent) -> PublicContent {
        PublicContent(activityType: content.activityType, title: nil, keywords: [], contentDescription: nil,
                      webpageURL: content.webpageURL)
    }

    /// Whether the ack to a device that just sent a vote for a hash asks it
    /// for the hash's content directly. The app-wide request for a wanted
    /// hash goes out once, when it reaches K; a device whose vote came later
    /// (or came again, after a restore lost it) would otherwise never hear it.
    public static func asksVoter(isLive: Bool, hasOffer: Bool, liveVotes: Int64, threshold: Int, hasContent: Bool) -> Bool {
        isLive && !hasOffer && liveVotes >= Int64(threshold) && !hasContent
    }
}
