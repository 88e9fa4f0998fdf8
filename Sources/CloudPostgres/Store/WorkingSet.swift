import CloudCore
import CloudSQLite
import Foundation
import IndexModel
import SyncWire

/// The fold's rows of one app, held in memory (`FoldRows`): loaded for a
/// frame before it is folded, changed by the fold, and written back in one
/// statement (`PostgresIngestTransaction`); or, for a replay, made from
/// nothing and written in bulk. Every call does what the SQLite backend's
/// statement for it does to its row, so both backends fold to the same rows.
///
/// A working set answers only for the rows it was given: in ingest, every
/// row of the hashes the frame names (its hashes' rows, the device's votes
/// for them, their offers); in a replay, every row, since it starts from
/// empty projections (`isComplete`).
final class WorkingSet: FoldRows {
    struct HashRow: Equatable {
        var hash: [UInt8]?
        var liveVotes: Int64
        var voters: Int64
        var views: Int64
        var shown: Int64
        var engaged: Int64
        var wantedSeq: Int64?
        var hasContent: Bool
    }

    struct VoteKey: Hashable {
        let key: Data
        let voter: Data
    }

    struct VoteRow: Equatable {
        var token: [UInt8]
        var live: Bool
        var day: Int64
        var used: Popularity
    }

    struct ContentRow: Equatable {
        var content: PublicContent
        var logSeq: Int64
    }

    let app: AppID
    /// Rows not held are absent from the store (a replay from nothing).
    let isComplete: Bool
    private(set) var hashes: [Data: HashRow] = [:]
    private(set) var votes: [VoteKey: VoteRow] = [:]
    /// The offers of each hash, by pseudonym.
    private(set) var offers: [Data: [Data: Data]] = [:]
    /// Public content as the fold left it, for the hashes it changed.
    private(set) var contents: [Data: ContentRow?] = [:]
    /// The app's last wanted seq.
    private(set) var wantedSeq: Int64
    private(set) var epochs: [DeviceID: [Epoch: OutboxSeq]] = [:]
    /// The pages the fold recorded, by URL, and the log row of each: in a
    /// replay every page, in ingest those of the frame.
    private(set) var pages: [String: (page: CrawledPage, logSeq: Int64)] = [:]
    /// Whether the store has a page at a URL the fold did not record
    /// (ingest's transaction reads it; a replay has no other pages).
    var storedPage: ((String) throws -> Bool)?
    /// The frame's additions to the app's sketch by cell (in a replay, the
    /// whole sketch).
    private(set) var sketch: [Int64: SketchCell] = [:]
    /// Report allowances the fold read or wrote, by device; nil: read and absent.
    private(set) var allowances: [DeviceID: ReportRule.Allowance?] = [:]
    private(set) var changedAllowances: Set<DeviceID> = []
    /// Reads a device's report allowance from the store (ingest only).
    var storedAllowance: ((DeviceID) throws -> ReportRule.Allowance?)?

    /// What the fold changed since the rows were loaded.
    private(set) var changedHashes: Set<Data> = []
    private(set) var changedVotes: Set<VoteKey> = []
    private(set) var changedOffers: Set<Data> = []
    private(set) var wantedSeqChanged = false
    /// The offers of each changed hash as they were loaded.
    private(set) var loadedOffers: [Data: [Data: Data]] = [:]
    /// The keys whose rows (and the voters whose votes) were loaded.
    private var loadedKeys: Set<Data> = []
    private var loadedVotes: Set<VoteKey> = []

    init(app: AppID, wantedSeq: Int64, isComplete: Bool) {
        self.app = app
        self.wantedSeq = wantedSeq
        self.isComplete = isComplete
    }

    /// Declares what was loaded for `keys` and the `voters` pairs: rows not
    /// given are absent. Into an empty working set (every ingest
    /// transaction's) the sets and rows are taken as they are, without
    /// hashing each key again.
    func loaded(keys: Set<Data>, votes voters: Set<VoteKey>, hashes loadedHashes: [Data: HashRow],
                votes loadedVotes: [VoteKey: VoteRow], offers loadedOffers: [Data: [Data: Data]]) {
        func union<Element>(_ held: inout Set<Element>, _ new: Set<Element>) {
            if held.isEmpty { held = new } else { held.formUnion(new) }
        }
        func merge<Key, Value>(_ held: inout [Key: Value], _ new: [Key: Value]) {
            if held.isEmpty { held = new } else { held.merge(new) { _, new in new } }
        }
        union(&loadedKeys, keys)
        union(&self.loadedVotes, voters)
        merge(&hashes, loadedHashes)
        merge(&votes, loadedVotes)
        merge(&offers, loadedOffers)
    }

    /// Whether the rows of `key` (the hash's, and its offers) are held.
    func holds(_ key: Data) -> Bool { isComplete || loadedKeys.contains(key) }

    /// Whether the vote row of `vote` is held.
    func holds(_ vote: VoteKey) -> Bool { isComplete || loadedVotes.contains(vote) }

