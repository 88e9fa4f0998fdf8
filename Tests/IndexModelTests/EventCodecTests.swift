import IndexModel
import PropertyBased
import Testing

// MARK: - Round trips

@Test func everyEventRoundTripsThroughItsEncoding() async {
    await propertyCheck(count: 2000, input: EventGenerators.event) { event in
        let bytes = EventCodec.encode(event)
        let decoded = try EventCodec.decode(bytes)
        #expect(decoded == event)
        #expect(EventCodec.encode(decoded) == bytes)
    }
}

@Test func everyEventKindIsGenerated() {
    // The round-trip property is only as good as its generator: it must reach every kind.
    var rng = SystemRandomNumberGenerator()
    var kinds = Set<EventKind>()
    for _ in 0..<1000 { kinds.insert(RandomEvents.event(&rng).kind) }
    #expect(kinds == Set(EventKind.allCases))
}

@Test func attributeSetsRoundTripOnTheirOwn() async {
    await propertyCheck(count: 500, input: EventGenerators.attributeSet) { attributes in
        let bytes = EventCodec.encode(attributes)
        let decoded = try EventCodec.decodeAttributes(bytes)
        #expect(decoded == attributes)
        #expect(EventCodec.encode(decoded) == bytes)
    }
}

@Test func activitiesRoundTripOnTheirOwn() async {
    await propertyCheck(count: 500, input: EventGenerators.activity) { activity in
        let bytes = EventCodec.encode(activity)
        let decoded = try EventCodec.decodeActivity(bytes)
        #expect(decoded == activity)
        #expect(EventCodec.encode(decoded) == bytes)
    }
}

@Test func encodingDoesNotDependOnInsertionOrder() {
    var forward = AttributeSet()
    var backward = AttributeSet()
    let entries: [(AttributeKey, AttributeValue)] = [
        (.title, .string("t")), (.rating, .number(4)), (.custom("b"), .bool(true)),
        (.custom("a"), .date(Timestamp(millisecondsSince1970: 5))), (.domainIdentifier, .string("d")),
    ]
    for (key, value) in entries { forward[key] = value }
    for (key, value) in entries.reversed() { backward[key] = value }
    let item = { (attributes: AttributeSet) in
        JournalEvent.itemIndexed(index: "i", item: SearchableItem(uniqueIdentifier: "1", attributes: attributes))
    }
    #expect(EventCodec.encode(item(forward)) == EventCodec.encode(item(backward)))

    let info = UserActivity(activityType: "t", userInfo: ["z": "1", "a": "2", "é": "3", "m": "4"])
    var reordered = UserActivity(activityType: "t")
    for key in ["m", "é", "a", "z"] { reordered.userInfo[key] = info.userInfo[key] }
    #expect(EventCodec.encode(.activityRecorded(info)) == EventCodec.encode(.activityRecorded(reordered)))
}

@Test func updateKeepsSetAndClearEncodeDistinctly() throws {
    let changes: [FieldChange<String>] = [.keep, .set(""), .clear]
    var encodings = Set<[UInt8]>()
    for change in changes {
        let event = JournalEvent.itemUpdated(index: "i", update: ItemUpdate(uniqueIdentifier: "1", domainIdentifier: change))
        let bytes = EventCodec.encode(event)
        #expect(try EventCodec.decode(bytes) == event)
        encodings.insert(bytes)
    }
    #expect(encodings.count == 3)

    var attributeChanges = AttributeChanges()
    attributeChanges[.title] = .some(nil)
    attributeChanges[.rating] = .some(.number(2))
    let update = JournalEvent.itemUpdated(index: "i", update: ItemUpdate(uniqueIdentifier: "1", attributes: attributeChanges))
    let decoded = try EventCodec.decode(EventCodec.encode(update))
    guard case .itemUpdated(_, let decodedUpdate) = decoded else {
        Issue.record("decoded \(decoded.kind), expected itemUpdated")
        return
    }
    #expect(decodedUpdate.attributes[.title] == .some(nil), "a cleared attribute stays a clear, not an absent key")
    #expect(decodedUpdate.attributes[.contentDescription] == nil)
}

