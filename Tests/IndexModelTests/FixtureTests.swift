import Foundation
import IndexModel
import Testing

/// The golden files of each event format version (`Journal/fixtures/`, described
/// in `Journal/FORMAT.md`). A build must read them to exactly these events and
/// write exactly these bytes; a change that breaks this needs a new format version.
///
/// Run with `SIGHTLINE_RECORD_FIXTURES=1` to (re)write the files from the events
/// below; without it a missing or different file fails the test.
enum EventFixtures {
    /// One released version's fixture: its file names and the events it holds.
    struct Version {
        let number: UInt8
        let events: [JournalEvent]
        var binaryName: String { "events-v\(number).bin" }
        var jsonLinesName: String { "events-v\(number).jsonl" }
    }

    /// Version 1's file holds the kinds it introduced; versions 2, 3, 5, 6
    /// and 7 the kinds each added, version 4 the field it added. Every
    /// version is read by this build.
    static let versions = [Version(number: 1, events: events), Version(number: 2, events: versionTwoEvents),
                           Version(number: 3, events: versionThreeEvents), Version(number: 4, events: versionFourEvents),
                           Version(number: 5, events: versionFiveEvents), Version(number: 6, events: versionSixEvents),
                           Version(number: 7, events: versionSevenEvents)]

    static let versionSevenEvents: [JournalEvent] = [
        .activityPurged(PurgedActivity(key: PurgedActivity.pseudonym(digest: (0..<16).map { UInt8($0 * 17) }), publicHash: nil,
                                       webpageURL: nil, relatedUniqueIdentifier: nil, weakRelatedUniqueIdentifier: nil)),
        .activityPurged(PurgedActivity(key: PurgedActivity.pseudonym(digest: [UInt8](repeating: 0xAB, count: 16)),
                                       publicHash: (0..<32).map { UInt8($0 * 7 + 3) },
                                       webpageURL: PurgedActivity.pseudonym(digest: [UInt8](repeating: 0x01, count: 16)),
                                       relatedUniqueIdentifier: "n-1", weakRelatedUniqueIdentifier: "ñ-2")),
    ]

    static let versionSixEvents: [JournalEvent] = [
        .cloudReindexAsked(epoch: Epoch(1), seq: .beforeFirst),
        .cloudReindexAsked(epoch: Epoch(1_795_000_000_000), seq: OutboxSeq(300)),
        .votesReindexRequested(VoteReindexRequest(afterEpoch: Epoch(1), afterSeq: .beforeFirst, throughEpoch: Epoch(1),
                                                   throughSeq: .beforeFirst, hashes: [], more: false)),
        .votesReindexRequested(VoteReindexRequest(afterEpoch: Epoch(1_795_000_000_000), afterSeq: OutboxSeq(300),
                                                   throughEpoch: Epoch(1_800_000_000_001), throughSeq: OutboxSeq(65_536),
                                                   hashes: [[UInt8](repeating: 0x01, count: 32), (0..<32).map { UInt8($0 * 7 + 3) }],
                                                   more: true)),
    ]

    static let versionFiveEvents: [JournalEvent] = [
        .popularityModeLearned(.exact),
        .popularityModeLearned(.ldp(try! PrivatePopularity(epsilonThousandths: 4_000, dailyBudgetThousandths: 8_000, hashes: 64,
                                                           buckets: 1024))),
        .popularityModeLearned(.ldp(try! PrivatePopularity(epsilonThousandths: 1, dailyBudgetThousandths: 100_000, hashes: 64,
                                                           buckets: 65_536))),
        .popularityModeLearned(.ldp(try! PrivatePopularity(epsilonThousandths: 1_250, dailyBudgetThousandths: 2_500, hashes: 1,
                                                           buckets: 2))),
    ]

    static let versionFourEvents: [JournalEvent] = [
        .epochAdvanced(from: Epoch(1), to: Epoch(65_538), kept: OutboxSeq(1)),
        .epochAdvanced(from: Epoch(1_795_000_000_000), to: Epoch(1_800_000_000_001), kept: OutboxSeq(300)),
    ]

    static let versionThreeEvents: [JournalEvent] = [
        .epochAdvanced(from: Epoch(1), to: Epoch(2)),
        .epochAdvanced(from: Epoch(1_795_000_000_000), to: Epoch(1_800_000_000_001)),
    ]

    static let versionTwoEvents: [JournalEvent] = [
        .publicContentRequested(hashes: []),
        .publicContentRequested(hashes: [[UInt8](repeating: 0x01, count: 32),
                                         (0..<32).map { UInt8($0 * 7 + 3) }]),
        .storeRestored(StoreRestore(previousEpoch: Epoch(1), snapshotHead: Seq(42), truncatedTo: nil,
                                    snapshotSHA256: [UInt8](repeating: 0xAB, count: 32))),
        .storeRestored(StoreRestore(previousEpoch: Epoch(2), snapshotHead: Seq(300), truncatedTo: Seq(128),
                                    snapshotSHA256: (0..<32).map { UInt8($0) })),
        .reindexRequested(index: "photos", identifiers: nil),
        .reindexRequested(index: "notes", identifiers: ["n-1", "ñ-2"]),
        .reindexAcknowledged(index: "photos", request: 301),
    ]

