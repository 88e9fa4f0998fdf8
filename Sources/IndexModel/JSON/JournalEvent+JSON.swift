import Foundation

extension JournalEvent {
    /// The event as a JSON object, as `journal show`, `tail` and `export` print it.
    /// Member names follow the operations format; dates are ISO 8601 strings and
    /// client states base64.
    public var jsonValue: JSONValue {
        var object: JSONObject = ["kind": .string(kind.name)]
        switch self {
        case .itemIndexed(let index, let item):
            object["index"] = .string(index)
            object["id"] = .string(item.uniqueIdentifier)
            if let domain = item.domainIdentifier { object["domain"] = .string(domain) }
            if let expires = item.expirationDate { object["expires"] = .string(expires.description) }
            object["attributes"] = item.attributes.jsonValue
        case .itemUpdated(let index, let update):
            object["index"] = .string(index)
            object["id"] = .string(update.uniqueIdentifier)
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
            var changes = JSONObject()
            for (key, value) in update.attributes.sortedEntries {
                changes[key.name] = value.map(\.jsonValue) ?? .null
            }
            object["attributes"] = .object(changes)
        case .itemDeleted(let index, let identifier, let cause):
            object["index"] = .string(index)
            object["id"] = .string(identifier)
            cause.describe(into: &object)
        case .itemExpired(let index, let identifier):
            object["index"] = .string(index)
            object["id"] = .string(identifier)
        case .clientStateSet(let index, let state):
            object["index"] = .string(index)
            object["clientState"] = .string(Data(state).base64EncodedString())
        case .activityRecorded(let activity):
            object["key"] = .string(activity.key)
            object["activity"] = activity.jsonValue
        case .activityDeleted(let key, let cause):
            object["key"] = .string(key)
            cause.describe(into: &object)
        case .activityExpired(let key):
            object["key"] = .string(key)
        case .resultShown(let ref), .resultEngaged(let ref):
            object["ref"] = .string(ref)
        case .publicContentRequested(let hashes):
            object["hashes"] = .array(hashes.map { .string($0.hexString) })
        case .storeRestored(let restore):
            // Epochs and seqs count from 1 and never reach 2^63.
            object["previousEpoch"] = .integer(Int64(clamping: restore.previousEpoch.rawValue))
            object["snapshotHead"] = .integer(Int64(clamping: restore.snapshotHead.rawValue))
            object["toSeq"] = restore.truncatedTo.map { .integer(Int64(clamping: $0.rawValue)) } ?? .null
            object["snapshot"] = .string(restore.snapshotSHA256.hexString)
        case .reindexRequested(let index, let identifiers):
            object["index"] = .string(index)
            object["ids"] = identifiers.map { .array($0.map(JSONValue.string)) } ?? .null
        case .reindexAcknowledged(let index, let request):
            object["index"] = .string(index)
            object["request"] = .integer(Int64(clamping: request))
        case .epochAdvanced(let from, let to, let kept):
            object["from"] = .integer(Int64(clamping: from.rawValue))
            object["to"] = .integer(Int64(clamping: to.rawValue))
            if kept > .beforeFirst { object["kept"] = .integer(Int64(clamping: kept.rawValue)) }
        case .popularityModeLearned(let mode):
            mode.addJSONFields(to: &object)
        case .cloudReindexAsked(let epoch, let seq):
            object["after"] = .string("\(epoch):\(seq)")
        case .votesReindexRequested(let request):
            object["after"] = .string("\(request.afterEpoch):\(request.afterSeq)")
            object["through"] = .string("\(request.throughEpoch):\(request.throughSeq)")
            object["hashes"] = .array(request.hashes.map { .string($0.hexString) })
            object["more"] = .bool(request.more)
        case .activityPurged(let residue):
            object["key"] = .string(residue.key)
            object["hash"] = residue.publicHash.map { .string($0.hexString) } ?? .null
            object["url"] = residue.webpageURL.map(JSONValue.string) ?? .null
            object["relatedUniqueIdentifier"] = residue.relatedUniqueIdentifier.map(JSONValue.string) ?? .null
            object["weakRelatedUniqueIdentifier"] = residue.weakRelatedUniqueIdentifier.map(JSONValue.string) ?? .null
        }
        return .object(object)
    }
}

extension DeletionCause {
    func describe(into object: inout JSONObject) {
        switch self {
        case .identifier: object["cause"] = .string("identifier")
        case .domain(let domain):
            object["cause"] = .string("domain")
            object["domain"] = .string(domain)
        case .all: object["cause"] = .string("all")
        }
    }
}

extension AttributeValue {
    public var jsonValue: JSONValue {
        switch self {
        case .string(let text): .string(text)
        case .strings(let list): .array(list.map(JSONValue.string))
        case .number(let number): .double(number)
        case .date(let timestamp): .string(timestamp.description)
        case .bool(let flag): .bool(flag)
        }
    }
}

extension AttributeSet {
    public var jsonValue: JSONValue {
        var object = JSONObject()
        for (key, value) in sortedEntries { object[key.name] = value.jsonValue }
        return .object(object)
    }
}

extension UserActivity {
    /// The activity in the operations file's `activity` form.
    public var jsonValue: JSONValue { .object(operationJSON) }
}

extension [UInt8] {
    /// Lowercase hexadecimal, two digits a byte. Spelled into one buffer:
    /// a purge spells a pseudonym for every key, URL and reference it hides.
    var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var utf8: [UInt8] = []
        utf8.reserveCapacity(2 * count)
        for byte in self {
            utf8.append(digits[Int(byte >> 4)])
            utf8.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: utf8, as: UTF8.self)
    }
}

extension PopularityMode {
    /// The mode's members in JSON (`journal export`, `cloud` output): `mode`
    /// (`exact` or `ldp`), and for `ldp` `epsilon` and `dailyBudget` (decimal
    /// strings, exact), `hashes` (k) and `buckets` (m).
    public func addJSONFields(to object: inout JSONObject) {
        object["mode"] = .string(name)
        guard let settings = privateSettings else { return }
        object["epsilon"] = .string(PrivatePopularity.decimal(settings.epsilonThousandths))
        object["dailyBudget"] = .string(PrivatePopularity.decimal(settings.dailyBudgetThousandths))
        object["hashes"] = .integer(Int64(settings.hashes))
        object["buckets"] = .integer(Int64(settings.buckets))
    }
}
