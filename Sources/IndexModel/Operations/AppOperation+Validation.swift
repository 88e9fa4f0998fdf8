extension AppOperation {
    /// Checks the limits and rules that hold for every operation however it was
    /// made (from a file or by Swift code): sizes, finite numbers, attribute types,
    /// and no identifier twice in one call.
    public func validate() throws(OperationError) {
        switch self {
        case .index(let index, let items):
            try Validation.identifier(index, at: "index")
            try Validation.count(items.count, at: "items")
            var seen: [String: Int] = [:]
            for (position, item) in items.enumerated() {
                if items.count > 1 {
                    try Validation.unique(item.uniqueIdentifier, position: position, in: &seen, at: "items[\(position)].id",
                                          list: "items")
                }
                try Validation.item(item, at: "items[\(position)]")
            }
        case .update(let index, let updates):
            try Validation.identifier(index, at: "index")
            try Validation.count(updates.count, at: "items")
            var seen: [String: Int] = [:]
            for (position, update) in updates.enumerated() {
                let path = "items[\(position)]"
                try Validation.unique(update.uniqueIdentifier, position: position, in: &seen, at: path + ".id", list: "items")
                try Validation.identifier(update.uniqueIdentifier, at: path + ".id")
                if case .set(let domain) = update.domainIdentifier {
                    try Validation.identifier(domain, at: path + ".domain")
                }
                try Validation.attributeCount(update.attributes.entries.count, at: path)
                for (key, value) in update.attributes.entries {
                    if let value { try Validation.attribute(key, value, at: Validation.itemFieldPath(path, key)) }
                }
            }
        case .delete(let index, let identifiers):
            try Validation.identifier(index, at: "index")
            try Validation.identifierList(identifiers, at: "ids")
        case .deleteDomains(let index, let domains):
            try Validation.identifier(index, at: "index")
            try Validation.identifierList(domains, at: "domains")
        case .deleteAll(let index):
            try Validation.identifier(index, at: "index")
        case .batch(let batch):
            try Validation.identifier(batch.index, at: "index")
            try Validation.count(batch.operations.count, at: "ops", allowEmpty: true)
            guard batch.clientState.count <= Limits.clientStateBytes else {
                throw OperationError(path: "clientState", "is \(batch.clientState.count) bytes; the limit is \(Limits.clientStateBytes)")
            }
            if case .expecting(let expected?) = batch.condition, expected.count > Limits.clientStateBytes {
                throw OperationError(path: "expectedClientState", "is \(expected.count) bytes; the limit is \(Limits.clientStateBytes)")
            }
            for (position, operation) in batch.operations.enumerated() {
                let path = "ops[\(position)]"
                guard operation.isIndexOperation else {
                    throw OperationError(path: path + ".op", "\"\(operation.name)\" cannot appear in a batch (only index, update, delete, deleteDomains, deleteAll)")
                }
                guard operation.indexName == batch.index else {
                    throw OperationError(path: path + ".index", "names another index than the batch's")
                }
                do { try operation.validate() } catch { throw error.nested(under: path) }
            }
        case .activity(let activity):
            try Validation.activity(activity)
        case .deleteActivities(let identifiers):
            try Validation.identifierList(identifiers, at: "ids")
        case .deleteActivityDomains(let domains):
            try Validation.identifierList(domains, at: "domains")
        case .deleteAllActivities, .advanceClock:
            break
        case .shown(let ref), .engage(let ref):
            try Validation.identifier(ref, at: "ref")
        }
    }
}

enum Validation {
    /// Checks `value` with `rule` (`TextRule`), naming the field in the error.
    static func check(_ value: String, _ rule: TextRule, at path: @autoclosure () -> String) throws(OperationError) {
        do {
            try rule.check(value)
        } catch {
            throw OperationError(path: path(), error.description)
        }
    }

    static func identifier(_ value: String, at path: @autoclosure () -> String) throws(OperationError) {
        try check(value, .identifier, at: path())
    }

    static func text(_ value: String, at path: @autoclosure () -> String) throws(OperationError) {
        try check(value, .text, at: path())
    }

    static func count(_ count: Int, at path: @autoclosure () -> String, allowEmpty: Bool = false) throws(OperationError) {
        guard allowEmpty || count > 0 else { throw OperationError(path: path(), "must not be empty") }
        guard count <= Limits.elementsPerCall else {
            throw OperationError(path: path(), "has \(count) elements; the limit is \(Limits.elementsPerCall) per call")
        }
    }

    static func attributeCount(_ count: Int, at path: @autoclosure () -> String) throws(OperationError) {
        guard count <= Limits.attributesPerSet else {
            throw OperationError(path: path(), "has \(count) attributes; the limit is \(Limits.attributesPerSet)")
        }
    }

