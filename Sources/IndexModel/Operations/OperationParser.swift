import Foundation

/// Reads one line of an operations file (JSON Lines, format in DESIGN.md and
/// docs/CLI.md) into an `AppOperation`, checking every field: unknown operations and
/// fields, wrong types, bad dates and base64, sizes over `Limits`, duplicate
/// identifiers. The error names the field; nothing is applied for a bad line.
public enum OperationParser {
    public static func parse(line bytes: [UInt8]) throws(OperationError) -> AppOperation {
        guard bytes.count <= Limits.lineBytes else {
            throw OperationError(path: "", "line is \(bytes.count) bytes; the limit is \(Limits.lineBytes)")
        }
        let value: JSONValue
        do {
            value = try JSONReader.parse(bytes)
        } catch {
            throw OperationError(path: "column \(error.column)", error.message)
        }
        let operation = try parse(value, path: "")
        try operation.validate()
        return operation
    }

    public static func parse(line text: String) throws(OperationError) -> AppOperation {
        try parse(line: Array(text.utf8))
    }

    static let operationNames = [
        "index", "update", "delete", "deleteDomains", "deleteAll", "batch", "activity", "deleteActivities",
        "deleteActivityDomains", "deleteAllActivities", "shown", "engage", "advanceClock",
    ]

    /// The operations that carry an "index" member.
    static let indexedOperationNames: Set<String> = ["index", "update", "delete", "deleteDomains", "deleteAll", "batch"]

    static func parse(_ value: JSONValue, path: String) throws(OperationError) -> AppOperation {
        var fields = try Fields(value, path: path)
        let name = try fields.string("op")
        let operation: AppOperation
        switch name {
        case "index":
            let index = try fields.string("index")
            let items = try fields.array("items") { (element, path) throws(OperationError) in try item(element, path: path) }
            operation = .index(index: index, items: items)
        case "update":
            let index = try fields.string("index")
            let updates = try fields.array("items") { (element, path) throws(OperationError) in try update(element, path: path) }
            operation = .update(index: index, updates: updates)
        case "delete":
            operation = .delete(index: try fields.string("index"), identifiers: try fields.strings("ids"))
        case "deleteDomains":
            operation = .deleteDomains(index: try fields.string("index"), domains: try fields.strings("domains"))
        case "deleteAll":
            operation = .deleteAll(index: try fields.string("index"))
        case "batch":
            let index = try fields.string("index")
            let clientState = try fields.base64("clientState")
            let condition: ClientStateCondition
            switch fields.take("expectedClientState") {
            case nil: condition = .unconditional
            case .null?: condition = .expecting(nil)
            case let other?: condition = .expecting(try Fields.base64(other, path: fields.path("expectedClientState")))
            }
            let operations = try fields.array("ops") { (element, path) throws(OperationError) -> AppOperation in
                guard case .object(var object) = element else {
                    throw OperationError(path: path, "must be an object, found \(element.typeDescription)")
                }
                // Only operations that name an index inherit the batch's: any other
                // operation must reach validation and be refused as not belonging in a
                // batch, not as having an unknown "index" field.
                if object["index"] == nil, case .string(let name)? = object["op"], indexedOperationNames.contains(name) {
                    object["index"] = .string(index)
                }
                return try parse(.object(object), path: path)
            }
            operation = .batch(IndexBatch(index: index, operations: operations, clientState: clientState, condition: condition))
        case "activity":
            operation = .activity(try activity(&fields))
        case "deleteActivities":
            operation = .deleteActivities(identifiers: try fields.strings("ids"))
        case "deleteActivityDomains":
            operation = .deleteActivityDomains(domains: try fields.strings("domains"))
        case "deleteAllActivities":
            operation = .deleteAllActivities
        case "shown":
            operation = .shown(ref: try fields.string("ref"))
        case "engage":
            operation = .engage(ref: try fields.string("ref"))
        case "advanceClock":
            operation = .advanceClock(to: try fields.date("to"))
        default:
            throw OperationError(path: fields.path("op"),
                                 "unknown operation \"\(TextRule.printable(name, limit: 64))\" (expected one of \(operationNames.joined(separator: ", ")))")
        }
        try fields.finish()
        return operation
    }

