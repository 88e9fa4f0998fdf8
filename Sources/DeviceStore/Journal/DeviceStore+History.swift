import IndexModel

/// Everything the journal says about one identifier, in order: for items,
/// when each was created, replaced, updated, deleted (and why) or expired, by
/// which call and batch; activities with that key or related to it; results
/// shown and engaged under it.
public struct IdentifierHistory: Sendable {
    /// What one journal event did to the item with this identifier.
    public enum Change: Hashable, Sendable {
        /// Indexed while no item with this identifier was live in the index.
        case created
        /// Indexed again while live: replaced whole.
        case replaced
        /// Updated in place; the attribute names set or cleared (and "domain" or
        /// "expirationDate" when those changed).
        case updated([String])
        case deleted(DeletionCause)
        case expired
        /// An activity became current: its key is the identifier, or it is related
        /// to it (strongly or weakly).
        case activityRecorded(key: String, relation: Relation)
        case activityDeleted(DeletionCause)
        case activityExpired
        case shown
        case engaged
    }

    /// How an activity names the identifier: as its key, in `relatedUniqueIdentifier`,
    /// or in `weakRelatedUniqueIdentifier`.
    public enum Relation: String, Hashable, Sendable {
        case key, related, weaklyRelated
    }

    /// One event of the item's history: the journal entry and what it changed.
    public struct Step: Hashable, Sendable {
        public let entry: JournalEntry
        public let change: Change
    }

    public let identifier: String
    public var steps: [Step]
    public var scan: JournalEntryScan
}

extension DeviceStore {
    /// The history of one identifier, read from the whole journal.
    public func history(of identifier: String) throws(DeviceStoreError) -> IdentifierHistory {
        var steps: [IdentifierHistory.Step] = []
        var live = Set<String>()  // indexes where the item is live
        let scan = try scanEntries { entry in
            var change: IdentifierHistory.Change?
            switch entry.event {
            case .itemIndexed(let index, let item) where item.uniqueIdentifier == identifier:
                change = live.insert(index).inserted ? .created : .replaced
            case .itemUpdated(_, let update) where update.uniqueIdentifier == identifier:
                var names = update.attributes.sortedEntries.map(\.key.name)
                if update.domainIdentifier != .keep { names.append("domain") }
                if update.expirationDate != .keep { names.append("expirationDate") }
                change = .updated(names)
            case .itemDeleted(let index, let deleted, let cause) where deleted == identifier:
                live.remove(index)
                change = .deleted(cause)
            case .itemExpired(let index, let expired) where expired == identifier:
                live.remove(index)
                change = .expired
            case .activityRecorded(let activity):
                if activity.key == identifier {
                    change = .activityRecorded(key: activity.key, relation: .key)
                } else if activity.relatedUniqueIdentifier == identifier {
                    change = .activityRecorded(key: activity.key, relation: .related)
                } else if activity.weakRelatedUniqueIdentifier == identifier {
                    change = .activityRecorded(key: activity.key, relation: .weaklyRelated)
                }
            case .activityDeleted(let key, let cause) where key == identifier:
                change = .activityDeleted(cause)
            case .activityExpired(let key) where key == identifier:
                change = .activityExpired
            case .resultShown(let ref) where ref == identifier:
                change = .shown
            case .resultEngaged(let ref) where ref == identifier:
                change = .engaged
            default:
                break
            }
            if let change { steps.append(IdentifierHistory.Step(entry: entry, change: change)) }
            return true
        }
        return IdentifierHistory(identifier: identifier, steps: steps, scan: scan)
    }
}