    /// Every event kind of version 1 at least once, every deletion cause, every
    /// field change and every attribute value type, standard and custom.
    static let events: [JournalEvent] = {
        var photo = AttributeSet()
        photo.title = "Haleakalā Sunrise 🌋"
        photo.contentDescription = "May 12, 2015 Maui, Hawaii"
        photo.keywords = ["maui", "sunrise"]
        photo.contentURL = "https://example.com/p/1"
        photo[.rating] = .number(4.5)
        photo[.startDate] = .date(Timestamp(millisecondsSince1970: 1_431_412_200_000))
        photo[.supportsNavigation] = .bool(true)
        photo[.custom("camera")] = .string("Nikon")
        photo[.custom("iso")] = .number(200)
        photo[.custom("people")] = .strings(["Ana", "Zoë"])
        photo[.custom("taken")] = .date(Timestamp(millisecondsSince1970: -1))
        photo[.custom("favourite")] = .bool(false)

        var changes = AttributeChanges()
        changes[.title] = .some(.string("Haleakala at dawn"))
        changes[.contentDescription] = .some(nil)
        changes[.rankingHint] = .some(.number(-0.25))
        changes[.custom("camera")] = .some(nil)

        var recipe = AttributeSet()
        recipe[.thumbnailURL] = .string("https://www.yummly.com/t.jpg")
        recipe[.custom("servings")] = .number(4)

        let activity = UserActivity(
            activityType: "com.yummly/browseRecipe", title: "Baked Potato Chips", keywords: ["potato", "snack"],
            attributes: recipe, userInfo: ["id": "BPC-983195", "source": "search"],
            webpageURL: "https://www.yummly.com/recipe/BPC-983195",
            expirationDate: Timestamp(millisecondsSince1970: 1_830_297_600_000),
            eligibleForSearch: true, eligibleForHandoff: false, eligibleForPublicIndexing: true,
            relatedUniqueIdentifier: "1", weakRelatedUniqueIdentifier: nil, domainIdentifier: "recipes")
        let named = UserActivity(activityType: "com.example/read", persistentIdentifier: "article-7")

        return [
            .itemIndexed(index: "photos", item: SearchableItem(
                uniqueIdentifier: "1", domainIdentifier: "album-1", attributes: photo,
                expirationDate: Timestamp(millisecondsSince1970: 1_798_761_600_000))),
            .itemIndexed(index: "photos", item: SearchableItem(uniqueIdentifier: "2")),
            .itemUpdated(index: "photos", update: ItemUpdate(
                uniqueIdentifier: "1", domainIdentifier: .set("album-2"), expirationDate: .clear, attributes: changes)),
            .itemUpdated(index: "photos", update: ItemUpdate(uniqueIdentifier: "2", domainIdentifier: .clear)),
            .itemDeleted(index: "photos", identifier: "1", cause: .identifier),
            .itemDeleted(index: "photos", identifier: "2", cause: .domain("album-2")),
            .itemDeleted(index: "notes", identifier: "n-1", cause: .all),
            .itemExpired(index: "photos", identifier: "3"),
            .clientStateSet(index: "photos", state: [0x00, 0x01, 0x7F, 0x80, 0xFF]),
            .clientStateSet(index: "notes", state: []),
            .activityRecorded(activity),
            .activityRecorded(named),
            .activityDeleted(key: named.key, cause: .identifier),
            .activityDeleted(key: activity.key, cause: .domain("recipes")),
            .activityExpired(key: activity.key),
            .resultShown(ref: "1"),
            .resultEngaged(ref: "https://www.yummly.com/recipe/BPC-983195"),
        ]
    }()

    /// The events as the binary fixture holds them: each one's length as a uvarint, then its bytes.
    static func binary(_ events: [JournalEvent]) -> [UInt8] {
        var writer = BinaryWriter()
        for event in events {
            let bytes = EventCodec.encode(event)
            writer.uvarint(UInt64(bytes.count))
            writer.raw(bytes)
        }
        return writer.bytes
    }

    /// The events as the JSON Lines fixture holds them: one compact `jsonValue` a line.
    static func jsonLines(_ events: [JournalEvent]) -> String {
        events.map { JSONWriter.compact($0.jsonValue) + "\n" }.joined()
    }

    /// Splits a binary fixture into its length-prefixed events.
    static func frames(_ bytes: [UInt8]) throws(CodecError) -> [[UInt8]] {
        var reader = BinaryReader(bytes)
        var frames: [[UInt8]] = []
        while !reader.isAtEnd {
            let start = reader.offset
            let length = try reader.length()
            guard length <= reader.remaining else {
                throw CodecError(.truncated, at: start, "event length \(length) runs past the end of the fixture")
            }
            let end = reader.offset + length
            frames.append(Array(bytes[reader.offset..<end]))
            reader = BinaryReader(bytes, offset: end)
        }
        return frames
    }
}

