import IndexModel

/// What a simulated app knows about its own data, which survives a wipe of the
/// device's index store: the index operations it made, per named index, in
/// order. Each operation goes to the store in a batch whose client state is
/// the operation's position in this log, so after a restore the app resumes
/// from `fetchLastClientState` (Core Spotlight's recovery recipe).
///
/// The app keeps an index's operations only as far back as a restore can
/// take its store: from the oldest client state among the device's backups
/// (`keep(from:)`). A store that was never restored is as far on as the log,
/// and a restore brings back a backup's state, so older operations are never
/// asked for; with no backup, none is kept. A simulation of a million devices
/// would otherwise hold every call's items twice.
struct AppTruth {
    /// Each index's position: how many operations the app made on it, kept
    /// or not. It is the client state the index's last batch carried, and
    /// so the one a backup taken now holds.
    private(set) var positions: [String: Int] = [:]
    /// Per index with a backup: the operations from position `from` on.
    private var kept: [String: (from: Int, operations: [AppOperation])] = [:]
    /// The items the app's data holds now (no expiry: that is the index's business).
    private(set) var items: [String: [String: SearchableItem]] = [:]

    static let indexes = ["notes", "catalogue"]

    /// Records `operation` and returns the batch that carries it to the store.
    mutating func record(_ operation: AppOperation) -> AppOperation {
        let index = operation.indexName!
        let count = positions[index, default: 0] + 1
        positions[index] = count
        kept[index]?.operations.append(operation)
        ItemFold.apply(operation, to: &items[index, default: [:]])
        return .batch(IndexBatch(index: index, operations: [operation], clientState: AppTruth.state(count)))
    }

    /// Keeps each index's operations from `oldest[index]` on, the oldest
    /// position a restore can bring its store back to; an index not named
    /// keeps none. Each position is one `positions` held when a backup was
    /// taken, and none is older than the last `keep` gave for its index.
    mutating func keep(from oldest: [String: Int]) {
        for index in Set(kept.keys).union(oldest.keys) {
            guard let position = oldest[index] else {
                kept[index] = nil
                continue
            }
            guard let tail = kept[index] else {
                // A backup taken since the last keep: nothing before it is needed.
                kept[index] = (position, [])
                continue
            }
            let drop = min(max(position - tail.from, 0), tail.operations.count)
            if drop > 0 {
                kept[index] = (tail.from + drop, Array(tail.operations[drop...]))
            }
        }
    }

    /// The batches that bring a store whose client state for `index` is
    /// `state` up to date: the operations after it, or (with no state, or
    /// one the log no longer reaches back to) a clean slate and every
    /// current item.
    func resume(index: String, from state: [UInt8]?) -> [AppOperation] {
        let count = positions[index] ?? 0
        let position = state.flatMap(AppTruth.position)
        if let position, position == count { return [] }
        guard let position, position < count, let tail = kept[index], position >= tail.from else {
            let current = (items[index] ?? [:]).values.sorted { $0.uniqueIdentifier < $1.uniqueIdentifier }
            var operations: [AppOperation] = [.deleteAll(index: index)]
            for chunk in stride(from: 0, to: current.count, by: 100) {
                operations.append(.index(index: index, items: Array(current[chunk..<min(chunk + 100, current.count)])))
            }
            return [.batch(IndexBatch(index: index, operations: operations, clientState: AppTruth.state(count)))]
        }
        return stride(from: position, to: count, by: 100).map { start in
            let end = min(start + 100, count)
            return .batch(IndexBatch(index: index, operations: Array(tail.operations[(start - tail.from)..<(end - tail.from)]),
                                     clientState: AppTruth.state(end)))
        }
    }

    static func state(_ position: Int) -> [UInt8] {
        withUnsafeBytes(of: UInt64(position).bigEndian) { Array($0) }
    }

    static func position(_ state: [UInt8]) -> Int? {
        guard state.count == 8 else { return nil }
        return Int(exactly: state.reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
    }
}

/// Index operations folded over one named index's items, as Core Spotlight
/// defines them (without expiry).
enum ItemFold {
    /// Applies `operation` and returns the identifiers it removed.
    @discardableResult
    static func apply(_ operation: AppOperation, to items: inout [String: SearchableItem]) -> [String] {
        var removed: [String] = []
        switch operation {
        case .index(_, let new):
            for item in new { items[item.uniqueIdentifier] = item }
        case .update(_, let updates):
            for update in updates {
                if let existing = items[update.uniqueIdentifier] {
                    items[update.uniqueIdentifier] = existing.applying(update)
                }
            }
        case .delete(_, let identifiers):
            for identifier in identifiers where items.removeValue(forKey: identifier) != nil {
                removed.append(identifier)
            }
        case .deleteDomains(_, let domains):
            for (identifier, item) in items.sorted(by: { $0.key < $1.key }) {
                guard let domain = item.domainIdentifier,
                      domains.contains(where: { domain == $0 || domain.hasPrefix($0 + ".") }) else { continue }
                items.removeValue(forKey: identifier)
                removed.append(identifier)
            }
        case .deleteAll:
            removed = items.keys.sorted()
            items.removeAll()
        case .batch(let batch):
            for inner in batch.operations { removed += apply(inner, to: &items) }
        default:
            break
        }
        return removed
    }
}