    static let itemFieldNames: Set<String> = ["id", "domain", "expires", "description", "attributes"]

    static func item(_ value: JSONValue, path: String) throws(OperationError) -> SearchableItem {
        var fields = try Fields(value, path: path)
        var item = SearchableItem(uniqueIdentifier: try fields.string("id"))
        item.domainIdentifier = try fields.optionalString("domain")
        item.expirationDate = try fields.optionalDate("expires")
        var attributes = AttributeSet()
        for key in AttributeKey.standard {
            let name = key == .contentDescription && fields.has("description") ? "description" : key.name
            if let value = try fields.attribute(name, key: key) { attributes[key] = value }
        }
        if let custom = fields.take("attributes") {
            for (key, value) in try customAttributes(custom, path: fields.path("attributes")) {
                attributes[key] = value
            }
        }
        item.attributes = attributes
        try fields.finish()
        return item
    }

    static func update(_ value: JSONValue, path: String) throws(OperationError) -> ItemUpdate {
        var fields = try Fields(value, path: path)
        var update = ItemUpdate(uniqueIdentifier: try fields.string("id"))
        switch fields.take("domain") {
        case nil: break
        case .null?: update.domainIdentifier = .clear
        case let other?: update.domainIdentifier = .set(try Fields.string(other, path: fields.path("domain")))
        }
        switch fields.take("expires") {
        case nil: break
        case .null?: update.expirationDate = .clear
        case let other?: update.expirationDate = .set(try Fields.date(other, path: fields.path("expires")))
        }
        var changes = AttributeChanges()
        for key in AttributeKey.standard {
            let name = key == .contentDescription && fields.has("description") ? "description" : key.name
            guard let raw = fields.take(name) else { continue }
            if raw == .null {
                changes[key] = .some(nil)
            } else {
                changes[key] = .some(try attributeValue(raw, key: key, path: fields.path(name)))
            }
        }
        if let custom = fields.take("attributes") {
            guard case .object(let object) = custom else {
                throw OperationError(path: fields.path("attributes"), "must be an object, found \(custom.typeDescription)")
            }
            try Validation.attributeCount(object.members.count, at: fields.path("attributes"))
            for member in object.members {
                let key = AttributeKey(name: member.key)
                let memberPath = fields.path("attributes") + "." + TextRule.printable(member.key)
                guard key.isCustom else {
                    throw OperationError(path: memberPath, "is a standard attribute; give it as a member of the item")
                }
                changes[key] = member.value == .null ? .some(nil) : .some(try attributeValue(member.value, key: key, path: memberPath))
            }
        }
        update.attributes = changes
        try fields.finish()
        return update
    }

    static func customAttributes(_ value: JSONValue, path: String) throws(OperationError) -> [(AttributeKey, AttributeValue)] {
        guard case .object(let object) = value else {
            throw OperationError(path: path, "must be an object, found \(value.typeDescription)")
        }
        try Validation.attributeCount(object.members.count, at: path)
        var result: [(AttributeKey, AttributeValue)] = []
        for member in object.members {
            let key = AttributeKey(name: member.key)
            let memberPath = path + "." + TextRule.printable(member.key)
            guard key.isCustom else {
                throw OperationError(path: memberPath, "is a standard attribute; give it as a member of the item")
            }
            result.append((key, try attributeValue(member.value, key: key, path: memberPath)))
        }
        return result
    }