/// The package's root directory, found from this file's path, so the test reads
/// the repository's fixtures wherever the build directory is.
func packageRoot(from file: String = #filePath) -> URL {
    var directory = URL(fileURLWithPath: file).deletingLastPathComponent()
    while directory.path != "/" {
        if FileManager.default.fileExists(atPath: directory.appendingPathComponent("Package.swift").path) {
            return directory
        }
        directory = directory.deletingLastPathComponent()
    }
    fatalError("no Package.swift above \(file)")
}

private let fixturesDirectory = packageRoot().appendingPathComponent("Journal/fixtures")
private let isRecording = ProcessInfo.processInfo.environment["SIGHTLINE_RECORD_FIXTURES"] == "1"

/// The fixture's bytes; in record mode, first writes `expected` to it.
private func fixture(_ name: String, expected: [UInt8]) throws -> [UInt8]? {
    let url = fixturesDirectory.appendingPathComponent(name)
    if isRecording {
        try FileManager.default.createDirectory(at: fixturesDirectory, withIntermediateDirectories: true)
        try Data(expected).write(to: url, options: .atomic)
    }
    guard let data = FileManager.default.contents(atPath: url.path) else {
        Issue.record("Journal/fixtures/\(name) is missing; run the tests with SIGHTLINE_RECORD_FIXTURES=1 to write it")
        return nil
    }
    return [UInt8](data)
}

@Test func fixtureEventsCoverTheFormat() {
    let events = EventFixtures.events
    #expect(Set(EventFixtures.versions.flatMap { $0.events.map(\.kind) }) == Set(EventKind.allCases))
    for version in EventFixtures.versions {
        #expect(version.events.allSatisfy { $0.formatVersionWritten == version.number }, "events-v\(version.number)")
    }
    var types = Set<AttributeType>()
    var customTypes = Set<AttributeType>()
    for case .itemIndexed(_, let item) in events {
        for (key, value) in item.attributes.values {
            types.insert(value.type)
            if key.isCustom { customTypes.insert(value.type) }
        }
    }
    #expect(types == [.string, .strings, .number, .date, .bool])
    #expect(customTypes == [.string, .strings, .number, .date, .bool])
}

@Test(arguments: EventFixtures.versions.map(\.number))
func binaryFixtureDecodesToTheKnownEventsAndReencodesIdentically(number: UInt8) throws {
    let version = EventFixtures.versions[Int(number) - 1]
    let expected = EventFixtures.binary(version.events)
    guard let bytes = try fixture(version.binaryName, expected: expected) else { return }
    let frames = try EventFixtures.frames(bytes)
    #expect(frames.count == version.events.count)
    var decoded: [JournalEvent] = []
    for (position, frame) in frames.enumerated() {
        do {
            decoded.append(try EventCodec.decode(frame))
        } catch {
            Issue.record("event \(position) of \(version.binaryName) does not decode: \(error)")
        }
    }
    for (position, (event, known)) in zip(decoded, version.events).enumerated() {
        #expect(event == known, "event \(position) of \(version.binaryName)")
    }
    #expect(EventFixtures.binary(decoded) == bytes, "decoded events re-encode to the fixture's bytes")
    #expect(bytes == expected, "this build encodes the known events to the fixture's bytes")
}

@Test(arguments: EventFixtures.versions.map(\.number))
func jsonLinesFixtureMatchesTheDecodedEvents(number: UInt8) throws {
    let version = EventFixtures.versions[Int(number) - 1]
    let expected = Array(EventFixtures.jsonLines(version.events).utf8)
    guard let binary = try fixture(version.binaryName, expected: EventFixtures.binary(version.events)),
          let bytes = try fixture(version.jsonLinesName, expected: expected) else { return }
    let decoded = try EventFixtures.frames(binary).map { frame throws in try EventCodec.decode(frame) }
    let text = String(decoding: bytes, as: UTF8.self)
    #expect(text.hasSuffix("\n"))
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
    #expect(lines.count == decoded.count)
    for (position, (line, event)) in zip(lines, decoded).enumerated() {
        #expect(String(line) == JSONWriter.compact(event.jsonValue), "line \(position + 1) of \(version.jsonLinesName)")
        let parsed = try JSONReader.parse(String(line))
        guard case .object(let object) = parsed else {
            Issue.record("line \(position + 1) is not an object")
            continue
        }
        #expect(object["kind"] == .string(event.kind.name))
    }
    #expect(bytes == expected)
}

@Test func fixtureFramesRefuseATruncatedFile() throws {
    let bytes = EventFixtures.binary(Array(EventFixtures.events.prefix(2)))
    #expect(throws: CodecError.self) { try EventFixtures.frames(Array(bytes.dropLast())) }
    #expect(try EventFixtures.frames([]) == [])
}