@Test func formatDocumentExampleEncodesAsDocumented() throws {
    // The worked example of Journal/FORMAT.md, byte for byte.
    var item = SearchableItem(uniqueIdentifier: "1", domainIdentifier: "album-1")
    item.attributes.title = "Maui"
    item.attributes.rankingHint = 0.5
    let event = JournalEvent.itemIndexed(index: "photos", item: item)
    let expected: [UInt8] = [
        0x01, 0x01,
        0x06, 0x70, 0x68, 0x6F, 0x74, 0x6F, 0x73,
        0x01, 0x31,
        0x01, 0x07, 0x61, 0x6C, 0x62, 0x75, 0x6D, 0x2D, 0x31,
        0x00,
        0x02,
        0x01, 0x01, 0x04, 0x4D, 0x61, 0x75, 0x69,
        0x13, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xE0, 0x3F,
    ]
    #expect(EventCodec.encode(event) == expected)
    #expect(try EventCodec.decode(expected) == event)
}

// MARK: - Canonical form: every way a payload can be wrong

/// Builds a payload by hand, so that tests can write what the encoder never would.
private func payload(_ build: (inout BinaryWriter) -> Void) -> [UInt8] {
    var writer = BinaryWriter()
    build(&writer)
    return writer.bytes
}

/// A payload that starts like an `itemIndexed` event of item "1" in index "i",
/// without domain or expiry, up to its attribute count.
private func itemIndexedHeader(_ writer: inout BinaryWriter) {
    writer.byte(EventKind.itemIndexed.version)
    writer.byte(EventKind.itemIndexed.rawValue)
    writer.string("i")
    writer.string("1")
    writer.byte(0)
    writer.byte(0)
}

private func expectDecodeFails(_ bytes: [UInt8], with code: CodecError.Code, at offset: Int? = nil,
                               sourceLocation: SourceLocation = #_sourceLocation) {
    do {
        let event = try EventCodec.decode(bytes)
        Issue.record("decoded \(event.kind) from bytes that should fail with \(code)", sourceLocation: sourceLocation)
    } catch {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        if let offset {
            #expect(error.offset == offset, "\(error)", sourceLocation: sourceLocation)
        }
    }
}

