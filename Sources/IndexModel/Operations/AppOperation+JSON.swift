import Foundation

extension AppOperation {
    /// The operation as one line of an operations file; `OperationParser` reads it
    /// back to an equal operation.
    public var jsonLine: String {
        JSONWriter.compact(jsonValue)
    }

    public var jsonValue: JSONValue {
        var object: JSONObject = ["op": .string(name)]
        switch self {
        case .index(let index, let items):
            object["index"] = .string(index)
            object["items"] = .array(items.map(AppOperation.itemJSON))
        case .update(let index, let updates):
            object["index"] = .string(index)
            object["items"] = .array(updates.map(AppOperation.updateJSON))
        case .delete(let index, let identifiers):
            object["index"] = .string(index)
            object["ids"] = .array(identifiers.map(JSONValue.string))
        case .deleteDomains(let index, let domains):
            object["index"] = .string(index)
            object["domains"] = .array(domains.map(JSONValue.string))
        case .deleteAll(let index):
            object["index"] = .string(index)
        case .batch(let batch):
            object["index"] = .string(batch.index)
            object["clientState"] = .string(Data(batch.clientState).base64EncodedString())
            if case .expecting(let expected) = batch.condition {
                object["expectedClientState"] = expected.map { .string(Data($0).base64EncodedString()) } ?? .null
            }
            object["ops"] = .array(batch.operations.map(\.jsonValue))
        case .activity(let activity):
            for member in activity.operationJSON.members { object[member.key] = member.value }
        case .deleteActivities(let identifiers):
            object["ids"] = .array(identifiers.map(JSONValue.string))
        case .deleteActivityDomains(let domains):
            object["domains"] = .array(domains.map(JSONValue.string))
        case .deleteAllActivities:
            break
        case .shown(let ref), .engage(let ref):
            object["ref"] = .string(ref)
        case .advanceClock(let instant):
            object["to"] = .string(instant.description)
        }
        return .object(object)
    }

    static func operationJSON(_ value: AttributeValue) -> JSONValue {
        switch value {
        case .date(let timestamp): .object(["date": .string(timestamp.description)])
        default: value.jsonValue
        }
    }

    static func itemJSON(_ item: SearchableItem) -> JSONValue {
        var object: JSONObject = ["id": .string(item.uniqueIdentifier)]
        if let domain = item.domainIdentifier { object["domain"] = .string(domain) }
        if let expires = item.expirationDate { object["expires"] = .string(expires.description) }
        var custom = JSONObject()
        for (key, value) in item.attributes.sortedEntries {
            if key.isCustom {
                custom[key.name] = operationJSON(value)
            } else {
                object[key.name] = value.jsonValue
            }
        }
        if !custom.members.isEmpty { object["attributes"] = .object(custom) }
        return .object(object)
    }

    static func updateJSON(_ update: ItemUpdate) -> JSONValue {
        var object: JSONObject = ["id": .string(update.uniqueIdentifier)]
        switch update.domainIdentifier {
        case .keep: break
        case .set(let domain): object["domain"] = .string(domain)
        case .clear: object["domain"] = .null
        }
        switch update.expirationDate {
        case .keep: break
        case .set(let expires): object["expires"] = .string(expires.description)
        case .clear: object["expires"] = .null
        }
        var custom = JSONObject()
        for (key, value) in update.attributes.sortedEntries {
            let json = value.map(operationJSON) ?? .null
            if key.isCustom { custom[key.name] = json } else { object[key.name] = json }
        }
        if !custom.members.isEmpty { object["attributes"] = .object(custom) }
        return .object(object)
    }
}

extension UserActivity {
    /// The members of an `activity` operation line.
    var operationJSON: JSONObject {
        var object: JSONObject = ["type": .string(activityType)]
        if let title { object["title"] = .string(title) }
        if !keywords.isEmpty { object["keywords"] = .array(keywords.map(JSONValue.string)) }
        if !attributes.isEmpty {
            var attributesObject = JSONObject()
            for (key, value) in attributes.sortedEntries { attributesObject[key.name] = AppOperation.operationJSON(value) }
            object["attributes"] = .object(attributesObject)
        }
        if !userInfo.isEmpty {
            var info = JSONObject()
            for (key, value) in userInfo.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
                info[key] = .string(value)
            }
            object["userInfo"] = .object(info)
        }
        if let webpageURL { object["url"] = .string(webpageURL) }
        if let expirationDate { object["expires"] = .string(expirationDate.description) }
        object["searchable"] = .bool(eligibleForSearch)
        object["public"] = .bool(eligibleForPublicIndexing)
        object["handoff"] = .bool(eligibleForHandoff)
        if let relatedUniqueIdentifier { object["related"] = .string(relatedUniqueIdentifier) }
        if let weakRelatedUniqueIdentifier { object["weakRelated"] = .string(weakRelatedUniqueIdentifier) }
        if let domainIdentifier { object["domain"] = .string(domainIdentifier) }
        if let persistentIdentifier { object["id"] = .string(persistentIdentifier) }
        return object
    }
}
