/// A rule the embedded cloud breaks on purpose (`simulate --sabotage`), to
/// show what a failed run looks like end to end without editing code: the
/// failed invariant, every problem it found, the report and the replay.
/// Each breaks the rule in the cloud itself, so the failure is found the way
/// a real one would be.
public enum Sabotage: String, CaseIterable, Hashable, Sendable {
    /// The cloud shows a hash at K − 1 live votes.
    case threshold
    /// The cloud folds each withdrawal as a vote for its hash; its log keeps
    /// the frame as received, so its projections no longer follow its log.
    case withdrawals
    /// The cloud never purges the content of hashes below K from its log
    /// after a backup.
    case purge

    /// The invariant the sabotage breaks (others may fail with it).
    public var breaks: String {
        switch self {
        case .threshold: "public-index"
        case .withdrawals: "counts-exact"
        case .purge: "withdrawn-content-purged"
        }
    }

    /// What the cloud does wrong, in words.
    public var summary: String {
        switch self {
        case .threshold: "the embedded cloud shows a hash at K − 1 live votes"
        case .withdrawals: "the embedded cloud folds each withdrawal as a vote, so its projections no longer follow its log"
        case .purge: "the embedded cloud never purges withdrawn content from its log"
        }
    }
}
