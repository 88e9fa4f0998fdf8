import IndexModel

/// One search result. Items and activities that share an identifier (an item's
/// uniqueIdentifier, an activity's related identifiers, a contentURL or
/// webpageURL) are one result with several members, never duplicates.
public struct SearchResult: Hashable, Sendable {
    /// One thing a result stands for: an indexed item, or a searchable activity
    /// by its key. Items sort before activities.
    public enum Member: Hashable, Sendable, Comparable {
        case item(index: String, identifier: String)
        case activity(key: String)

        public static func < (lhs: Member, rhs: Member) -> Bool {
            switch (lhs, rhs) {
            case (.item(let leftIndex, let leftID), .item(let rightIndex, let rightID)):
                (leftIndex, leftID) < (rightIndex, rightID)
            case (.item, .activity): true
            case (.activity, .item): false
            case (.activity(let left), .activity(let right)): left < right
            }
        }
    }

    /// Items first, then activities, each in key order.
    public var members: [Member]
    public var title: String?
    public var contentDescription: String?
    public var url: String?
    /// Relevance weighted by engagement; higher is better. Comparable within one
    /// search only.
    public var score: Double
    /// Times the result was shown and engaged with, over all its identifiers.
    public var shown: Int
    public var engaged: Int
    /// The parts of `score`, when the search was asked to explain it.
    public var explanation: SearchExplanation?

    public init(members: [Member], title: String?, contentDescription: String?, url: String?, score: Double, shown: Int,
                engaged: Int, explanation: SearchExplanation? = nil) {
        self.members = members
        self.title = title
        self.contentDescription = contentDescription
        self.url = url
        self.score = score
        self.shown = shown
        self.engaged = engaged
        self.explanation = explanation
    }
}