    /// How many rows are held, for a bound on what a server keeps.
    var heldRows: Int { loadedKeys.count + loadedVotes.count }

    /// Starts another frame's fold on the rows held, which the last frame's
    /// write made the store's: nothing is changed yet, and the app's wanted
    /// seq is `wantedSeq`, as read under the app's lock.
    func beginFrame(wantedSeq: Int64) {
        self.wantedSeq = wantedSeq
        contents.removeAll(keepingCapacity: true)
        epochs.removeAll(keepingCapacity: true)
        pages.removeAll(keepingCapacity: true)
        sketch.removeAll(keepingCapacity: true)
        allowances.removeAll(keepingCapacity: true)
        changedAllowances.removeAll(keepingCapacity: true)
        changedHashes.removeAll(keepingCapacity: true)
        changedVotes.removeAll(keepingCapacity: true)
        changedOffers.removeAll(keepingCapacity: true)
        loadedOffers.removeAll(keepingCapacity: true)
        wantedSeqChanged = false
    }

    private func checkHeld(_ key: Data) throws {
        guard isComplete || loadedKeys.contains(key) else {
            throw CloudError(.database, "the fold asked for a hash of app \(app) that was not loaded for the frame")
        }
    }

    private func checkHeld(_ vote: VoteKey) throws {
        guard isComplete || loadedVotes.contains(vote) else {
            throw CloudError(.database, "the fold asked for a vote of app \(app) that was not loaded for the frame")
        }
    }

    /// Changes the row of `key` in `rows` in place, if there is one, and
    /// notes the key in `changed`; a key without a row must pass `check`.
    /// Every row held was loaded or made from a loaded key, so a row found
    /// needs no other check: one lookup where a check, a read and a write
    /// would take three.
    private static func change<Key: Hashable, Row>(_ key: Key, in rows: inout [Key: Row], noting changed: inout Set<Key>,
                                                   check: (Key) throws -> Void, _ change: (inout Row) -> Void) throws {
        guard let index = rows.index(forKey: key) else {
            try check(key)
            return
        }
        change(&rows.values[index])
        changed.insert(key)
    }

    private func changeHash(_ key: Data, _ change: (inout HashRow) -> Void) throws {
        try WorkingSet.change(key, in: &hashes, noting: &changedHashes, check: checkHeld, change)
    }

    private func changeVote(_ vote: VoteKey, _ change: (inout VoteRow) -> Void) throws {
        try WorkingSet.change(vote, in: &votes, noting: &changedVotes, check: checkHeld, change)
    }

    private func changeOffers(_ key: Data, _ change: (inout [Data: Data]) -> Void) {
        if !changedOffers.contains(key) {
            loadedOffers[key] = offers[key] ?? [:]
            changedOffers.insert(key)
        }
        var held = offers[key] ?? [:]
        change(&held)
        offers[key] = held.isEmpty ? nil : held
    }

    // MARK: FoldRows

    func insertVote(app: AppID, key: Data, voter: [UInt8], token: [UInt8]) throws -> Bool {
        let vote = VoteKey(key: key, voter: Data(voter))
        try checkHeld(vote)
        guard votes[vote] == nil else { return false }
        votes[vote] = VoteRow(token: token, live: true, day: 0, used: Popularity())
        changedVotes.insert(vote)
        return true
    }

    func readVote(app: AppID, key: Data, voter: [UInt8]) throws -> FoldMemory.Vote? {
        let vote = VoteKey(key: key, voter: Data(voter))
        guard let row = votes[vote] else {
            try checkHeld(vote)
            return nil
        }
        return FoldMemory.Vote(token: row.token, live: row.live, allowance: PopularityRule.Allowance(day: row.day, used: row.used))
    }

    func setVote(live: Bool, app: AppID, key: Data, voter: [UInt8]) throws {
        try changeVote(VoteKey(key: key, voter: Data(voter))) { $0.live = live }
    }

    func writeAllowance(_ allowance: PopularityRule.Allowance, app: AppID, key: Data, voter: [UInt8]) throws {
        try changeVote(VoteKey(key: key, voter: Data(voter))) { row in
            row.day = allowance.day
            row.used = allowance.used
        }
    }

    func changeVotes(app: AppID, key: Data, live: Int64, voters: Int64) throws -> FoldHashState? {
        let row: HashRow
        if let index = hashes.index(forKey: key) {
            hashes.values[index].liveVotes += live
            hashes.values[index].voters += voters
            row = hashes.values[index]
        } else {
            try checkHeld(key)
            row = HashRow(hash: nil, liveVotes: live, voters: voters, views: 0, shown: 0, engaged: 0, wantedSeq: nil, hasContent: false)
            hashes[key] = row
        }
        changedHashes.insert(key)
        return FoldHashState(liveVotes: row.liveVotes, isWanted: row.wantedSeq != nil, hasContent: row.hasContent)
    }

