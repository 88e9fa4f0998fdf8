import IndexModel

/// What cutting a cloud store back to an instant kept (`CloudIndex.cut(through:)`).
public struct CloudLogCut: Hashable, Sendable {
    /// The instant the log was cut back to.
    public let through: Timestamp
    /// Each app's chain as it is after the cut (apps with no row left are absent).
    public let heads: [CloudLogHead]
    /// Log rows before, and rows removed.
    public let rowsBefore: Int
    public let rowsRemoved: Int

    public init(through: Timestamp, heads: [CloudLogHead], rowsBefore: Int, rowsRemoved: Int) {
        self.through = through
        self.heads = heads
        self.rowsBefore = rowsBefore
        self.rowsRemoved = rowsRemoved
    }

    /// The log rows kept.
    public var rowsKept: Int { rowsBefore - rowsRemoved }
}