    /// Reads an attribute value. A standard key fixes the type; a custom value's
    /// type follows its JSON: string, array of strings, number, boolean, or
    /// `{"date": "ISO 8601"}` for a date.
    static func attributeValue(_ value: JSONValue, key: AttributeKey, path: String) throws(OperationError) -> AttributeValue {
        let type: AttributeType
        if let required = key.requiredType {
            type = required
        } else {
            switch value {
            case .string: type = .string
            case .array: type = .strings
            case .integer, .double: type = .number
            case .bool: type = .bool
            case .object(let object) where object.keys == ["date"]: type = .date
            default:
                throw OperationError(path: path, "must be a string, an array of strings, a number, a boolean or {\"date\": \"…\"}; found \(value.typeDescription)")
            }
        }
        switch type {
        case .string:
            return .string(try Fields.string(value, path: path))
        case .strings:
            guard case .array(let elements) = value else {
                throw OperationError(path: path, "must be \(type), found \(value.typeDescription)")
            }
            guard elements.count <= Limits.listElements else {
                throw OperationError(path: path, "has \(elements.count) elements; the limit is \(Limits.listElements)")
            }
            var list: [String] = []
            for (position, element) in elements.enumerated() {
                list.append(try Fields.string(element, path: "\(path)[\(position)]"))
            }
            return .strings(list)
        case .number:
            switch value {
            case .integer(let integer): return .number(Double(integer))
            case .double(let double): return .number(double)
            default: throw OperationError(path: path, "must be \(type), found \(value.typeDescription)")
            }
        case .bool:
            guard case .bool(let flag) = value else {
                throw OperationError(path: path, "must be \(type), found \(value.typeDescription)")
            }
            return .bool(flag)
        case .date:
            if case .object(let object) = value, let inner = object["date"] {
                return .date(try Fields.date(inner, path: path + ".date"))
            }
            return .date(try Fields.date(value, path: path))
        }
    }

    static func activity(_ fields: inout Fields) throws(OperationError) -> UserActivity {
        var activity = UserActivity(activityType: try fields.string("type"))
        activity.title = try fields.optionalString("title")
        activity.keywords = try fields.optionalStrings("keywords") ?? []
        if let raw = fields.take("attributes") {
            guard case .object(let object) = raw else {
                throw OperationError(path: fields.path("attributes"), "must be an object, found \(raw.typeDescription)")
            }
            try Validation.attributeCount(object.members.count, at: fields.path("attributes"))
            for member in object.members {
                let key = AttributeKey(name: member.key)
                activity.attributes[key] = try attributeValue(member.value, key: key,
                                                              path: fields.path("attributes") + "." + TextRule.printable(member.key))
            }
        }
        if let raw = fields.take("userInfo"), raw != .null {
            guard case .object(let object) = raw else {
                throw OperationError(path: fields.path("userInfo"), "must be an object of strings, found \(raw.typeDescription)")
            }
            guard object.members.count <= Limits.userInfoEntries else {
                throw OperationError(path: fields.path("userInfo"),
                                     "has \(object.members.count) entries; the limit is \(Limits.userInfoEntries)")
            }
            for member in object.members {
                activity.userInfo[member.key] = try Fields.string(member.value,
                                                                  path: fields.path("userInfo") + "." + TextRule.printable(member.key))
            }
        }
        activity.webpageURL = try fields.optionalString("url")
        activity.expirationDate = try fields.optionalDate("expires")
        activity.eligibleForSearch = try fields.optionalBool("searchable") ?? false
        activity.eligibleForHandoff = try fields.optionalBool("handoff") ?? false
        activity.eligibleForPublicIndexing = try fields.optionalBool("public") ?? false
        activity.relatedUniqueIdentifier = try fields.optionalString("related")
        activity.weakRelatedUniqueIdentifier = try fields.optionalString("weakRelated")
        activity.domainIdentifier = try fields.optionalString("domain")
        activity.persistentIdentifier = try fields.optionalString("id")
        return activity
    }
}

/// The members of one JSON object being read, with the path used in errors.
/// Members are taken one by one; `finish()` refuses any member nobody took.
///
/// Taking a member marks it taken, so that reading an object of n members
/// is linear in n however many members it has.
struct Fields {
    let prefix: String
    private let object: JSONObject
    private var taken: Set<String> = []

    init(_ value: JSONValue, path: String) throws(OperationError) {
        guard case .object(let object) = value else {
            throw OperationError(path: path, "must be an object, found \(value.typeDescription)")
        }
        prefix = path
        self.object = object
    }

    func path(_ key: String) -> String { prefix.isEmpty ? key : prefix + "." + key }

