/// The name of an attribute: one of Core Spotlight's standard attributes, each
/// with a fixed type, or a custom attribute whose type is given by its value.
///
/// Standard keys carry the tag they are encoded with (`Journal/FORMAT.md`); tags
/// are never reused. Keys order by tag, custom keys last by name, which is the
/// canonical order of an encoded attribute set.
public enum AttributeKey: Hashable, Sendable, Comparable, CustomStringConvertible {
    case title
    case displayName
    case contentDescription
    case keywords
    case contentType
    case contentURL
    case thumbnailURL
    case rating
    case ratingDescription
    case startDate
    case endDate
    case dueDate
    case completionDate
    case phoneNumbers
    case supportsPhoneCall
    case latitude
    case longitude
    case supportsNavigation
    case rankingHint
    case relatedUniqueIdentifier
    case weakRelatedUniqueIdentifier
    case domainIdentifier
    case custom(String)

    /// Every standard key, in tag order.
    public static let standard: [AttributeKey] = [
        .title, .displayName, .contentDescription, .keywords, .contentType, .contentURL, .thumbnailURL,
        .rating, .ratingDescription, .startDate, .endDate, .dueDate, .completionDate, .phoneNumbers,
        .supportsPhoneCall, .latitude, .longitude, .supportsNavigation, .rankingHint,
        .relatedUniqueIdentifier, .weakRelatedUniqueIdentifier, .domainIdentifier,
    ]

    private static let byName: [String: AttributeKey] = Dictionary(
        uniqueKeysWithValues: standard.map { ($0.name, $0) })

    /// The key for a name: a standard key when the name is one, else a custom key.
    public init(name: String) {
        self = AttributeKey.byName[name] ?? .custom(name)
    }

    /// The standard key whose codec tag is `tag`, or nil for an unknown tag (0 is custom).
    public init?(tag: UInt8) {
        guard tag >= 1, Int(tag) <= AttributeKey.standard.count else { return nil }
        self = AttributeKey.standard[Int(tag) - 1]
    }

    /// The codec tag: 1… for standard keys in the order of `standard`, 0 for custom keys.
    public var tag: UInt8 {
        switch self {
        case .title: 1
        case .displayName: 2
        case .contentDescription: 3
        case .keywords: 4
        case .contentType: 5
        case .contentURL: 6
        case .thumbnailURL: 7
        case .rating: 8
        case .ratingDescription: 9
        case .startDate: 10
        case .endDate: 11
        case .dueDate: 12
        case .completionDate: 13
        case .phoneNumbers: 14
        case .supportsPhoneCall: 15
        case .latitude: 16
        case .longitude: 17
        case .supportsNavigation: 18
        case .rankingHint: 19
        case .relatedUniqueIdentifier: 20
        case .weakRelatedUniqueIdentifier: 21
        case .domainIdentifier: 22
        case .custom: 0
        }
    }

    /// The attribute's name as used in operations files, queries and exports.
    public var name: String {
        switch self {
        case .title: "title"
        case .displayName: "displayName"
        case .contentDescription: "contentDescription"
        case .keywords: "keywords"
        case .contentType: "contentType"
        case .contentURL: "contentURL"
        case .thumbnailURL: "thumbnailURL"
        case .rating: "rating"
        case .ratingDescription: "ratingDescription"
        case .startDate: "startDate"
        case .endDate: "endDate"
        case .dueDate: "dueDate"
        case .completionDate: "completionDate"
        case .phoneNumbers: "phoneNumbers"
        case .supportsPhoneCall: "supportsPhoneCall"
        case .latitude: "latitude"
        case .longitude: "longitude"
        case .supportsNavigation: "supportsNavigation"
        case .rankingHint: "rankingHint"
        case .relatedUniqueIdentifier: "relatedUniqueIdentifier"
        case .weakRelatedUniqueIdentifier: "weakRelatedUniqueIdentifier"
        case .domainIdentifier: "domainIdentifier"
        case .custom(let name): name
        }
    }

    /// The type a standard key's value must have; nil for custom keys (any type).
    public var requiredType: AttributeType? {
        switch self {
        case .title, .displayName, .contentDescription, .contentType, .contentURL, .thumbnailURL,
             .ratingDescription, .relatedUniqueIdentifier, .weakRelatedUniqueIdentifier, .domainIdentifier:
            .string
        case .keywords, .phoneNumbers:
            .strings
        case .rating, .latitude, .longitude, .rankingHint:
            .number
        case .startDate, .endDate, .dueDate, .completionDate:
            .date
        case .supportsPhoneCall, .supportsNavigation:
            .bool
        case .custom:
            nil
        }
    }

    public var isCustom: Bool {
        if case .custom = self { return true }
        return false
    }

    public var description: String { name }

    public static func < (lhs: AttributeKey, rhs: AttributeKey) -> Bool {
        switch (lhs, rhs) {
        case (.custom(let left), .custom(let right)): left.utf8.lexicographicallyPrecedes(right.utf8)
        case (.custom, _): false
        case (_, .custom): true
        default: lhs.tag < rhs.tag
        }
    }
}