    static func unique(_ identifier: String, position: Int, in seen: inout [String: Int], at path: @autoclosure () -> String,
                       list: String) throws(OperationError) {
        if let first = seen[identifier] {
            throw OperationError(path: path(), "duplicate identifier \"\(TextRule.printable(identifier, limit: 64))\" (also at \(list)[\(first)])")
        }
        seen[identifier] = position
    }

    static func identifierList(_ identifiers: [String], at path: @autoclosure () -> String) throws(OperationError) {
        try count(identifiers.count, at: path())
        var seen: [String: Int] = [:]
        for (position, identifier) in identifiers.enumerated() {
            try self.identifier(identifier, at: "\(path())[\(position)]")
            try unique(identifier, position: position, in: &seen, at: "\(path())[\(position)]", list: path())
        }
    }

    static func item(_ item: SearchableItem, at path: @autoclosure () -> String) throws(OperationError) {
        try identifier(item.uniqueIdentifier, at: path() + ".id")
        if let domain = item.domainIdentifier { try identifier(domain, at: path() + ".domain") }
        try attributes(item.attributes, at: path()) { itemFieldPath(path(), $0) }
    }

    /// Where an item's attribute stands in an operations line: standard attributes
    /// are members of the item, custom ones members of its "attributes" object.
    static func itemFieldPath(_ itemPath: String, _ key: AttributeKey) -> String {
        itemPath + "." + (key.isCustom ? "attributes." : "") + TextRule.printable(key.name)
    }

    static func attributes(_ set: AttributeSet, at path: @autoclosure () -> String,
                           fieldPath: (AttributeKey) -> String) throws(OperationError) {
        try attributeCount(set.count, at: path())
        for entry in set.entries {
            try attribute(entry.key, entry.value, at: fieldPath(entry.key))
        }
    }

    static func attribute(_ key: AttributeKey, _ value: AttributeValue, at fieldPath: @autoclosure () -> String) throws(OperationError) {
        if case .custom(let name) = key {
            try identifier(name, at: fieldPath())
            // The codec writes standard attributes by tag and refuses a custom key with a
            // standard name, so letting one through would journal an unreadable event.
            guard AttributeKey(name: name).isCustom else {
                throw OperationError(path: fieldPath(), "is the name of a standard attribute; use its standard key")
            }
        }
        if let required = key.requiredType, required != value.type {
            throw OperationError(path: fieldPath(), "must be \(required), found \(value.type)")
        }
        switch value {
        case .string(let text):
            try self.text(text, at: fieldPath())
        case .strings(let list):
            guard list.count <= Limits.listElements else {
                throw OperationError(path: fieldPath(), "has \(list.count) elements; the limit is \(Limits.listElements)")
            }
            for (position, text) in list.enumerated() { try self.text(text, at: "\(fieldPath())[\(position)]") }
        case .number(let number):
            guard number.isFinite else { throw OperationError(path: fieldPath(), "must be a finite number") }
        case .date, .bool:
            break
        }
    }

    static func activity(_ activity: UserActivity) throws(OperationError) {
        try identifier(activity.activityType, at: "type")
        if let title = activity.title { try text(title, at: "title") }
        guard activity.keywords.count <= Limits.listElements else {
            throw OperationError(path: "keywords", "has \(activity.keywords.count) elements; the limit is \(Limits.listElements)")
        }
        for (position, keyword) in activity.keywords.enumerated() { try text(keyword, at: "keywords[\(position)]") }
        try attributes(activity.attributes, at: "attributes") { "attributes." + TextRule.printable($0.name) }
        guard activity.userInfo.count <= Limits.userInfoEntries else {
            throw OperationError(path: "userInfo", "has \(activity.userInfo.count) entries; the limit is \(Limits.userInfoEntries)")
        }
        for (key, value) in activity.userInfo {
            try identifier(key, at: "userInfo")
            try text(value, at: "userInfo." + TextRule.printable(key))
        }
        if let url = activity.webpageURL {
            try check(url, .url, at: "url")
            // Its URL is what a public item links to (`LinkRule`).
            guard !activity.eligibleForPublicIndexing || LinkRule.isWeb(url) else {
                throw OperationError(path: "url", "a public activity's web page URL must be an http or https URL with a host")
            }
        }
        if let related = activity.relatedUniqueIdentifier { try identifier(related, at: "related") }
        if let weak = activity.weakRelatedUniqueIdentifier { try identifier(weak, at: "weakRelated") }
        if let domain = activity.domainIdentifier { try identifier(domain, at: "domain") }
        if let persistent = activity.persistentIdentifier { try identifier(persistent, at: "id") }
    }
}
