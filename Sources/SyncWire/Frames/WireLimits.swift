import IndexModel

/// The bounds every receiver enforces on frames. A frame beyond one is refused
/// before it costs more than the bound, and nothing of it is applied.
public enum WireLimits {
    /// A whole encoded frame (header, signature and compressed payload).
    public static let maximumFrameBytes = 1024 * 1024
    /// The payload once inflated.
    public static let maximumPayloadBytes = 16 * 1024 * 1024
    /// Inflated bytes per compressed byte: a higher ratio is a deflate bomb.
    public static let maximumCompressionRatio = 200
    /// Messages in one frame.
    public static let maximumMessages = 10_000
    /// One string field (activity type, title, keyword, description, URL,
    /// app, device), in UTF-8 bytes.
    public static let maximumStringBytes = 4 * 1024
    /// What a content message's activity type and web page URL may hold:
    /// one line of 1 to `maximumStringBytes` bytes (`TextRule`).
    public static let line = TextRule(.line, bytes: 1...maximumStringBytes)
    /// What a content message's title, keywords and description may hold:
    /// text of at most `maximumStringBytes` bytes, no NUL.
    public static let text = TextRule(.text, bytes: 0...maximumStringBytes)
    /// Keywords of one content message.
    public static let maximumKeywords = 64
    /// Hashes named in one acknowledgement's content requests.
    public static let maximumRequests = 10_000
    /// The largest epoch or outbox seq a frame or a reply may carry: 2^53 − 1,
    /// so that every position is exact as an `Int64` in a store, as a `Double`
    /// and as a JSON number. A device that wrote one message a microsecond
    /// would need 285 years to reach it.
    public static let maximumPosition: UInt64 = (1 << 53) - 1
    /// One count (views, shown or engaged) of one signal message. An honest
    /// device sends one event per message; the cloud caps each device's sum
    /// per hash and day besides (`docs/CLOUD.md`, "Popularity").
    public static let maximumSignalCount: UInt64 = 1_000
}

extension TextRule {
    /// What this rule refuses of a message's field `value`, as "`field`
    /// holds …", or nil when it admits the value or there is none.
    func problem(in value: String?, field: String) -> String? {
        guard let value else { return nil }
        return problem(value).map { "\(field) \($0)" }
    }
}
