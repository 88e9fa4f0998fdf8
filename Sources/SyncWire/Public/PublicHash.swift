import ByteCoding
import Crypto
import IndexModel

/// The one-way identity of a public activity as the cloud sees it: SHA-256 over
/// the app's salt, the activity type and the activity's public identity (its web
/// page URL, else its title). Every device of one app computes the same hash for
/// the same public activity, so the cloud can count devices per activity without
/// being told what the activity is. `Journal/FORMAT.md` gives the exact bytes.
public struct PublicHash: Hashable, Sendable, Comparable, CustomStringConvertible {
    public static let byteCount = 32
    public let bytes: [UInt8]

    public init?(_ bytes: [UInt8]) {
        guard bytes.count == PublicHash.byteCount else { return nil }
        self.bytes = bytes
    }

    init(unchecked bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The hash of the activity with this type and public identity, for `app`.
    public static func of(app: AppID, activityType: String, identity: String) -> PublicHash {
        var writer = BinaryWriter()
        writer.string("sightline public activity v1")
        writer.string(app.rawValue)
        writer.string(activityType)
        writer.string(identity)
        return PublicHash(unchecked: Array(SHA256.hash(data: writer.bytes)))
    }

    /// The hash of `content`, which the cloud recomputes to check that uploaded
    /// content belongs to the hash it asked for.
    public static func of(app: AppID, content: PublicContent) -> PublicHash? {
        content.identity.map { of(app: app, activityType: content.activityType, identity: $0) }
    }

    /// A hash written as 64 hexadecimal digits (either case).
    public init?(hex: String) {
        guard let bytes = Hex.decode(hex), bytes.count == PublicHash.byteCount else { return nil }
        self.bytes = bytes
    }

    public var hex: String { bytes.hex }
    public var description: String { String(hex.prefix(16)) }

    /// A SHA-256 output is uniform, so its first eight bytes hash as well as all
    /// 32; equality still compares every byte. Folds look hashes up per message.
    public func hash(into hasher: inout Hasher) {
        var prefix: UInt64 = 0
        for index in 0..<8 { prefix = prefix << 8 | UInt64(bytes[index]) }
        hasher.combine(prefix)
    }

    public static func == (lhs: PublicHash, rhs: PublicHash) -> Bool {
        lhs.bytes == rhs.bytes
    }

    public static func < (lhs: PublicHash, rhs: PublicHash) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }
}

/// A device's vote token for one public hash: HMAC-SHA256 of the hash under the
/// device's vote secret, cut to 16 bytes. The same device always gives the same
/// token for a hash (so a vote sent twice, or again after a restore, counts once)
/// and tokens of one device for different hashes cannot be linked.
public struct VoteToken: Hashable, Sendable, Comparable, CustomStringConvertible {
    public static let byteCount = 16
    public let bytes: [UInt8]

    public init?(_ bytes: [UInt8]) {
        guard bytes.count == VoteToken.byteCount else { return nil }
        self.bytes = bytes
    }

    init(unchecked bytes: [UInt8]) {
        self.bytes = bytes
    }

    public init(secret: [UInt8], hash: PublicHash) {
        let mac = HMAC<SHA256>.authenticationCode(for: hash.bytes, using: SymmetricKey(data: secret))
        bytes = Array(Array(mac).prefix(VoteToken.byteCount))
    }

    public var description: String { bytes.hex }

    public static func < (lhs: VoteToken, rhs: VoteToken) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }
}

/// The public fields of a public activity: what the cloud may show once enough
/// devices have voted for its hash. userInfo, identifiers, domains and dates
/// never leave the device.
public struct PublicContent: Hashable, Sendable {
    public var activityType: String
    public var title: String?
    public var keywords: [String]
    public var contentDescription: String?
    public var webpageURL: String?

    public init(activityType: String, title: String?, keywords: [String], contentDescription: String?, webpageURL: String?) {
        self.activityType = activityType
        self.title = title
        self.keywords = keywords
        self.contentDescription = contentDescription
        self.webpageURL = webpageURL
    }

