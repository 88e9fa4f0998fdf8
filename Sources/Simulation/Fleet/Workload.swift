import IndexModel

/// A simulated app and its user on one device: each step is one API call,
/// drawn with fixed weights from what the device holds now. Private strings
/// carry the canary marker; public activities come from the shared catalogue.
struct Workload {
    let device: Int
    private var random: SimRandom
    private var nextNote = 0
    private var nextPrivateActivity = 0

    init(device: Int, random: SimRandom) {
        self.device = device
        self.random = random
    }

    /// One call. Index operations go through `truth`, which wraps them in a
    /// batch with the app's client state.
    mutating func next(now: Timestamp, model: StoreModel, truth: inout AppTruth, catalogue: Catalogue) -> AppOperation {
        let roll = random.below(1000)
        let notes = truth.items["notes"].map { $0.keys.sorted() } ?? []
        switch roll {
        case 0..<170:
            return truth.record(.index(index: "notes", items: [newNote(now: now)]))
        case 170..<230:
            let entry = catalogue.popularity.rank(at: random.unit())
            let item = SearchableItem(uniqueIdentifier: "c-\(entry)", domainIdentifier: "catalogue",
                                      attributes: AttributeSet([.title: .string(catalogue.entries[entry].title)]))
            return truth.record(.index(index: "catalogue", items: [item]))
        case 230..<290 where !notes.isEmpty:
            let identifier = notes[random.below(notes.count)]
            let update = ItemUpdate(uniqueIdentifier: identifier, attributes: AttributeChanges([
                .title: .string("Note \(identifier) edited \(random.below(100)) \(Catalogue.canary)-\(device)"),
            ]))
            return truth.record(.update(index: "notes", updates: [update]))
        case 290..<330 where !notes.isEmpty:
            return truth.record(.delete(index: "notes", identifiers: [notes[random.below(notes.count)]]))
        case 330..<345:
            return truth.record(.deleteDomains(index: "notes", domains: ["notes.f\(random.below(4))"]))
        case 345..<349:
            return truth.record(.deleteAll(index: random.chance(0.5) ? "notes" : "catalogue"))
        case 349..<560:
            let entry = catalogue.popularity.rank(at: random.unit())
            let related = !notes.isEmpty && random.chance(0.2) ? notes[random.below(notes.count)] : nil
            let expires = random.chance(0.15) ? now.adding(milliseconds: random.between(60_000, 1_800_000)) : nil
            return .activity(catalogue.activity(entry, related: related, expires: expires))
        case 560..<640:
            nextPrivateActivity += 1
            let number = nextPrivateActivity
            return .activity(UserActivity(
                activityType: "com.sightline.sim.private",
                title: "Private \(number) \(Catalogue.canary)-\(device)",
                userInfo: ["secret": "\(Catalogue.canary)-\(device)-\(number)"],
                webpageURL: "app://private/\(device)/\(number)",
                eligibleForSearch: true, eligibleForPublicIndexing: false,
                domainIdentifier: "private", persistentIdentifier: "private-\(number)"))
        case 640..<800:
            return .engage(ref: catalogue.entry(seen(model, catalogue)).url)
        case 800..<910:
            return .shown(ref: catalogue.entry(seen(model, catalogue)).url)
        case 910..<940 where !notes.isEmpty:
            // A note is also a reference: engaging it engages the public
            // activities strongly related to it.
            let ref = notes[random.below(notes.count)]
            return random.chance(0.5) ? .engage(ref: ref) : .shown(ref: ref)
        case 940..<965:
            return .deleteActivities(identifiers: ["pub-\(catalogue.popularity.rank(at: random.unit()))"])
        case 965..<970:
            return .deleteActivityDomains(domains: ["catalogue.g\(random.below(4))"])
        case 970..<972:
            return .deleteAllActivities
        default:
            return truth.record(.index(index: "notes", items: [newNote(now: now)]))
        }
    }

    /// An entry the user is likely to see in results: mostly one of the
    /// device's own public activities, sometimes any (which engages nothing
    /// when the device has no activity for it).
    private mutating func seen(_ model: StoreModel, _ catalogue: Catalogue) -> Int {
        let own = model.publicEntries
        if !own.isEmpty && random.chance(0.8) { return own[random.below(own.count)] }
        return catalogue.popularity.rank(at: random.unit())
    }

    private mutating func newNote(now: Timestamp) -> SearchableItem {
        // Mostly new notes, sometimes a note indexed again (an upsert).
        let identifier: String
        if nextNote > 0 && random.chance(0.2) {
            identifier = "n-\(random.below(nextNote))"
        } else {
            identifier = "n-\(nextNote)"
            nextNote += 1
        }
        let folder = random.below(4)
        let domain = random.chance(0.3) ? "notes.f\(folder).sub" : "notes.f\(folder)"
        let expires = random.chance(0.1) ? now.adding(milliseconds: random.between(30_000, 1_200_000)) : nil
        return SearchableItem(uniqueIdentifier: identifier, domainIdentifier: domain, attributes: AttributeSet([
            .title: .string("Note \(identifier) \(Catalogue.canary)-\(device)"),
            .contentDescription: .string("private text of device \(device) \(Catalogue.canary)"),
            .keywords: .strings(["note", "f\(folder)"]),
        ]), expirationDate: expires)
    }
}
