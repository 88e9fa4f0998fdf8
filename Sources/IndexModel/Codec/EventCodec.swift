/// The binary event codec: `JournalEvent` to bytes and back, byte for byte as
/// specified in `Journal/FORMAT.md`.
///
/// Encoding is canonical (one byte string per event: attribute sets and userInfo
/// sorted, varints minimal), so the hash of an event's bytes identifies the event.
/// Decoding refuses anything that is not canonical, so a decoded event re-encodes
/// to exactly the bytes it came from.
public enum EventCodec {
    public static func encode(_ event: JournalEvent) -> [UInt8] {
        var writer = BinaryWriter()
        writer.byte(event.formatVersionWritten)
        writer.byte(event.kind.rawValue)
        switch event {
        case .itemIndexed(let index, let item):
            writer.string(index)
            writeItem(item, to: &writer)
        case .itemUpdated(let index, let update):
            writer.string(index)
            writer.string(update.uniqueIdentifier)
            writeChange(update.domainIdentifier, to: &writer) { $0.string($1) }
            writeChange(update.expirationDate, to: &writer) { $0.svarint($1.millisecondsSince1970) }
            let entries = update.attributes.sortedEntries
            writer.uvarint(UInt64(entries.count))
            for (key, value) in entries {
                writeKey(key, to: &writer)
                writer.optional(value) { writeValue($1, to: &$0) }
            }
        case .itemDeleted(let index, let identifier, let cause):
            writer.string(index)
            writer.string(identifier)
            writeCause(cause, to: &writer)
        case .itemExpired(let index, let identifier):
            writer.string(index)
            writer.string(identifier)
        case .clientStateSet(let index, let state):
            writer.string(index)
            writer.data(state)
        case .activityRecorded(let activity):
            writeActivity(activity, to: &writer)
        case .activityDeleted(let key, let cause):
            writer.string(key)
            writeCause(cause, to: &writer)
        case .activityExpired(let key):
            writer.string(key)
        case .resultShown(let ref), .resultEngaged(let ref):
            writer.string(ref)
        case .publicContentRequested(let hashes):
            writer.uvarint(UInt64(hashes.count))
            for hash in hashes { writer.raw(hash) }
        case .storeRestored(let restore):
            writer.uvarint(restore.previousEpoch.rawValue)
            writer.uvarint(restore.snapshotHead.rawValue)
            writer.optional(restore.truncatedTo) { $0.uvarint($1.rawValue) }
            writer.raw(restore.snapshotSHA256)
        case .reindexRequested(let index, let identifiers):
            writer.string(index)
            writer.optional(identifiers) { writer, identifiers in
                writer.uvarint(UInt64(identifiers.count))
                for identifier in identifiers { writer.string(identifier) }
            }
        case .reindexAcknowledged(let index, let request):
            writer.string(index)
            writer.uvarint(request)
        case .epochAdvanced(let from, let to, let kept):
            writer.uvarint(from.rawValue)
            writer.uvarint(to.rawValue)
            // Version 4 only: advances that kept nothing keep their bytes.
            if kept > .beforeFirst { writer.uvarint(kept.rawValue) }
        case .popularityModeLearned(let mode):
            mode.encode(to: &writer)
        case .cloudReindexAsked(let epoch, let seq):
            writer.uvarint(epoch.rawValue)
            writer.uvarint(seq.rawValue)
        case .votesReindexRequested(let request):
            writer.uvarint(request.afterEpoch.rawValue)
            writer.uvarint(request.afterSeq.rawValue)
            writer.uvarint(request.throughEpoch.rawValue)
            writer.uvarint(request.throughSeq.rawValue)
            writer.uvarint(UInt64(request.hashes.count))
            for hash in request.hashes { writer.raw(hash) }
            writer.byte(request.more ? 1 : 0)
        case .activityPurged(let residue):
            writer.string(residue.key)
            writer.optional(residue.publicHash) { $0.raw($1) }
            writer.optional(residue.webpageURL) { $0.string($1) }
            writer.optional(residue.relatedUniqueIdentifier) { $0.string($1) }
            writer.optional(residue.weakRelatedUniqueIdentifier) { $0.string($1) }
        }
        return writer.bytes
    }

