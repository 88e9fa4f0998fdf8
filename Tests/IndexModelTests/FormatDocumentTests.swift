import Foundation
import IndexModel
import Testing

/// `Journal/FORMAT.md` is the contract of the event encoding; these tests check
/// its tables and worked example against the code, so neither drifts silently.
private func formatDocument() throws -> String {
    let url = packageRoot().appendingPathComponent("Journal/FORMAT.md")
    return try String(contentsOf: url, encoding: .utf8)
}

private func rows(of document: String) -> Set<String> {
    Set(document.split(separator: "\n").map { String($0) }.filter { $0.hasPrefix("| ") })
}

@Test func documentListsEveryAttributeKeyTagWithItsType() throws {
    let table = rows(of: try formatDocument())
    for key in AttributeKey.standard {
        let type = key.requiredType!
        let typeName: String
        switch type {
        case .string: typeName = "string"
        case .strings: typeName = "strings"
        case .number: typeName = "number"
        case .date: typeName = "date"
        case .bool: typeName = "bool"
        }
        #expect(table.contains("| \(key.tag) | `\(key.name)` | \(typeName) |"), "row for \(key.name)")
        #expect(AttributeKey(tag: key.tag) == key)
    }
    #expect(AttributeKey.standard.map(\.tag) == Array(1...UInt8(AttributeKey.standard.count)))
    #expect(AttributeKey(tag: 0) == nil)
    #expect(AttributeKey(tag: UInt8(AttributeKey.standard.count + 1)) == nil)
}

@Test func documentListsEveryEventKindAndValueType() throws {
    let document = try formatDocument()
    let table = rows(of: document)
    for kind in EventKind.allCases {
        #expect(table.contains { $0.hasPrefix("| \(kind.rawValue) | `\(kind.name)` |") }, "row for \(kind.name)")
    }
    let types: [(AttributeType, String)] = [(.string, "string"), (.strings, "strings"), (.number, "number"),
                                            (.date, "date"), (.bool, "bool")]
    for (type, name) in types {
        #expect(table.contains { $0.hasPrefix("| \(type.rawValue) | \(name) |") }, "row for \(name)")
    }
    #expect(document.contains("| event encoding | \(JournalEvent.formatVersion) |"))
}

@Test func documentWorkedExampleIsTheEncoderOutput() throws {
    let document = try formatDocument()
    let lines = document.split(separator: "\n", omittingEmptySubsequences: false)
    guard let marker = lines.firstIndex(of: "<!-- worked-example -->"), marker + 1 < lines.count else {
        Issue.record("FORMAT.md has no worked-example marker")
        return
    }
    let hex = lines[marker + 1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
    var item = SearchableItem(uniqueIdentifier: "1", domainIdentifier: "album-1")
    item.attributes.title = "Maui"
    item.attributes.rankingHint = 0.5
    let bytes = EventCodec.encode(.itemIndexed(index: "photos", item: item))
    #expect(hex == bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined())
    #expect(document.contains("encodes to \(bytes.count) bytes"))
}

@Test func documentLeavesTheStoreSectionsInPlace() throws {
    let document = try formatDocument()
    for heading in ["## Format versions", "## Device store (SQLite schema)", "## Journal hash chain",
                    "## Golden fixtures (`Journal/fixtures/`)"] {
        #expect(document.contains("\n" + heading + "\n"), "heading \(heading)")
    }
}