/// One event of every kind, with optional fields present, for the truncation sweep.
private let sampleEvents: [JournalEvent] = {
    var attributes = AttributeSet()
    attributes.title = "Haleakalā 🌋"
    attributes.keywords = ["maui", "sunrise"]
    attributes.rankingHint = 0.25
    attributes[.startDate] = .date(Timestamp(millisecondsSince1970: -1_000))
    attributes[.supportsNavigation] = .bool(true)
    attributes[.custom("camera")] = .string("x")
    var changes = AttributeChanges()
    changes[.title] = .some(.string("new"))
    changes[.contentDescription] = .some(nil)
    changes[.custom("z")] = .some(.number(1))
    let activity = UserActivity(
        activityType: "com.yummly/browseRecipe", title: "Baked Potato Chips", keywords: ["potato"],
        attributes: attributes, userInfo: ["id": "BPC-983195", "b": "2"], webpageURL: "https://www.yummly.com/",
        expirationDate: Timestamp(millisecondsSince1970: 7), eligibleForSearch: true, eligibleForHandoff: false,
        eligibleForPublicIndexing: true, relatedUniqueIdentifier: "1", weakRelatedUniqueIdentifier: "2",
        domainIdentifier: "recipes", persistentIdentifier: "p")
    return [
        .itemIndexed(index: "photos", item: SearchableItem(
            uniqueIdentifier: "1", domainIdentifier: "album-1", attributes: attributes,
            expirationDate: Timestamp(millisecondsSince1970: 1_798_761_600_000))),
        .itemUpdated(index: "photos", update: ItemUpdate(
            uniqueIdentifier: "1", domainIdentifier: .set("album-2"), expirationDate: .set(Timestamp(millisecondsSince1970: 9)),
            attributes: changes)),
        .itemDeleted(index: "photos", identifier: "1", cause: .domain("album-1")),
        .itemExpired(index: "photos", identifier: "1"),
        .clientStateSet(index: "photos", state: [0, 1, 2, 255]),
        .activityRecorded(activity),
        .activityDeleted(key: "id:p", cause: .all),
        .activityExpired(key: "id:p"),
        .resultShown(ref: "1"),
        .resultEngaged(ref: "https://www.yummly.com/"),
        .publicContentRequested(hashes: [[UInt8](repeating: 9, count: 32)]),
        .storeRestored(StoreRestore(previousEpoch: Epoch(1), snapshotHead: Seq(9), truncatedTo: Seq(5), snapshotSHA256: [UInt8](repeating: 3, count: 32))),
        .reindexRequested(index: "photos", identifiers: ["1", "2"]),
        .reindexAcknowledged(index: "photos", request: 12),
        .epochAdvanced(from: Epoch(1_790_000_000_000), to: Epoch(1_800_000_000_001)),
        .epochAdvanced(from: Epoch(1_790_000_000_000), to: Epoch(1_800_000_000_001), kept: OutboxSeq(300)),
        .popularityModeLearned(.ldp(try! PrivatePopularity(epsilonThousandths: 4_000, dailyBudgetThousandths: 8_000, hashes: 64,
                                                           buckets: 1024))),
        .cloudReindexAsked(epoch: Epoch(1_790_000_000_000), seq: OutboxSeq(300)),
        .votesReindexRequested(VoteReindexRequest(afterEpoch: Epoch(1), afterSeq: OutboxSeq(3), throughEpoch: Epoch(1_790_000_000_000),
                                                  throughSeq: OutboxSeq(2), hashes: [[UInt8](repeating: 9, count: 32)], more: true)),
        .activityPurged(PurgedActivity(key: PurgedActivity.pseudonym(digest: [UInt8](repeating: 0xa5, count: 16)),
                                       publicHash: [UInt8](repeating: 9, count: 32),
                                       webpageURL: PurgedActivity.pseudonym(digest: [UInt8](repeating: 0x0f, count: 16)),
                                       relatedUniqueIdentifier: "1", weakRelatedUniqueIdentifier: nil)),
    ]
}()

@Test func everyTruncatedPrefixFailsAsTruncated() {
    #expect(Set(sampleEvents.map(\.kind)) == Set(EventKind.allCases))
    for event in sampleEvents {
        let bytes = EventCodec.encode(event)
        for length in 0..<bytes.count {
            do {
                _ = try EventCodec.decode(Array(bytes[..<length]))
                Issue.record("a \(length)-byte prefix of a \(bytes.count)-byte \(event.kind) event decoded")
            } catch {
                #expect(error.code == .truncated, "prefix \(length) of \(event.kind): \(error)")
                #expect(error.offset <= length, "prefix \(length) of \(event.kind): \(error)")
            }
        }
    }
}

@Test func overlongVarintsAreRefused() {
    // A string length of 1 written in two bytes instead of one.
    expectDecodeFails([1, EventKind.resultShown.rawValue, 0x81, 0x00, 0x61], with: .overlongVarint, at: 2)
    // Zero written in two bytes.
    expectDecodeFails([1, EventKind.resultShown.rawValue, 0x80, 0x00], with: .overlongVarint, at: 2)
    // Eleven bytes: more than 64 bits.
    expectDecodeFails([1, EventKind.resultShown.rawValue] + Array(repeating: 0x80, count: 10) + [0x01],
                      with: .overlongVarint, at: 2)
    // Ten bytes whose last carries bits above bit 63.
    expectDecodeFails([1, EventKind.resultShown.rawValue] + Array(repeating: 0xFF, count: 9) + [0x02],
                      with: .overlongVarint, at: 2)
}

