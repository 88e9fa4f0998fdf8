import Foundation
import IndexModel
import Testing

/// Device stores made with `device apply`, each with a twin: a copy of the
/// store made before its first sync, given the same operations afterwards
/// and synced to another cloud. Two clouds fed the twins must end with the
/// same counts and public index, however each was fed.
///
/// The calls vary by device and round (`operations(device:round:)`), over
/// five public recipes and K = 3, so that some hashes reach K at once, one
/// reaches it only in a later round, one falls below K and comes back, and
/// one never reaches it.
struct DeviceFleet {
    static let app = "com.example.app"
    static let threshold = 3
    /// Rounds with new calls; `operations` makes none after them.
    static let rounds = 3

    let directory: URL
    let count: Int
    let secret: URL

    init(in directory: URL, count: Int) throws {
        self.directory = directory
        self.count = count
        secret = directory.appendingPathComponent("enrolment-secret")
        try Data("a-secret-the-postgres-test-enrols-with\n".utf8).write(to: secret)
    }

    var devices: Range<Int> { 0..<count }

    /// The store synced to the cloud under test.
    func store(_ device: Int) -> String { directory.appendingPathComponent("device\(device).sqlite").path }
    /// Its twin, synced to the reference cloud.
    func twin(_ device: Int) -> String { directory.appendingPathComponent("twin\(device).sqlite").path }

    struct Recipe {
        let url: String
        let title: String
        let keywords: [String]
    }

    static let recipes = [
        Recipe(url: "https://www.yummly.com/recipe/BPC-983195", title: "Baked Potato Chips", keywords: ["potato", "snack"]),
        Recipe(url: "https://www.yummly.com/recipe/RC-1", title: "Roasted Carrots", keywords: ["carrot"]),
        Recipe(url: "https://www.yummly.com/recipe/LS-7", title: "Lemon Sorbet", keywords: ["lemon", "dessert"]),
        Recipe(url: "https://www.yummly.com/recipe/MS-3", title: "Mushroom Soup", keywords: ["mushroom", "soup"]),
        Recipe(url: "https://www.yummly.com/recipe/PP-9", title: "Pea Pesto", keywords: ["pea", "pasta"]),
    ]

    /// In which round (1...) each device starts to hold each recipe, and in
    /// which it deletes it again (a withdrawal). Recipe 0 gets every vote,
    /// 1 four, 2 three, then two (device 2 withdraws) and three again
    /// (device 5 joins), 3 two (never public), 4 two then three.
    static func holding(device: Int, recipe: Int) -> (from: Int, until: Int?)? {
        switch (recipe, device) {
        case (0, _): (1, nil)
        case (1, 0...3): (1, nil)
        case (2, 0), (2, 4): (1, nil)
        case (2, 2): (1, 2)
        case (2, 5): (3, nil)
        case (3, 1), (3, 5): (1, nil)
        case (4, 3), (4, 4): (1, nil)
        case (4, 1): (2, nil)
        default: nil
        }
    }

