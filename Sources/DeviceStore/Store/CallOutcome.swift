import IndexModel

/// What one committed call did: its call number, the journal seqs it appended,
/// and counts by effect.
public struct CallOutcome: Hashable, Sendable {
    public var call: CallID
    /// The seqs appended, nil when the call changed nothing (an update of absent
    /// items, a delete of unknown identifiers).
    public var seqs: ClosedRange<Seq>?
    public var indexed = 0
    public var updated = 0
    /// Updates of items that do not exist, ignored as Core Spotlight does.
    public var ignored = 0
    public var deleted = 0
    /// Items and activities removed because their expiration date passed.
    public var expired = 0
    public var activities = 0
    public var engagements = 0
    public var clientStates = 0

    public init(call: CallID) {
        self.call = call
    }

    public var eventCount: Int {
        guard let seqs else { return 0 }
        return Int(seqs.upperBound.rawValue - seqs.lowerBound.rawValue + 1)
    }

    /// A one-line summary such as `2 indexed, 1 expired (seq 4-6)`.
    public var summary: String {
        var parts: [String] = []
        for (count, word) in [(indexed, "indexed"), (updated, "updated"), (ignored, "ignored (absent)"),
                              (deleted, "deleted"), (expired, "expired"), (activities, "activity recorded"),
                              (engagements, "engagement recorded"), (clientStates, "client state set")] where count > 0 {
            parts.append("\(count) \(word)")
        }
        if parts.isEmpty { parts.append("no change") }
        let range = seqs.map { $0.lowerBound == $0.upperBound ? " (seq \($0.lowerBound))" : " (seq \($0.lowerBound)-\($0.upperBound))" } ?? ""
        return parts.joined(separator: ", ") + range
    }
}