@Test func unknownFormatVersionIsRefused() {
    let valid = EventCodec.encode(.resultShown(ref: "1"))
    for version: UInt8 in [0, 8, 255] {
        var bytes = valid
        bytes[0] = version
        expectDecodeFails(bytes, with: .unknownVersion, at: 0)
    }
}

@Test func unknownEventKindIsRefused() {
    for kind: UInt8 in [0, 20, 255] {
        expectDecodeFails([1, kind, 1, 0x31], with: .unknownKind, at: 1)
    }
}

@Test func anEpochAdvanceThatDoesNotGoForwardIsRefused() {
    // Version 3, kind 15, from 5 to 5: an advance must end above where it began.
    expectDecodeFails([3, 15, 5, 5], with: .nonCanonical, at: 2)
    expectDecodeFails([3, 15, 5, 4], with: .nonCanonical, at: 2)
    #expect((try? EventCodec.decode([3, 15, 5, 6])) == .epochAdvanced(from: Epoch(5), to: Epoch(6)))
}

/// A reindex request reads forward through a device's outbox: its `through`
/// is not before its `after`, its hashes are ascending without repeats, and
/// its more flag is 0 or 1.
@Test func aReindexRequestOutOfOrderIsRefused() {
    let hash = [UInt8](repeating: 1, count: 32), later = [UInt8](repeating: 2, count: 32)
    func request(after: (UInt8, UInt8), through: (UInt8, UInt8), hashes: [[UInt8]], more: UInt8) -> [UInt8] {
        [6, 18, after.0, after.1, through.0, through.1, UInt8(hashes.count)] + hashes.flatMap { $0 } + [more]
    }
    #expect(throws: Never.self) { try EventCodec.decode(request(after: (2, 5), through: (3, 1), hashes: [hash, later], more: 1)) }
    expectDecodeFails(request(after: (2, 5), through: (2, 4), hashes: [], more: 0), with: .nonCanonical, at: 2)
    expectDecodeFails(request(after: (2, 5), through: (1, 9), hashes: [], more: 0), with: .nonCanonical, at: 2)
    expectDecodeFails(request(after: (2, 5), through: (3, 1), hashes: [later, hash], more: 0), with: .nonCanonical, at: 39)
    expectDecodeFails(request(after: (2, 5), through: (3, 1), hashes: [hash, hash], more: 0), with: .nonCanonical, at: 39)
    expectDecodeFails(request(after: (2, 5), through: (3, 1), hashes: [], more: 2), with: .nonCanonical, at: 7)
    // A position the wire cannot carry: 2^53 as a uvarint.
    expectDecodeFails([6, 17, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10, 1], with: .limitExceeded, at: 2)
}

@Test func anEpochAdvanceWritesWhatItKeptOnlyWhenItKeptSomething() {
    #expect(EventCodec.encode(.epochAdvanced(from: Epoch(5), to: Epoch(6))) == [3, 15, 5, 6], "advances written before keeping existed keep their bytes")
    #expect(EventCodec.encode(.epochAdvanced(from: Epoch(5), to: Epoch(6), kept: OutboxSeq(2))) == [4, 15, 5, 6, 2])
    #expect((try? EventCodec.decode([4, 15, 5, 6, 2])) == .epochAdvanced(from: Epoch(5), to: Epoch(6), kept: OutboxSeq(2)))
    expectDecodeFails([4, 15, 5, 6, 0], with: .nonCanonical, at: 4)
    expectDecodeFails([3, 15, 5, 6, 2], with: .trailingBytes, at: 4)
    expectDecodeFails([4, 1, 0], with: .nonCanonical, at: 0)
}