    public static func decode(_ bytes: [UInt8]) throws(CodecError) -> JournalEvent {
        var reader = BinaryReader(bytes)
        let version = try reader.byte()
        guard (1...JournalEvent.formatVersion).contains(version) else {
            throw CodecError(.unknownVersion, at: 0,
                             "event format version \(version) is not supported (this build reads versions 1 to \(JournalEvent.formatVersion))")
        }
        let kindByte = try reader.byte()
        guard let kind = EventKind(rawValue: kindByte) else {
            throw CodecError(.unknownKind, at: 1, "unknown event kind \(kindByte)")
        }
        guard kind.version == version || kind == .epochAdvanced && version == 4 else {
            throw CodecError(.nonCanonical, at: 0,
                             "a \(kind.name) event is written with format version \(kind.version), not \(version)")
        }
        let event: JournalEvent
        switch kind {
        case .itemIndexed:
            let index = try reader.string()
            event = .itemIndexed(index: index, item: try readItem(&reader))
        case .itemUpdated:
            let index = try reader.string()
            let identifier = try reader.string()
            let domain = try readChange(&reader) { (reader: inout BinaryReader) throws(CodecError) in try reader.string() }
            let expiration = try readChange(&reader) { (reader: inout BinaryReader) throws(CodecError) in
                Timestamp(millisecondsSince1970: try reader.svarint())
            }
            let count = try readCount(&reader)
            var changes: [AttributeKey: AttributeValue?] = [:]
            var previous: AttributeKey?
            for _ in 0..<count {
                let start = reader.offset
                let key = try readKey(&reader)
                try checkOrder(key, after: previous, at: start)
                previous = key
                let value = try reader.optional { (reader: inout BinaryReader) throws(CodecError) in
                    try readValue(&reader, for: key)
                }
                guard changes.updateValue(value, forKey: key) == nil else { throw repeatedKey(key, at: start) }
            }
            event = .itemUpdated(index: index, update: ItemUpdate(
                uniqueIdentifier: identifier, domainIdentifier: domain, expirationDate: expiration,
                attributes: AttributeChanges(changes)))
        case .itemDeleted:
            let index = try reader.string()
            let identifier = try reader.string()
            event = .itemDeleted(index: index, identifier: identifier, cause: try readCause(&reader))
        case .itemExpired:
            let index = try reader.string()
            event = .itemExpired(index: index, identifier: try reader.string())
        case .clientStateSet:
            let index = try reader.string()
            event = .clientStateSet(index: index, state: try reader.data())
        case .activityRecorded:
            event = .activityRecorded(try readActivity(&reader))
        case .activityDeleted:
            let key = try reader.string()
            event = .activityDeleted(key: key, cause: try readCause(&reader))
        case .activityExpired:
            event = .activityExpired(key: try reader.string())
        case .resultShown:
            event = .resultShown(ref: try reader.string())
        case .resultEngaged:
            event = .resultEngaged(ref: try reader.string())
        case .publicContentRequested:
            event = .publicContentRequested(hashes: try readHashes(&reader))
        case .storeRestored:
            let previousEpoch = Epoch(try reader.uvarint())
            let head = Seq(try reader.uvarint())
            let truncatedTo = try reader.optional { (reader: inout BinaryReader) throws(CodecError) in Seq(try reader.uvarint()) }
            let sha = try reader.fixedBytes(32, "snapshot SHA-256")
            event = .storeRestored(StoreRestore(previousEpoch: previousEpoch, snapshotHead: head, truncatedTo: truncatedTo,
                                                snapshotSHA256: sha))
        case .reindexRequested:
            let index = try reader.string()
            let identifiers = try reader.optional { (reader: inout BinaryReader) throws(CodecError) -> [String] in
                let count = try readCount(&reader)
                var identifiers: [String] = []
                for _ in 0..<count { identifiers.append(try reader.string()) }
                return identifiers
            }
            event = .reindexRequested(index: index, identifiers: identifiers)
        case .reindexAcknowledged:
            let index = try reader.string()
            event = .reindexAcknowledged(index: index, request: try reader.uvarint())
        case .epochAdvanced:
            let start = reader.offset
            let from = Epoch(try reader.uvarint())
            let to = Epoch(try reader.uvarint())
            guard to > from else {
                throw CodecError(.nonCanonical, at: start, "an epoch advance goes forward, not from \(from) to \(to)")
            }
            var kept = OutboxSeq.beforeFirst
            if version == 4 {
                let keptAt = reader.offset
                kept = OutboxSeq(try reader.uvarint())
                guard kept > .beforeFirst else {
                    throw CodecError(.nonCanonical, at: keptAt, "an epoch advance that kept nothing is written with version 3")
                }
            }
            event = .epochAdvanced(from: from, to: to, kept: kept)
        case .popularityModeLearned:
            event = .popularityModeLearned(try PopularityMode.decode(from: &reader))
        case .cloudReindexAsked:
            let epoch = Epoch(try readPosition(&reader, "epoch"))
            event = .cloudReindexAsked(epoch: epoch, seq: OutboxSeq(try readPosition(&reader, "seq")))
        case .votesReindexRequested:
            let start = reader.offset
            let afterEpoch = Epoch(try readPosition(&reader, "after epoch"))
            let afterSeq = OutboxSeq(try readPosition(&reader, "after seq"))
            let throughEpoch = Epoch(try readPosition(&reader, "through epoch"))
            let throughSeq = OutboxSeq(try readPosition(&reader, "through seq"))
            guard (throughEpoch.rawValue, throughSeq.rawValue) >= (afterEpoch.rawValue, afterSeq.rawValue) else {
                throw CodecError(.nonCanonical, at: start,
                                 "a reindex request reads forward, not from \(afterEpoch):\(afterSeq) back to \(throughEpoch):\(throughSeq)")
            }
            let hashes = try readHashes(&reader)
            let moreAt = reader.offset
            let more = try reader.byte()
            guard more <= 1 else { throw CodecError(.nonCanonical, at: moreAt, "a reindex request's more flag is \(more), not 0 or 1") }
            event = .votesReindexRequested(VoteReindexRequest(afterEpoch: afterEpoch, afterSeq: afterSeq, throughEpoch: throughEpoch,
                                                               throughSeq: throughSeq, hashes: hashes, more: more == 1))
        case .activityPurged:
            func pseudonym(_ reader: inout BinaryReader, _ field: String) throws(CodecError) -> String {
                let at = reader.offset
                let text = try reader.string()
                guard PurgedActivity.isPseudonym(text) else {
                    throw CodecError(.nonCanonical, at: at, "a purged activity's \(field) is not a pseudonym (purged: and 32 hex digits)")
                }
                return text
            }
            let key = try pseudonym(&reader, "key")
            let hash = try reader.optional { (reader: inout BinaryReader) throws(CodecError) in try reader.fixedBytes(32, "public hash") }
            let url = try reader.optional { (reader: inout BinaryReader) throws(CodecError) in try pseudonym(&reader, "web page URL") }
            let related = try reader.optional { (reader: inout BinaryReader) throws(CodecError) in try reader.string() }
            let weak = try reader.optional { (reader: inout BinaryReader) throws(CodecError) in try reader.string() }
            event = .activityPurged(PurgedActivity(key: key, publicHash: hash, webpageURL: url, relatedUniqueIdentifier: related,
                                                   weakRelatedUniqueIdentifier: weak))
        }
        guard reader.isAtEnd else {
            throw CodecError(.trailingBytes, at: reader.offset, "\(reader.remaining) bytes follow the end of the event")
        }
        return event
    }

