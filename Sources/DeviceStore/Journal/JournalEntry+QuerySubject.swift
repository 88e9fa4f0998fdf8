import Foundation
import IndexModel
import IndexQuery

/// Journal entries answer queries (`journal grep`) by these names, and by the
/// names of the attributes the event carries (an indexed or updated item's, a
/// recorded activity's). `*` and `**` look at those attributes.
///
/// | name | value |
/// |---|---|
/// | kind | the event kind: itemIndexed, itemDeleted, … |
/// | seq, epoch, call | numbers |
/// | time | the event's time (a date: compare with $time values) |
/// | device | the store's device ID |
/// | index | the named index |
/// | id | the item identifier, activity key or result reference |
/// | domain | an item's or activity's domain, or the domain a delete named |
/// | cause | identifier, domain or all, for deletions |
/// | batch | the batch's call number, when the event was written by a batch |
/// | clientState | the batch's client state, base64 |
/// | related | an activity's related (or weakly related) item identifier |
extension JournalEntry: QuerySubject {
    public static let fieldNames = ["kind", "seq", "epoch", "call", "time", "device", "index", "id", "domain",
                                    "cause", "batch", "clientState", "related"]

    public func value(of attribute: String) -> AttributeValue? {
        switch attribute {
        case "kind": return .string(event.kind.name)
        case "seq": return .number(Double(record.seq.rawValue))
        case "epoch": return .number(Double(record.epoch.rawValue))
        case "call": return .number(Double(record.call.rawValue))
        case "time": return .date(record.time)
        case "device": return .string(device.rawValue)
        case "index": return event.indexName.map(AttributeValue.string)
        case "id": return event.subject.map(AttributeValue.string)
        case "domain": return domain.map(AttributeValue.string)
        case "cause": return cause.map(AttributeValue.string)
        case "batch": return batch.map { .number(Double($0.call.rawValue)) }
        case "clientState": return batch.map { .string(Data($0.clientState).base64EncodedString()) }
        case "related":
            guard case .activityRecorded(let activity) = event else { return nil }
            let related = [activity.relatedUniqueIdentifier, activity.weakRelatedUniqueIdentifier].compactMap { $0 }
            return related.isEmpty ? nil : .strings(related)
        default:
            return carriedAttribute(attribute)
        }
    }

    public func values(includingContent: Bool) -> [AttributeValue] {
        switch event {
        case .itemIndexed(_, let item):
            return item.attributes.queryValues(includingContent: includingContent)
        case .itemUpdated(_, let update):
            return update.attributes.sortedEntries.compactMap { entry in
                entry.key.isSearched(includingContent: includingContent) ? entry.value : nil
            }
        case .activityRecorded(let activity):
            var values = activity.attributes.queryValues(includingContent: includingContent)
            if let title = activity.title { values.append(.string(title)) }
            if !activity.keywords.isEmpty { values.append(.strings(activity.keywords)) }
            return values
        default:
            return []
        }
    }

    private var domain: String? {
        switch event {
        case .itemIndexed(_, let item): item.domainIdentifier
        case .itemUpdated(_, let update): if case .set(let domain) = update.domainIdentifier { domain } else { nil }
        case .activityRecorded(let activity): activity.domainIdentifier
        case .itemDeleted(_, _, .domain(let domain)), .activityDeleted(_, .domain(let domain)): domain
        default: nil
        }
    }

    private var cause: String? {
        switch event {
        case .itemDeleted(_, _, let cause), .activityDeleted(_, let cause):
            switch cause {
            case .identifier: "identifier"
            case .domain: "domain"
            case .all: "all"
            }
        default: nil
        }
    }

    /// The names of the attributes the event carries (an indexed or updated
    /// item's, a recorded activity's), custom ones included.
    public var carriedAttributeNames: [String] {
        switch event {
        case .itemIndexed(_, let item): item.attributes.sortedEntries.map(\.key.name)
        case .itemUpdated(_, let update): update.attributes.sortedEntries.map(\.key.name)
        case .activityRecorded(let activity): activity.attributes.sortedEntries.map(\.key.name)
        default: []
        }
    }

    private func carriedAttribute(_ name: String) -> AttributeValue? {
        let key = AttributeKey(name: name)
        switch event {
        case .itemIndexed(_, let item):
            return item.attributes[key]
        case .itemUpdated(_, let update):
            return update.attributes[key] ?? nil
        case .activityRecorded(let activity):
            if key == .title, let title = activity.title { return .string(title) }
            if key == .keywords {
                let keywords = activity.keywords + (activity.attributes.keywords ?? [])
                return keywords.isEmpty ? nil : .strings(keywords)
            }
            return activity.attributes[key]
        default:
            return nil
        }
    }
}
