/// The size limits on what an app call may carry. They bound the memory and the
/// journal space one call can take and are checked before anything is written.
public enum Limits {
    /// Item identifiers, domain identifiers, index names, activity types, refs,
    /// attribute names and userInfo keys, in UTF-8 bytes.
    public static let identifierBytes = 1024
    /// One string attribute value, in UTF-8 bytes.
    public static let textBytes = 64 * 1024
    /// Elements of one list attribute (keywords, phone numbers).
    public static let listElements = 1024
    /// Items, updates, identifiers or domains in one call; operations in one batch.
    public static let elementsPerCall = 10_000
    /// Attributes of one attribute set.
    public static let attributesPerSet = 256
    /// Entries of an activity's userInfo.
    public static let userInfoEntries = 256
    /// A batch's client state, in bytes.
    public static let clientStateBytes = 4096
    /// One line of an operations file, in bytes.
    public static let lineBytes = 16 * 1024 * 1024
}
