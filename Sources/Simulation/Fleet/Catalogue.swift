import IndexModel
import SyncWire
import Workloads

/// The public activities every simulated user may come across (a shared web
/// catalogue), with Zipf popularity, plus one entry only the Sybil group knows.
struct Catalogue {
    struct Entry {
        let number: Int
        let url: String
        let title: String
        let keywords: [String]
        let content: PublicContent
        let hash: PublicHash
    }

    static let activityType = "com.sightline.sim.browse"
    /// Every private string a simulated app writes carries this marker; no
    /// frame may ever contain it.
    static let canary = "SIMCANARY"

    let app: AppID
    let entries: [Entry]
    let sybil: Entry
    private let entryByHash: [PublicHash: Int]
    private let entryByURL: [String: Int]
    let popularity: ZipfDistribution

    init(app: AppID, size: Int) {
        self.app = app
        let words = ["trail", "summit", "lake", "harbour", "market", "museum", "garden", "bridge", "canyon", "island",
                     "forest", "castle", "beach", "valley", "river", "glacier"]
        func entry(_ number: Int, name: String) -> Entry {
            let url = "https://sim.example/\(name)/\(number)"
            let title = "\(words[number % words.count].capitalized) \(name) \(number)"
            let keywords = [words[number % words.count], words[(number / words.count + 3) % words.count]]
            let content = PublicContent(activityType: Catalogue.activityType, title: title, keywords: keywords,
                                        contentDescription: nil, webpageURL: url)
            return Entry(number: number, url: url, title: title, keywords: keywords, content: content,
                         hash: PublicHash.of(app: app, content: content)!)
        }
        entries = (0..<size).map { entry($0, name: "place") }
        sybil = entry(size, name: "sybil")
        var byHash: [PublicHash: Int] = [:]
        var byURL: [String: Int] = [:]
        for entry in entries + [sybil] {
            byHash[entry.hash] = entry.number
            byURL[entry.url] = entry.number
        }
        entryByHash = byHash
        entryByURL = byURL
        popularity = ZipfDistribution(count: size, exponent: 1.2)
    }

    func entry(_ number: Int) -> Entry {
        number == sybil.number ? sybil : entries[number]
    }

    func number(of hash: PublicHash) -> Int? {
        entryByHash[hash]
    }

    /// The entry whose activity has `url`, if one has.
    func entry(url: String) -> Int? {
        entryByURL[url]
    }

    /// The activity a device records for entry `number`.
    func activity(_ number: Int, related: String?, expires: Timestamp?) -> UserActivity {
        let entry = entry(number)
        return UserActivity(activityType: Catalogue.activityType, title: entry.title, keywords: entry.keywords,
                            webpageURL: entry.url, expirationDate: expires, eligibleForSearch: true,
                            eligibleForPublicIndexing: true, relatedUniqueIdentifier: related,
                            domainIdentifier: "catalogue.g\(number % 4)", persistentIdentifier: "pub-\(number)")
    }
}
