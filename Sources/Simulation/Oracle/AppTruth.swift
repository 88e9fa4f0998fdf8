import IndexModel

/// What a simulated app knows about its own data, which survives a wipe of the
/// device's index store: every index operation it ever made, per named index,
/// in order. Each operation goes to the store in a batch whose client state is
/// the operation's position in this log, so after a restore the app resumes
/// from `fetchLastClientState` (Core Spotlight's recovery recipe).
struct AppTruth {
    private(set) var logs: [String: [AppOperation]] = [:]
    /// The items the app's data holds now (no expiry: that is the index's business).
    private(set) var items: [String: [String: SearchableItem]] = [:]

    static let indexes = ["notes", "catalogue"]

    /// Records `operation` and returns the batch that carries it to the store.
    mutating func record(_ operation: AppOperation) -> AppOperation {
        let index = operation.indexName!
        logs[index, default: []].append(operation)
        ItemFold.apply(operation, to: &items[index, default: [:]])
        return .batch(IndexBatch(index: index, operations: [operation], clientState: AppTruth.state(logs[index]!.count)))
    }

    /// The batches that bring a store whose client state for `index` is
    /// `state` up to date: the operations after it, or (with no state) a
    /// clean slate and every current item.
    func resume(index: String, from state: [UInt8]?) -> [AppOperation] {
        let log = logs[index] ?? []
        guard let state, let position = AppTruth.position(state), position <= log.count else {
            let current = (items[index] ?? [:]).values.sorted { $0.uniqueIdentifier < $1.uniqueIdentifier }
            var operations: [AppOperation] = [.deleteAll(index: index)]
            for chunk in stride(from: 0, to: current.count, by: 100) {
                operations.append(.index(index: index, items: Array(current[chunk..<min(chunk + 100, current.count)])))
            }
            return [.batch(IndexBatch(index: index, operations: operations, clientState: AppTruth.state(log.count)))]
        }
        return stride(from: position, to: log.count, by: 100).map { start in
            let end = min(start + 100, log.count)
            return .batch(IndexBatch(index: index, operations: Array(log[start..<end]), clientState: AppTruth.state(end)))
        }
    }

    static func state(_ position: Int) -> [UInt8] {
        withUnsafeBytes(of: UInt64(position).bigEndian) { Array($0) }
    }

    static func position(_ state: [UInt8]) -> Int? {
        guard state.count == 8 else { return nil }
        return Int(state.reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
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