    func hashState(app: AppID, key: Data) throws -> FoldHashState? {
        guard let row = hashes[key] else {
            try checkHeld(key)
            return nil
        }
        return FoldHashState(liveVotes: row.liveVotes, isWanted: row.wantedSeq != nil, hasContent: row.hasContent)
    }

    func addSignals(_ counted: Popularity, app: AppID, key: Data) throws {
        let views = Int64(clamping: counted.views), shown = Int64(clamping: counted.shown), engaged = Int64(clamping: counted.engaged)
        guard let index = hashes.index(forKey: key) else {
            try checkHeld(key)
            hashes[key] = HashRow(hash: nil, liveVotes: 0, voters: 0, views: views, shown: shown, engaged: engaged, wantedSeq: nil,
                                  hasContent: false)
            changedHashes.insert(key)
            return
        }
        let limit = Stored.maximumCount
        hashes.values[index].views = min(hashes.values[index].views.addingReportingOverflow(views).partialValue, limit)
        hashes.values[index].shown = min(hashes.values[index].shown.addingReportingOverflow(shown).partialValue, limit)
        hashes.values[index].engaged = min(hashes.values[index].engaged.addingReportingOverflow(engaged).partialValue, limit)
        changedHashes.insert(key)
    }

    func keepRawHash(_ hash: PublicHash, app: AppID, key: Data) throws {
        try changeHash(key) { $0.hash = hash.bytes }
    }

    func markWanted(app: AppID, key: Data) throws {
        try checkHeld(key)
        wantedSeq += 1
        wantedSeqChanged = true
        let next = wantedSeq
        try changeHash(key) { $0.wantedSeq = next }
    }

    func dropContent(app: AppID, key: Data) throws {
        try checkHeld(key)
        contents[key] = .some(nil)
    }

    func dropOffers(app: AppID, key: Data) throws {
        try checkHeld(key)
        changeOffers(key) { $0.removeAll() }
    }

    func dropOffer(app: AppID, key: Data, voter: [UInt8]) throws {
        try checkHeld(key)
        changeOffers(key) { $0[Data(voter)] = nil }
    }

    func clearPublicState(app: AppID, key: Data) throws {
        try changeHash(key) { row in
            row.hash = nil
            row.wantedSeq = nil
            row.hasContent = false
        }
    }

    func offer(_ digest: Data, app: AppID, key: Data, voter: [UInt8]) throws -> Int64 {
        try checkHeld(key)
        changeOffers(key) { $0[Data(voter)] = digest }
        return Int64(offers[key]?.values.filter { $0 == digest }.count ?? 0)
    }

    func publish(_ content: PublicContent, app: AppID, key: Data, logSeq: Int64) throws {
        try checkHeld(key)
        contents[key] = .some(ContentRow(content: content, logSeq: logSeq))
        try changeHash(key) { row in
            row.wantedSeq = nil
            row.hasContent = true
        }
        try dropOffers(app: app, key: key)
    }

    func recordPage(_ page: CrawledPage, app: AppID, logSeq: Int64) throws {
        pages[page.url] = (page, logSeq)
    }

    func hasPage(app: AppID, url: String) throws -> Bool {
        if pages[url] != nil { return true }
        guard !isComplete else { return false }
        guard let storedPage else {
            throw CloudError(.database, "the fold asked for a page of app \(app) that the frame's transaction cannot read")
        }
        return try storedPage(url)
    }

    /// In ingest the transaction loaded every wanted hash of the app, with
    /// its offers, for a frame that records pages (`PostgresIngestTransaction`).
    func dropOffersOfWanted(app: AppID) throws -> [PublicHash] {
        var dropped: [PublicHash] = []
        for key in offers.keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            guard let row = hashes[key], row.wantedSeq != nil, offers[key]?.isEmpty == false else { continue }
            changeOffers(key) { $0.removeAll() }
            if let bytes = row.hash, let hash = PublicHash(bytes) { dropped.append(hash) }
        }
        return dropped
    }

    func reportAllowance(app: AppID, device: DeviceID) throws -> ReportRule.Allowance? {
        if let known = allowances[device] { return known }
        guard !isComplete else { return nil }
        guard let storedAllowance else {
            throw CloudError(.database, "the fold asked for a report allowance of app \(app) that the frame's transaction cannot read")
        }
        let read = try storedAllowance(device)
        allowances[device] = .some(read)
        return read
    }

    func writeReportAllowance(_ allowance: ReportRule.Allowance, app: AppID, device: DeviceID) throws {
        allowances[device] = .some(allowance)
        changedAllowances.insert(device)
    }

    func addReports(_ cells: [Int64: SketchCell], app: AppID) throws {
        for (cell, counted) in cells {
            sketch[cell, default: SketchCell()].reports += counted.reports
            sketch[cell, default: SketchCell()].total += counted.total
        }
    }

    func recordEpoch(app: AppID, device: DeviceID, epoch: Epoch, lastSeq: OutboxSeq) throws {
        epochs[device, default: [:]][epoch] = lastSeq
    }
}