@Test func unknownTagsAreRefused() {
    // Attribute key tag 23 follows the last standard key (22) and is not assigned.
    expectDecodeFails(payload { writer in
        itemIndexedHeader(&writer)
        writer.uvarint(1)
        writer.byte(23)
        writer.byte(AttributeType.string.rawValue)
        writer.string("x")
    }, with: .unknownTag, at: 9)
    // Value type tag 6 does not exist (custom keys accept any existing type).
    expectDecodeFails(payload { writer in
        itemIndexedHeader(&writer)
        writer.uvarint(1)
        writer.byte(0)
        writer.string("c")
        writer.byte(6)
    }, with: .unknownTag, at: 12)
    // Deletion cause 4.
    expectDecodeFails(payload { writer in
        writer.byte(1)
        writer.byte(EventKind.activityDeleted.rawValue)
        writer.string("k")
        writer.byte(4)
    }, with: .unknownTag, at: 4)
    // Field change 3 for an update's domain.
    expectDecodeFails(payload { writer in
        writer.byte(1)
        writer.byte(EventKind.itemUpdated.rawValue)
        writer.string("i")
        writer.string("1")
        writer.byte(3)
    }, with: .unknownTag, at: 6)
}

@Test func standardKeysRefuseValuesOfAnotherType() {
    let wrongTypes: [(AttributeKey, AttributeType)] = [
        (.title, .number), (.keywords, .string), (.rating, .string), (.startDate, .number), (.supportsPhoneCall, .string),
        (.domainIdentifier, .strings),
    ]
    for (key, type) in wrongTypes {
        expectDecodeFails(payload { writer in
            itemIndexedHeader(&writer)
            writer.uvarint(1)
            writer.byte(key.tag)
            writer.byte(type.rawValue)
            switch type {
            case .string: writer.string("x")
            case .strings: writer.uvarint(0)
            case .number: writer.double(1)
            case .date: writer.svarint(0)
            case .bool: writer.bool(true)
            }
        }, with: .typeMismatch, at: 10)
    }
}

@Test func attributesOutOfOrderOrRepeatedAreRefused() {
    func attributeSet(_ entries: [(AttributeKey, String)]) -> [UInt8] {
        payload { writer in
            itemIndexedHeader(&writer)
            writer.uvarint(UInt64(entries.count))
            for (key, value) in entries {
                writer.byte(key.tag)
                if case .custom(let name) = key { writer.string(name) }
                writer.byte(AttributeType.string.rawValue)
                writer.string(value)
            }
        }
    }
    // Each standard entry takes 1 (tag) + 1 (type) + 2 (string "x") bytes from offset 9.
    expectDecodeFails(attributeSet([(.displayName, "x"), (.title, "x")]), with: .nonCanonical, at: 13)
    expectDecodeFails(attributeSet([(.title, "x"), (.title, "x")]), with: .nonCanonical, at: 13)
    expectDecodeFails(attributeSet([(.custom("a"), "x"), (.title, "x")]), with: .nonCanonical, at: 15)
    expectDecodeFails(attributeSet([(.custom("b"), "x"), (.custom("a"), "x")]), with: .nonCanonical, at: 15)
    expectDecodeFails(attributeSet([(.custom("a"), "x"), (.custom("a"), "x")]), with: .nonCanonical, at: 15)
    // Custom names order by their UTF-8 bytes: "Z" (0x5A) before "a" (0x61) before "é" (0xC3 0xA9).
    let ordered = attributeSet([(.custom("Z"), "x"), (.custom("a"), "x"), (.custom("é"), "x")])
    #expect(throws: Never.self) { try EventCodec.decode(ordered) }
}