    // MARK: - Items and activities

    static func writeItem(_ item: SearchableItem, to writer: inout BinaryWriter) {
        writer.string(item.uniqueIdentifier)
        writer.optional(item.domainIdentifier) { $0.string($1) }
        writer.optional(item.expirationDate) { $0.svarint($1.millisecondsSince1970) }
        writeAttributes(item.attributes, to: &writer)
    }

    static func readItem(_ reader: inout BinaryReader) throws(CodecError) -> SearchableItem {
        let identifier = try reader.string()
        let domain = try reader.optional { (reader: inout BinaryReader) throws(CodecError) in try reader.string() }
        let expiration = try reader.optional { (reader: inout BinaryReader) throws(CodecError) in
            Timestamp(millisecondsSince1970: try reader.svarint())
        }
        return SearchableItem(uniqueIdentifier: identifier, domainIdentifier: domain,
                              attributes: try readAttributes(&reader), expirationDate: expiration)
    }

    static func writeActivity(_ activity: UserActivity, to writer: inout BinaryWriter) {
        writer.string(activity.activityType)
        writer.optional(activity.title) { $0.string($1) }
        writer.uvarint(UInt64(activity.keywords.count))
        for keyword in activity.keywords { writer.string(keyword) }
        writeAttributes(activity.attributes, to: &writer)
        let info = activity.userInfo.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        writer.uvarint(UInt64(info.count))
        for (key, value) in info {
            writer.string(key)
            writer.string(value)
        }
        writer.optional(activity.webpageURL) { $0.string($1) }
        writer.optional(activity.expirationDate) { $0.svarint($1.millisecondsSince1970) }
        var flags: UInt8 = 0
        if activity.eligibleForSearch { flags |= 1 }
        if activity.eligibleForHandoff { flags |= 2 }
        if activity.eligibleForPublicIndexing { flags |= 4 }
        writer.byte(flags)
        writer.optional(activity.relatedUniqueIdentifier) { $0.string($1) }
        writer.optional(activity.weakRelatedUniqueIdentifier) { $0.string($1) }
        writer.optional(activity.domainIdentifier) { $0.string($1) }
        writer.optional(activity.persistentIdentifier) { $0.string($1) }
    }

