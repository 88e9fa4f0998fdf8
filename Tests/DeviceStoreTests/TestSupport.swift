import DeviceStore
import Foundation
import IndexModel
import ScratchDirectory

let testStart = ISO8601.parse("2026-11-22T00:00:00Z")!

/// An in-memory store on a manual clock with a seeded random source.
func makeStore(seed: UInt64 = 1, clock: ManualClock = ManualClock(testStart)) throws -> DeviceStore {
    try DeviceStore(at: .memory, options: StoreOptions(clock: clock, random: SeededRandom(seed: seed)))
}

func item(_ identifier: String, domain: String? = nil, title: String? = nil, description: String? = nil,
          keywords: [String]? = nil, url: String? = nil, expires: Timestamp? = nil) -> SearchableItem {
    var attributes = AttributeSet()
    attributes.title = title
    attributes.contentDescription = description
    attributes.keywords = keywords
    attributes.contentURL = url
    return SearchableItem(uniqueIdentifier: identifier, domainIdentifier: domain, attributes: attributes,
                          expirationDate: expires)
}

/// A fresh directory under the system's temporary directory, removed when the tests end.
func temporaryDirectory() throws -> URL {
    try ScratchDirectory.make("sightline-tests")
}

extension DeviceStore {
    func identifiers(in index: String) throws -> [String] {
        try items(in: index).map(\.uniqueIdentifier)
    }

    func resultTitles(_ text: String) throws -> [String?] {
        try search(text).map(\.title)
    }
}