    func has(_ key: String) -> Bool { !taken.contains(key) && object[key] != nil }

    mutating func take(_ key: String) -> JSONValue? {
        guard !taken.contains(key), let value = object[key] else { return nil }
        taken.insert(key)
        return value
    }

    func finish() throws(OperationError) {
        if let unknown = object.members.first(where: { !taken.contains($0.key) }) {
            throw OperationError(path: path(TextRule.printable(unknown.key)), "unknown field")
        }
    }

    mutating func required(_ key: String) throws(OperationError) -> JSONValue {
        guard let value = take(key) else { throw OperationError(path: path(key), "is required") }
        return value
    }

    mutating func string(_ key: String) throws(OperationError) -> String {
        try Fields.string(try required(key), path: path(key))
    }

    mutating func optionalString(_ key: String) throws(OperationError) -> String? {
        guard let value = take(key), value != .null else { return nil }
        return try Fields.string(value, path: path(key))
    }

    mutating func optionalBool(_ key: String) throws(OperationError) -> Bool? {
        guard let value = take(key), value != .null else { return nil }
        guard case .bool(let flag) = value else {
            throw OperationError(path: path(key), "must be a boolean, found \(value.typeDescription)")
        }
        return flag
    }

    mutating func strings(_ key: String) throws(OperationError) -> [String] {
        try array(key) { (element, path) throws(OperationError) in try Fields.string(element, path: path) }
    }

    mutating func optionalStrings(_ key: String) throws(OperationError) -> [String]? {
        guard has(key), object[key] != .null else { _ = take(key); return nil }
        return try strings(key)
    }

    mutating func date(_ key: String) throws(OperationError) -> Timestamp {
        try Fields.date(try required(key), path: path(key))
    }

    mutating func optionalDate(_ key: String) throws(OperationError) -> Timestamp? {
        guard let value = take(key), value != .null else { return nil }
        return try Fields.date(value, path: path(key))
    }

    mutating func base64(_ key: String) throws(OperationError) -> [UInt8] {
        try Fields.base64(try required(key), path: path(key))
    }

    /// A standard attribute given as a member of an item; nil when absent or null.
    mutating func attribute(_ name: String, key: AttributeKey) throws(OperationError) -> AttributeValue? {
        guard let value = take(name), value != .null else { return nil }
        return try OperationParser.attributeValue(value, key: key, path: path(name))
    }

    mutating func array<T>(_ key: String, _ element: (JSONValue, String) throws(OperationError) -> T) throws(OperationError) -> [T] {
        let value = try required(key)
        guard case .array(let elements) = value else {
            throw OperationError(path: path(key), "must be an array, found \(value.typeDescription)")
        }
        guard elements.count <= Limits.elementsPerCall else {
            throw OperationError(path: path(key), "has \(elements.count) elements; the limit is \(Limits.elementsPerCall) per call")
        }
        var result: [T] = []
        result.reserveCapacity(elements.count)
        for (position, item) in elements.enumerated() {
            result.append(try element(item, "\(path(key))[\(position)]"))
        }
        return result
    }

    static func string(_ value: JSONValue, path: String) throws(OperationError) -> String {
        guard case .string(let text) = value else {
            throw OperationError(path: path, "must be a string, found \(value.typeDescription)")
        }
        return text
    }

    static func date(_ value: JSONValue, path: String) throws(OperationError) -> Timestamp {
        guard case .string(let text) = value else {
            throw OperationError(path: path, "must be an ISO 8601 date string, found \(value.typeDescription)")
        }
        guard let timestamp = ISO8601.parse(text) else {
            throw OperationError(path: path, "is not an ISO 8601 date-time such as 2027-01-01T00:00:00Z")
        }
        return timestamp
    }

    static func base64(_ value: JSONValue, path: String) throws(OperationError) -> [UInt8] {
        guard case .string(let text) = value else {
            throw OperationError(path: path, "must be a base64 string, found \(value.typeDescription)")
        }
        guard let data = Data(base64Encoded: text) else {
            throw OperationError(path: path, "is not valid base64")
        }
        return [UInt8](data)
    }
}