    static func readActivity(_ reader: inout BinaryReader) throws(CodecError) -> UserActivity {
        let readString = { (reader: inout BinaryReader) throws(CodecError) -> String in try reader.string() }
        let type = try reader.string()
        let title = try reader.optional(readString)
        var keywords: [String] = []
        for _ in 0..<(try readCount(&reader)) { keywords.append(try reader.string()) }
        let attributes = try readAttributes(&reader)
        var userInfo: [String: String] = [:]
        var previousKey: String?
        for _ in 0..<(try readCount(&reader)) {
            let start = reader.offset
            let key = try reader.string()
            if let previousKey, !previousKey.utf8.lexicographicallyPrecedes(key.utf8) {
                throw CodecError(.nonCanonical, at: start, "userInfo keys are not in strictly increasing order")
            }
            previousKey = key
            guard userInfo.updateValue(try reader.string(), forKey: key) == nil else {
                throw CodecError(.nonCanonical, at: start, "userInfo has two keys that are the same Unicode text")
            }
        }
        let url = try reader.optional(readString)
        let expiration = try reader.optional { (reader: inout BinaryReader) throws(CodecError) in
            Timestamp(millisecondsSince1970: try reader.svarint())
        }
        let flagsOffset = reader.offset
        let flags = try reader.byte()
        guard flags & ~7 == 0 else {
            throw CodecError(.nonCanonical, at: flagsOffset, "activity flags byte \(flags) has unknown bits set")
        }
        return UserActivity(
            activityType: type, title: title, keywords: keywords, attributes: attributes, userInfo: userInfo,
            webpageURL: url, expirationDate: expiration,
            eligibleForSearch: flags & 1 != 0, eligibleForHandoff: flags & 2 != 0,
            eligibleForPublicIndexing: flags & 4 != 0,
            relatedUniqueIdentifier: try reader.optional(readString),
            weakRelatedUniqueIdentifier: try reader.optional(readString),
            domainIdentifier: try reader.optional(readString),
            persistentIdentifier: try reader.optional(readString))
    }

    // MARK: - Attributes

    static func writeAttributes(_ attributes: AttributeSet, to writer: inout BinaryWriter) {
        writer.uvarint(UInt64(attributes.count))
        for entry in attributes.entries {
            writeKey(entry.key, to: &writer)
            writeValue(entry.value, to: &writer)
        }
    }

    static func readAttributes(_ reader: inout BinaryReader) throws(CodecError) -> AttributeSet {
        let count = try readCount(&reader)
        var entries: [AttributeSet.Entry] = []
        entries.reserveCapacity(count)
        var previous: AttributeKey?
        var customNames: Set<String> = []
        for _ in 0..<count {
            let start = reader.offset
            let key = try readKey(&reader)
            // Strictly ascending keys: out of order and repeated keys are both refused.
            try checkOrder(key, after: previous, at: start)
            previous = key
            // Two names with different bytes can be one Swift string ("é" and
            // "e\u{301}"): such a set could not be built again, so it is refused.
            if case .custom(let name) = key, !customNames.insert(name).inserted { throw repeatedKey(key, at: start) }
            entries.append(AttributeSet.Entry(key: key, value: try readValue(&reader, for: key)))
        }
        return AttributeSet(sortedUniqueEntries: entries)
    }