@Test func canonicallyEquivalentCustomNamesCannotRepeatAKey() {
    // "é" and "e\u{301}" are different bytes but one Swift String, so they would
    // collapse into one dictionary entry: the payload cannot round-trip and must be refused.
    let bytes = payload { writer in
        itemIndexedHeader(&writer)
        writer.uvarint(2)
        for name in ["e\u{301}", "\u{E9}"] {
            writer.byte(0)
            writer.string(name)
            writer.byte(AttributeType.bool.rawValue)
            writer.bool(true)
        }
    }
    expectDecodeFails(bytes, with: .nonCanonical)

    let info = payload { writer in
        writer.byte(1)
        writer.byte(EventKind.activityRecorded.rawValue)
        writer.string("t")
        writer.byte(0)
        writer.uvarint(0)
        writer.uvarint(0)
        writer.uvarint(2)
        for key in ["e\u{301}", "\u{E9}"] {
            writer.string(key)
            writer.string("v")
        }
        for _ in 0..<3 { writer.byte(0) }
        for _ in 0..<4 { writer.byte(0) }
    }
    expectDecodeFails(info, with: .nonCanonical)
}

@Test func customKeysWithStandardNamesAreRefused() {
    expectDecodeFails(payload { writer in
        itemIndexedHeader(&writer)
        writer.uvarint(1)
        writer.byte(0)
        writer.string("title")
        writer.byte(AttributeType.string.rawValue)
        writer.string("x")
    }, with: .nonCanonical, at: 9)
}

@Test func userInfoKeysMustBeStrictlyIncreasing() {
    func activity(userInfoKeys: [String]) -> [UInt8] {
        payload { writer in
            writer.byte(1)
            writer.byte(EventKind.activityRecorded.rawValue)
            writer.string("t")
            writer.byte(0)
            writer.uvarint(0)
            writer.uvarint(0)
            writer.uvarint(UInt64(userInfoKeys.count))
            for key in userInfoKeys {
                writer.string(key)
                writer.string("v")
            }
            writer.byte(0)
            writer.byte(0)
            writer.byte(0)
            for _ in 0..<4 { writer.byte(0) }
        }
    }
    #expect(throws: Never.self) { try EventCodec.decode(activity(userInfoKeys: ["a", "b"])) }
    expectDecodeFails(activity(userInfoKeys: ["b", "a"]), with: .nonCanonical, at: 12)
    expectDecodeFails(activity(userInfoKeys: ["a", "a"]), with: .nonCanonical, at: 12)
}

@Test func nonCanonicalSmallFieldsAreRefused() {
    // A presence byte other than 0 or 1 (the item's domain).
    expectDecodeFails(payload { writer in
        writer.byte(1)
        writer.byte(EventKind.itemIndexed.rawValue)
        writer.string("i")
        writer.string("1")
        writer.byte(2)
    }, with: .nonCanonical, at: 6)
    // A boolean value byte other than 0 or 1.
    expectDecodeFails(payload { writer in
        itemIndexedHeader(&writer)
        writer.uvarint(1)
        writer.byte(AttributeKey.supportsNavigation.tag)
        writer.byte(AttributeType.bool.rawValue)
        writer.byte(2)
    }, with: .nonCanonical, at: 11)
    // Activity flags with a bit above the three known ones.
    expectDecodeFails(payload { writer in
        writer.byte(1)
        writer.byte(EventKind.activityRecorded.rawValue)
        writer.string("t")
        writer.byte(0)
        writer.uvarint(0)
        writer.uvarint(0)
        writer.uvarint(0)
        writer.byte(0)
        writer.byte(0)
        writer.byte(8)
        for _ in 0..<4 { writer.byte(0) }
    }, with: .nonCanonical, at: 10)
}

@Test func nonFiniteNumbersAreRefused() {
    // The model holds finite numbers only; NaN would also make an event unequal to itself.
    for number in [Double.nan, -.nan, .signalingNaN, .infinity, -.infinity] {
        expectDecodeFails(payload { writer in
            itemIndexedHeader(&writer)
            writer.uvarint(1)
            writer.byte(AttributeKey.rating.tag)
            writer.byte(AttributeType.number.rawValue)
            writer.double(number)
        }, with: .nonCanonical, at: 11)
    }
}

