/// An activity the user performed in an app, as `NSUserActivity` made current.
///
/// All eligibility flags default to false, as in iOS: an activity that is not
/// eligible for search is journaled but never returned by search, and nothing of
/// an activity that is not eligible for public indexing ever leaves the device.
public struct UserActivity: Hashable, Sendable {
    public var activityType: String
    public var title: String?
    public var keywords: [String]
    public var attributes: AttributeSet
    /// App-defined state, string values only, kept sorted by key when encoded.
    public var userInfo: [String: String]
    public var webpageURL: String?
    public var expirationDate: Timestamp?
    public var eligibleForSearch: Bool
    public var eligibleForHandoff: Bool
    public var eligibleForPublicIndexing: Bool
    /// A strong link to an item's uniqueIdentifier: deleting that item makes the
    /// activity ineligible for search until it becomes current again.
    public var relatedUniqueIdentifier: String?
    /// A weak link: the activity and the item are one search result, and deleting
    /// the item leaves the activity as it is.
    public var weakRelatedUniqueIdentifier: String?
    public var domainIdentifier: String?
    /// The app's name for the activity (`persistentIdentifier`), used to delete it.
    public var persistentIdentifier: String?

    public init(
        activityType: String,
        title: String? = nil,
        keywords: [String] = [],
        attributes: AttributeSet = AttributeSet(),
        userInfo: [String: String] = [:],
        webpageURL: String? = nil,
        expirationDate: Timestamp? = nil,
        eligibleForSearch: Bool = false,
        eligibleForHandoff: Bool = false,
        eligibleForPublicIndexing: Bool = false,
        relatedUniqueIdentifier: String? = nil,
        weakRelatedUniqueIdentifier: String? = nil,
        domainIdentifier: String? = nil,
        persistentIdentifier: String? = nil
    ) {
        self.activityType = activityType
        self.title = title
        self.keywords = keywords
        self.attributes = attributes
        self.userInfo = userInfo
        self.webpageURL = webpageURL
        self.expirationDate = expirationDate
        self.eligibleForSearch = eligibleForSearch
        self.eligibleForHandoff = eligibleForHandoff
        self.eligibleForPublicIndexing = eligibleForPublicIndexing
        self.relatedUniqueIdentifier = relatedUniqueIdentifier
        self.weakRelatedUniqueIdentifier = weakRelatedUniqueIdentifier
        self.domainIdentifier = domainIdentifier
        self.persistentIdentifier = persistentIdentifier
    }

    /// The activity's identity on the device: the persistent identifier when the app
    /// gave one, else its type with its URL (or its userInfo, or its title). Making
    /// an activity with the same key current again replaces it and counts a view.
    public var key: String {
        if let persistentIdentifier { return UserActivity.key(persistentIdentifier: persistentIdentifier) }
        let identity: String
        if let webpageURL {
            identity = "url:" + webpageURL
        } else if !userInfo.isEmpty {
            identity = "info:" + userInfo.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
                .map { "\($0.key.count):\($0.key)=\($0.value.count):\($0.value)" }
                .joined(separator: ";")
        } else {
            identity = "title:" + (title ?? "")
        }
        return "type:" + String(activityType.count) + ":" + activityType + "|" + identity
    }

    /// The key of an activity the app named with `persistentIdentifier`.
    public static func key(persistentIdentifier: String) -> String {
        "id:" + persistentIdentifier
    }

    /// The references engagement with the activity is matched by: its URL,
    /// related and weakly related identifier, each once, sorted.
    public var engagementRefs: [String] {
        UserActivity.sortedDistinct(webpageURL, relatedUniqueIdentifier, weakRelatedUniqueIdentifier)
    }

    /// Those of three references that are set, each once, sorted: sorting
    /// three beats hashing them into a set.
    static func sortedDistinct(_ first: String?, _ second: String?, _ third: String?) -> [String] {
        var distinct: [String] = []
        distinct.reserveCapacity(3)
        for ref in [first, second, third].compactMap({ $0 }).sorted() where distinct.last != ref { distinct.append(ref) }
        return distinct
    }
}
