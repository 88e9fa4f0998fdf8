/// The messages an epoch's calls implied, one group per call, in call order
/// (`SimDevice.expected`). Held flat: the messages in one array and where
/// each group ends in another, so a call costs its messages and four bytes,
/// not an array of its own.
struct MessageGroups: RandomAccessCollection, ExpressibleByArrayLiteral {
    private var messages: [ExpectedMessage] = []
    /// Where each group ends in `messages`.
    private var ends: [UInt32] = []

    init() {}

    init(arrayLiteral groups: [ExpectedMessage]...) {
        for group in groups { append(group) }
    }

    init(_ groups: some Sequence<[ExpectedMessage]>) {
        for group in groups { append(group) }
    }

    var startIndex: Int { 0 }
    var endIndex: Int { ends.count }

    subscript(position: Int) -> ArraySlice<ExpectedMessage> {
        let start = position == 0 ? 0 : Int(ends[position - 1])
        return messages[start..<Int(ends[position])]
    }

    mutating func append(_ group: [ExpectedMessage]) {
        messages += group
        ends.append(UInt32(messages.count))
    }
}