@Test func trailingBytesAreRefused() {
    for event in sampleEvents {
        let bytes = EventCodec.encode(event)
        expectDecodeFails(bytes + [0], with: .trailingBytes, at: bytes.count)
    }
    #expect(throws: CodecError(.trailingBytes, at: 1, "1 bytes follow the attribute set")) {
        try EventCodec.decodeAttributes([0, 0])
    }
}

@Test func invalidUTF8IsRefused() {
    // [0xF0, 0x9F, 0x98] is a cut-off four-byte sequence, which repairs to
    // one U+FFFD of the same length: only the bytes tell them apart.
    let invalid: [[UInt8]] = [
        [0xFF], [0xC3], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0x61, 0x80], [0xF0, 0x9F, 0x98],
    ]
    for bytes in invalid {
        expectDecodeFails([1, EventKind.resultEngaged.rawValue, UInt8(bytes.count)] + bytes, with: .invalidUTF8, at: 2)
    }
}

@Test func countsLargerThanTheInputAreRefusedBeforeAllocating() {
    // A count of 2^62 attributes with three bytes of input: refused by the length
    // limit, not by running out of memory or looping.
    expectDecodeFails(payload { writer in
        itemIndexedHeader(&writer)
        writer.uvarint(1 << 62)
        writer.raw([0, 0, 0])
    }, with: .limitExceeded, at: 8)
    // A count within the limit but larger than what remains.
    expectDecodeFails(payload { writer in
        itemIndexedHeader(&writer)
        writer.uvarint(1_000_000)
        writer.raw([0, 0, 0])
    }, with: .truncated, at: 8)
    // A string length of Int32.max + 1, and a client state of a million bytes.
    expectDecodeFails(payload { writer in
        writer.byte(1)
        writer.byte(EventKind.resultShown.rawValue)
        writer.uvarint(UInt64(Int32.max) + 1)
    }, with: .limitExceeded, at: 2)
    expectDecodeFails(payload { writer in
        writer.byte(1)
        writer.byte(EventKind.clientStateSet.rawValue)
        writer.string("i")
        writer.uvarint(1_000_000)
        writer.raw([1, 2, 3])
    }, with: .truncated, at: 4)
    // Keyword and list counts go through the same check.
    expectDecodeFails(payload { writer in
        itemIndexedHeader(&writer)
        writer.uvarint(1)
        writer.byte(AttributeKey.keywords.tag)
        writer.byte(AttributeType.strings.rawValue)
        writer.uvarint(UInt64.max)
    }, with: .limitExceeded, at: 11)
}

@Test func corruptPayloadsFailWithoutCrashing() async {
    // Flipping any bit of a valid payload either still decodes to something that
    // re-encodes to the same bytes, or fails with a CodecError; it never traps.
    await propertyCheck(count: 300, input: EventGenerators.event) { event in
        let bytes = EventCodec.encode(event)
        for position in bytes.indices {
            for bit in [0, 3, 7] {
                var corrupt = bytes
                corrupt[position] ^= UInt8(1 << bit)
                if let decoded = try? EventCodec.decode(corrupt) {
                    #expect(EventCodec.encode(decoded) == corrupt)
                }
            }
        }
    }
}

@Test func indexedItemAttributesAreTheEncodedAttributeSetInsideTheEvent() {
    var attributes = AttributeSet()
    attributes.title = "Haleakala Sunrise"
    attributes.keywords = ["maui", "dawn"]
    attributes[.custom("camera")] = .string("x100")
    let shapes: [SearchableItem] = [
        SearchableItem(uniqueIdentifier: "1", domainIdentifier: nil, attributes: attributes, expirationDate: nil),
        SearchableItem(uniqueIdentifier: "photo-2", domainIdentifier: "album.2019", attributes: attributes,
                       expirationDate: Timestamp(millisecondsSince1970: 1_795_000_000_000)),
        SearchableItem(uniqueIdentifier: "3", domainIdentifier: "a", attributes: AttributeSet(), expirationDate: nil),
    ]
    for item in shapes {
        let payload = EventCodec.encode(.itemIndexed(index: "photos", item: item))
        let found: [UInt8]? = EventCodec.indexedItemAttributes(in: payload).map(Array.init)
        let expected: [UInt8] = EventCodec.encode(item.attributes)
        #expect(found == expected)
    }
    let other = EventCodec.encode(.resultShown(ref: "1"))
    #expect(EventCodec.indexedItemAttributes(in: other) == nil)
    #expect(EventCodec.indexedItemAttributes(in: [1, 1, 9]) == nil)
}