    static func writeKey(_ key: AttributeKey, to writer: inout BinaryWriter) {
        writer.byte(key.tag)
        if case .custom(let name) = key { writer.string(name) }
    }

    static func readKey(_ reader: inout BinaryReader) throws(CodecError) -> AttributeKey {
        let start = reader.offset
        let tag = try reader.byte()
        if tag == 0 {
            let name = try reader.string()
            guard case .custom = AttributeKey(name: name) else {
                throw CodecError(.nonCanonical, at: start, "custom attribute uses the standard name \"\(name)\"")
            }
            return .custom(name)
        }
        guard let key = AttributeKey(tag: tag) else {
            throw CodecError(.unknownTag, at: start, "unknown attribute tag \(tag)")
        }
        return key
    }

    /// Two custom names can be different bytes, in canonical order, and still one
    /// Swift `String` ("é" and "e\u{301}" are canonically equivalent): they would
    /// decode to one key, so the payload could not re-encode to itself.
    static func repeatedKey(_ key: AttributeKey, at offset: Int) -> CodecError {
        CodecError(.nonCanonical, at: offset, "attribute \(key.name) appears twice as canonically equivalent names")
    }

    static func checkOrder(_ key: AttributeKey, after previous: AttributeKey?, at offset: Int) throws(CodecError) {
        if let previous, !(previous < key) {
            throw CodecError(.nonCanonical, at: offset, "attribute \(key.name) is out of canonical order or repeated")
        }
    }

    static func writeValue(_ value: AttributeValue, to writer: inout BinaryWriter) {
        writer.byte(value.type.rawValue)
        switch value {
        case .string(let text): writer.string(text)
        case .strings(let list):
            writer.uvarint(UInt64(list.count))
            for text in list { writer.string(text) }
        case .number(let number): writer.double(number)
        case .date(let timestamp): writer.svarint(timestamp.millisecondsSince1970)
        case .bool(let flag): writer.bool(flag)
        }
    }

    static func readValue(_ reader: inout BinaryReader, for key: AttributeKey) throws(CodecError) -> AttributeValue {
        let start = reader.offset
        let tag = try reader.byte()
        guard let type = AttributeType(rawValue: tag) else {
            throw CodecError(.unknownTag, at: start, "unknown value type tag \(tag)")
        }
        if let required = key.requiredType, required != type {
            throw CodecError(.typeMismatch, at: start, "attribute \(key.name) must be \(required), found \(type)")
        }
        switch type {
        case .string: return .string(try reader.string())
        case .strings:
            var list: [String] = []
            for _ in 0..<(try readCount(&reader)) { list.append(try reader.string()) }
            return .strings(list)
        case .number:
            let numberOffset = reader.offset
            let number = try reader.double()
            // The model holds finite numbers only, and NaN would make an event unequal to itself.
            guard number.isFinite else {
                throw CodecError(.nonCanonical, at: numberOffset, "attribute \(key.name) is not a finite number")
            }
            return .number(number)
        case .date: return .date(Timestamp(millisecondsSince1970: try reader.svarint()))
        case .bool: return .bool(try reader.bool())
        }
    }

    // MARK: - Small pieces

    /// An element count; every element takes at least one byte, so a count larger
    /// than the remaining input is corrupt and is refused before any allocation.
    /// The largest outbox epoch or seq a reindex event names: the wire's
    /// (`WireLimits.maximumPosition`), since its fold sends it in a message.
    static let maximumPosition: UInt64 = (1 << 53) - 1

    /// An outbox epoch or seq of a reindex event, at most `maximumPosition`.
    static func readPosition(_ reader: inout BinaryReader, _ name: String) throws(CodecError) -> UInt64 {
        let at = reader.offset
        let value = try reader.uvarint()
        guard value <= maximumPosition else {
            throw CodecError(.limitExceeded, at: at, "a reindex event's \(name) is \(value), above \(maximumPosition)")
        }
        return value
    }