    /// The public content of `activity`, or nil when it is not public: it must
    /// be eligible for search and for public indexing, have a web page URL or a
    /// title to be known by, and fit the wire's sizes (`fitsWireLimits`). An
    /// activity that does not is kept private: nothing of it leaves the device.
    ///
    /// What its text may hold is not part of this decision, which the privacy
    /// projection makes the same way for every journal, including those an
    /// older build wrote: the API refuses text no frame may carry
    /// (`TextRule`), and such content an older build journaled is never sent
    /// (`textProblem`, `OutboxMessage.asSent`).
    public init?(_ activity: UserActivity) {
        guard activity.eligibleForSearch && activity.eligibleForPublicIndexing else { return nil }
        self.init(activityType: activity.activityType,
                  title: activity.title ?? activity.attributes.title,
                  keywords: activity.keywords + (activity.attributes.keywords ?? []),
                  contentDescription: activity.attributes.contentDescription,
                  webpageURL: activity.webpageURL)
        guard identity != nil, fitsWireLimits else { return nil }
    }

    /// Whether the content fits the wire's sizes: at most
    /// `WireLimits.maximumKeywords` keywords, each string at most
    /// `WireLimits.maximumStringBytes`.
    public var fitsWireLimits: Bool {
        let strings = [activityType, title, contentDescription, webpageURL].compactMap { $0 } + keywords
        return keywords.count <= WireLimits.maximumKeywords && strings.allSatisfy { $0.utf8.count <= WireLimits.maximumStringBytes }
    }

    /// Whether a field holds a NUL, which no store can keep exactly
    /// (`TextRule`). No frame carries such content (`textProblem`); a log
    /// row an older build accepted may, and the fold gives it no effect.
    public var holdsNUL: Bool {
        ([activityType, title, contentDescription, webpageURL].compactMap { $0 } + keywords).contains { $0.utf8.contains(0) }
    }

    /// The first field a content message may not carry as it is, and why:
    /// the type and URL must be lines (`WireLimits.line`), the URL an http
    /// or https one (`LinkRule`: a public item links to it), the title,
    /// keywords and description text (`WireLimits.text`), each at most
    /// `WireLimits.maximumStringBytes`. Nil when every field passes. The
    /// cloud refuses a frame with such content where it parses it; a device
    /// never journals a request for it (`recordContentRequests`) and sends a
    /// message an older build made of it as withheld (`OutboxMessage.asSent`).
    public var textProblem: String? {
        func check(_ value: String?, _ rule: TextRule, _ field: String) -> String? { rule.problem(in: value, field: field) }
        if let webpageURL, WireLimits.line.admits(webpageURL), !LinkRule.isWeb(webpageURL) {
            return "url is not an http or https URL with a host"
        }
        if let problem = check(activityType, WireLimits.line, "type") ?? check(webpageURL, WireLimits.line, "url")
            ?? check(title, WireLimits.text, "title") ?? check(contentDescription, WireLimits.text, "description") {
            return problem
        }
        for (position, keyword) in keywords.enumerated() {
            if let problem = check(keyword, WireLimits.text, "keyword \(position)") { return problem }
        }
        return nil
    }

    /// Writes the fields as a content message carries them, after its hash:
    /// equal content writes equal bytes.
    public func encode(to writer: inout BinaryWriter) {
        writer.string(activityType)
        writer.optional(title) { $0.string($1) }
        writer.uvarint(UInt64(keywords.count))
        for keyword in keywords { writer.string(keyword) }
        writer.optional(contentDescription) { $0.string($1) }
        writer.optional(webpageURL) { $0.string($1) }
    }

    /// What the public hash is computed over besides the type: the URL, else the title.
    public var identity: String? {
        if let webpageURL { return "url:" + webpageURL }
        if let title { return "title:" + title }
        return nil
    }
}

extension Sequence<UInt8> {
    var hex: String { Hex.encode(self) }
}