    /// The calls device `device` makes in `round`: its new public
    /// activities, its deletions, a private note, and shown and engaged
    /// counts that differ by device, recipe and round.
    static func operations(device: Int, round: Int) -> [String] {
        var lines = [#"{"op":"index","index":"notes","items":[{"id":"n\#(round)","title":"note \#(device) of round \#(round)"}]}"#]
        for (index, recipe) in recipes.enumerated() {
            guard let held = holding(device: device, recipe: index), held.from <= round else { continue }
            if held.from == round {
                let keywords = recipe.keywords.map { "\"\($0)\"" }.joined(separator: ",")
                lines.append(#"{"op":"activity","id":"r\#(index)","type":"com.yummly/browseRecipe","title":"\#(recipe.title)","keywords":[\#(keywords)],"url":"\#(recipe.url)","searchable":true,"public":true}"#)
            }
            if let until = held.until, until <= round {
                if until == round { lines.append(#"{"op":"deleteActivities","ids":["r\#(index)"]}"#) }
                continue
            }
            for _ in 0..<((device + 2 * index + round) % 3) { lines.append(#"{"op":"shown","ref":"\#(recipe.url)"}"#) }
            for _ in 0..<((device * index + round) % 2 + (index == 0 ? 1 : 0)) {
                lines.append(#"{"op":"engage","ref":"\#(recipe.url)"}"#)
            }
        }
        return lines
    }

    /// Applies round `round`'s calls to every store, and to every twin; the
    /// twins are made as copies of the stores in round 1, before any sync.
    func apply(round: Int) throws {
        for device in devices {
            let file = directory.appendingPathComponent("ops-\(device)-\(round).jsonl")
            try write(DeviceFleet.operations(device: device, round: round), to: file)
            let targets = round == 1 ? [store(device)] : [store(device), twin(device)]
            let children = try targets.map { try Child(["device", "apply", "--db", $0, "--app", DeviceFleet.app, file.path], in: directory) }
            for child in children {
                let result = child.wait()
                #expect(result.status == 0, "device apply: \(result.stderr)")
            }
            if round == 1 { try DeviceFleet.copyStore(store(device), to: twin(device)) }
        }
    }

    /// Copies a SQLite store with whatever write-ahead log it has, replacing `to`.
    static func copyStore(_ from: String, to: String) throws {
        for suffix in ["", "-wal", "-shm"] {
            try? FileManager.default.removeItem(atPath: to + suffix)
            if FileManager.default.fileExists(atPath: from + suffix) {
                try FileManager.default.copyItem(atPath: from + suffix, toPath: to + suffix)
            }
        }
    }

    /// Syncs `stores` at once, store i to `clouds[i]`; returns each `sync --json`.
    func sync(_ stores: [String], to clouds: [String], extra: [String] = []) throws -> [JSONValue] {
        let children = try zip(stores, clouds).map { store, cloud in
            try Child(["sync", "--db", store, "--cloud", cloud, "--enrolment-secret-file", secret.path, "--json"] + extra,
                      in: directory)
        }
        return try children.map { child in
            let result = child.wait()
            #expect(result.status == 0, "sync \(child.arguments[2]): \(result.stderr)")
            return try JSONReader.parse(result.stdout)
        }
    }

    /// Syncs every twin to `cloud` until nothing is left to send: once, and
    /// twice more so that every voter of a wanted hash is asked and answers.
    func syncTwins(to cloud: String) throws {
        for _ in 0..<3 {
            for report in try sync(devices.map(twin), to: Array(repeating: cloud, count: count)) {
                #expect(report["pending"]?.integer == 0 && report["failure"] == .null, "\(report)")
            }
        }
    }
}

/// What two clouds fed the same devices must agree on: the totals the
/// projections hold, and the public index with its counts. Log rows,
/// messages and projection digests are left out: frames are cut and
/// answered at other times on each, and receive times differ.
struct CloudComparison: Equatable, CustomStringConvertible {
    let totals: [String: JSONValue]
    let publicIndex: [JSONValue]

    init(db: String, environment: [String: String] = [:], in directory: URL,
         sourceLocation: SourceLocation = #_sourceLocation) throws {
        let stats = try Child.json(["cloud", "stats", "--db", db, "--json"], environment: environment, in: directory,
                                   sourceLocation: sourceLocation)
        var totals: [String: JSONValue] = [:]
        for key in ["apps", "devices", "hashes", "publicItems", "wanted", "threshold", "agreement"] { totals[key] = stats[key] }
        self.totals = totals
        let search = try Child.json(["cloud", "search", "--db", db, "--app", DeviceFleet.app, "--limit", "1000", "--json"],
                                    environment: environment, in: directory, sourceLocation: sourceLocation)
        publicIndex = (search["results"]?.array ?? []).sorted { "\($0["hash"] ?? .null)" < "\($1["hash"] ?? .null)" }
    }

    var description: String { "totals \(totals), public index \(publicIndex)" }

    /// The public index's titles and URLs, for messages.
    var titles: [String] {
        publicIndex.compactMap { if case .string(let title)? = $0["title"] { title } else { nil } }.sorted()
    }
}