    /// A count of public hashes of 32 bytes each, in ascending order without repeats.
    static func readHashes(_ reader: inout BinaryReader) throws(CodecError) -> [[UInt8]] {
        let count = try readCount(&reader)
        var hashes: [[UInt8]] = []
        for _ in 0..<count {
            let start = reader.offset
            let hash = try reader.fixedBytes(32, "public hash")
            if let last = hashes.last, !last.lexicographicallyPrecedes(hash) {
                throw CodecError(.nonCanonical, at: start, "requested hashes must be in ascending order without repeats")
            }
            hashes.append(hash)
        }
        return hashes
    }

    static func readCount(_ reader: inout BinaryReader) throws(CodecError) -> Int {
        let start = reader.offset
        let count = try reader.length()
        guard count <= reader.remaining else {
            throw CodecError(.truncated, at: start, "count \(count) is larger than the remaining input")
        }
        return count
    }

    static func writeCause(_ cause: DeletionCause, to writer: inout BinaryWriter) {
        switch cause {
        case .identifier: writer.byte(1)
        case .domain(let domain):
            writer.byte(2)
            writer.string(domain)
        case .all: writer.byte(3)
        }
    }

    static func readCause(_ reader: inout BinaryReader) throws(CodecError) -> DeletionCause {
        let start = reader.offset
        switch try reader.byte() {
        case 1: return .identifier
        case 2: return .domain(try reader.string())
        case 3: return .all
        case let other: throw CodecError(.unknownTag, at: start, "unknown deletion cause \(other)")
        }
    }

    static func writeChange<T>(_ change: FieldChange<T>, to writer: inout BinaryWriter,
                               _ write: (inout BinaryWriter, T) -> Void) {
        switch change {
        case .keep: writer.byte(0)
        case .set(let value):
            writer.byte(1)
            write(&writer, value)
        case .clear: writer.byte(2)
        }
    }

    static func readChange<T>(_ reader: inout BinaryReader,
                              _ read: (inout BinaryReader) throws(CodecError) -> T) throws(CodecError) -> FieldChange<T> {
        let start = reader.offset
        switch try reader.byte() {
        case 0: return .keep
        case 1: return .set(try read(&reader))
        case 2: return .clear
        case let other: throw CodecError(.unknownTag, at: start, "unknown field change tag \(other)")
        }
    }
}

extension EventCodec {
    /// The canonical encoding of an attribute set alone (as projections store it).
    /// The attribute set inside an encoded `itemIndexed` event, which is the
    /// event's last field (`Journal/FORMAT.md`, "Items"): the same bytes as
    /// `encode(_: AttributeSet)` of the item's attributes, without encoding them
    /// again. Nil when `payload` is not an `itemIndexed` event of this version.
    public static func indexedItemAttributes(in payload: [UInt8]) -> ArraySlice<UInt8>? {
        var reader = BinaryReader(payload)
        do {
            guard try reader.byte() == EventKind.itemIndexed.version,
                  try reader.byte() == EventKind.itemIndexed.rawValue else { return nil }
            try reader.skipLengthPrefixed()  // index
            try reader.skipLengthPrefixed()  // uniqueIdentifier
            if try reader.byte() == 1 { try reader.skipLengthPrefixed() }  // domainIdentifier
            if try reader.byte() == 1 { _ = try reader.svarint() }  // expirationDate
            return payload[reader.offset...]
        } catch {
            return nil
        }
    }

    public static func encode(_ attributes: AttributeSet) -> [UInt8] {
        var writer = BinaryWriter()
        writeAttributes(attributes, to: &writer)
        return writer.bytes
    }

    public static func decodeAttributes(_ bytes: [UInt8]) throws(CodecError) -> AttributeSet {
        var reader = BinaryReader(bytes)
        let attributes = try readAttributes(&reader)
        guard reader.isAtEnd else {
            throw CodecError(.trailingBytes, at: reader.offset, "\(reader.remaining) bytes follow the attribute set")
        }
        return attributes
    }

    /// The canonical encoding of an activity alone (as projections store it).
    public static func encode(_ activity: UserActivity) -> [UInt8] {
        var writer = BinaryWriter()
        writeActivity(activity, to: &writer)
        return writer.bytes
    }

    public static func decodeActivity(_ bytes: [UInt8]) throws(CodecError) -> UserActivity {
        var reader = BinaryReader(bytes)
        let activity = try readActivity(&reader)
        guard reader.isAtEnd else {
            throw CodecError(.trailingBytes, at: reader.offset, "\(reader.remaining) bytes follow the activity")
        }
        return activity
    }
}
