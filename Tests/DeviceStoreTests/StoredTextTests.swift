import DeviceStore
import Foundation
import GRDB
import IndexModel
import IndexQuery
import Testing
import TextTestSupport

/// The device store keeps text exactly: what a call is refused for (a NUL
/// anywhere, a control character in an identifier) changes nothing, and
/// everything it takes reads back byte for byte, through its API and from
/// every TEXT column of every table.
@Suite struct StoredTextTests {
    /// Items `a\0x`, `a\0y` and `a` are three identifiers to an app: a store
    /// that took them would read all three back as `a`. The call is refused
    /// naming the field, and nothing of it is applied.
    @Test func aCallWithANulOrAControlCharacterIsRefusedNamingTheFieldAndChangesNothing() throws {
        let store = try makeStore()
        let refused = storeError {
            _ = try store.perform(.index(index: "a", items: [item("a\u{0}x"), item("a\u{0}y"), item("a")]))
        }
        #expect(refused?.code == .invalidOperation)
        #expect(refused?.operationError?.path == "items[0].id", "\(String(describing: refused))")
        #expect(try store.identifiers(in: "a").isEmpty)
        #expect(try store.journalCount() == 0)
        for (field, operation) in [("title", AppOperation.activity(UserActivity(activityType: "t", title: "Zero\u{0}Day"))),
                                   ("type", .activity(UserActivity(activityType: "t\tu"))),
                                   ("ref", .engage(ref: "a\u{85}b"))] {
            let error = storeError { _ = try store.perform(operation) }
            #expect(error?.operationError?.path == field, "\(String(describing: error))")
        }
        #expect(try store.journalCount() == 0)
    }

    /// Every hostile string a rule admits, in every text field of items and
    /// activities, comes back exactly; and no TEXT column of any table reads
    /// back other than its bytes.
    @Test func everyAdmittedStringReadsBackExactlyFromTheAPIAndFromEveryTextColumn() throws {
        let path = try temporaryDirectory().appendingPathComponent("device.sqlite").path
        let store = try DeviceStore(at: .file(path), options: StoreOptions(clock: ManualClock(testStart), random: SeededRandom(seed: 3)))
        var items: [SearchableItem] = []
        for (position, name) in HostileText.legalNames.enumerated() {
            for (index, text) in HostileText.legalTexts.enumerated() {
                var attributes = AttributeSet()
                attributes.title = text
                attributes.displayName = text
                attributes.contentDescription = text
                attributes.keywords = [text, name]
                attributes.contentURL = text
                attributes[.custom("x" + name)] = .string(text)
                items.append(SearchableItem(uniqueIdentifier: "\(position).\(index)." + name, domainIdentifier: name, attributes: attributes))
            }
            var activity = UserActivity(activityType: name)
            activity.title = HostileText.legalTexts[position % HostileText.legalTexts.count]
            activity.keywords = HostileText.legalTexts
            activity.webpageURL = "https://example.com/" + name
            activity.userInfo = [name: HostileText.legalTexts[0]]
            activity.relatedUniqueIdentifier = name
            activity.weakRelatedUniqueIdentifier = name
            activity.domainIdentifier = name
            activity.persistentIdentifier = "\(position)" + name
            activity.eligibleForSearch = true
            activity.eligibleForPublicIndexing = true
            _ = try store.perform(.activity(activity))
            _ = try store.perform(.engage(ref: activity.webpageURL!))
            _ = try store.perform(.shown(ref: name))
        }
        for name in HostileText.legalNames {
            _ = try store.perform(.index(index: name, items: items))
            #expect(try store.items(in: name).sorted { $0.uniqueIdentifier < $1.uniqueIdentifier }
                    == items.sorted { $0.uniqueIdentifier < $1.uniqueIdentifier })
        }
        #expect(Set(try store.activities().map(\.activity.activityType)) == Set(HostileText.legalNames))
        // Search and query see the same text the calls gave.
        let literal = TextLiteral(pieces: [.literal(HostileText.legalTexts[0])], quote: .single, modifiers: [])
        #expect(try store.query(.comparison(Comparison(.named("title"), .equal, .text(literal))), index: HostileText.legalNames[0]).count == 4)

        let columns = try StoredText.textColumns(path)
        #expect(columns.contains("items.item_id") && columns.contains("activities.title"), "\(columns)")
        #expect(try StoredText.cutValues(path, columns).isEmpty)
    }

}

extension DeviceStore {
    func journalCount() throws -> Int {
        var count = 0
        _ = try scanJournal { _ in
            count += 1
            return true
        }
        return count
    }
}