@Test func attributeSetKeepsCanonicalOrderWhateverTheOrderOfChanges() {
    var forwards = AttributeSet()
    forwards[.custom("zoom")] = .number(2)
    forwards.title = "T"
    forwards[.custom("camera")] = .string("x")
    forwards.rankingHint = 1
    var backwards = AttributeSet()
    backwards.rankingHint = 1
    backwards[.custom("camera")] = .string("x")
    backwards.title = "T"
    backwards[.custom("zoom")] = .number(2)
    #expect(forwards == backwards)
    #expect(EventCodec.encode(forwards) == EventCodec.encode(backwards))
    let keys: [AttributeKey] = forwards.entries.map(\.key)
    #expect(keys == keys.sorted())
    forwards.title = nil
    #expect(forwards.title == nil)
    #expect(forwards.count == 3)
}

@Test func canonicallyEquivalentCustomNamesAreOneAttribute() {
    var attributes = AttributeSet()
    attributes[.custom("e\u{301}")] = .bool(true)
    attributes[.custom("\u{E9}")] = .bool(false)
    #expect(attributes.count == 1)
    #expect(attributes[.custom("e\u{301}")] == .bool(false))
    let decoded = try? EventCodec.decodeAttributes(EventCodec.encode(attributes))
    #expect(decoded == attributes)
}

@Suite struct EventVersionTests {
    private let request = JournalEvent.publicContentRequested(hashes: [[UInt8](repeating: 1, count: 32),
                                                                       [UInt8](repeating: 2, count: 32)])

    @Test func eachEventIsWrittenWithTheVersionThatIntroducedItsKind() throws {
        #expect(EventCodec.encode(.resultShown(ref: "1"))[0] == 1, "old kinds keep their bytes")
        #expect(EventCodec.encode(request)[0] == 2)
        #expect(try EventCodec.decode(EventCodec.encode(request)) == request)
    }

    @Test func anEventUnderAnotherVersionIsRefusedAsNonCanonical() throws {
        var bytes = EventCodec.encode(.resultShown(ref: "1"))
        bytes[0] = 2
        #expect(throws: CodecError.self) { try EventCodec.decode(bytes) }
        var newer = EventCodec.encode(request)
        newer[0] = 1
        let error = try #require(throws: CodecError.self) { try EventCodec.decode(newer) }
        #expect(error.code == .nonCanonical)
        newer[0] = 3
        #expect(throws: CodecError(.nonCanonical, at: 0, "a publicContentRequested event is written with format version 2, not 3")) {
            try EventCodec.decode(newer)
        }
        newer[0] = 8
        #expect(throws: CodecError(.unknownVersion, at: 0, "event format version 8 is not supported (this build reads versions 1 to 7)")) {
            try EventCodec.decode(newer)
        }
    }

    @Test func requestedHashesMustBeAscendingAndWhole() throws {
        let unsorted = EventCodec.encode(.publicContentRequested(hashes: [[UInt8](repeating: 2, count: 32),
                                                                         [UInt8](repeating: 1, count: 32)]))
        let error = try #require(throws: CodecError.self) { try EventCodec.decode(unsorted) }
        #expect(error.code == .nonCanonical)
        let cut = Array(EventCodec.encode(request).dropLast())
        #expect(throws: CodecError.self) { try EventCodec.decode(cut) }
    }
}
