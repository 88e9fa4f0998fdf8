import IndexModel

/// The result of checking a journal row by row.
public struct JournalVerification: Sendable {
    /// Rows that passed every check, from seq 1.
    public var verifiedRows: Int = 0
    /// The last verified row's seq and hash.
    public var head: Seq = .none
    public var headHash: ChainHash = .genesis
    /// The first problem found, nil when the whole journal verifies.
    public var firstProblem: DeviceStoreError?

    public var isValid: Bool { firstProblem == nil }
}

extension DeviceStore {
    /// Checks every row in seq order: seqs dense from 1, epochs never decreasing,
    /// each row's previous hash equal to its predecessor's hash, each hash equal to
    /// the SHA-256 recomputed from the row, and each payload decoding to an event of
    /// the row's kind. Stops at the first bad row and names its seq.
    public func verifyJournal() throws(DeviceStoreError) -> JournalVerification {
        try verifyJournal { _, _ in }
    }

    /// `verifyJournal()`, handing every row that passed, with its decoded
    /// event, to `verified` in seq order (a restore replays them meanwhile).
    /// The event is handed over, not copied: copying one retains each of
    /// its strings again.
    func verifyJournal(_ verified: (JournalRecord, consuming JournalEvent) -> Void) throws(DeviceStoreError) -> JournalVerification {
        var result = JournalVerification()
        var previousEpoch = Epoch.beforeFirst
        var purges = PurgedRows()
        let scan = try scanJournal { record in
            let expected = result.head.next
            guard record.seq == expected else {
                result.firstProblem = DeviceStoreError(.corruptJournal,
                    "seq \(expected) is missing: the row after seq \(result.head) has seq \(record.seq)", seq: expected)
                return false
            }
            guard record.epoch >= previousEpoch else {
                result.firstProblem = DeviceStoreError(.corruptJournal,
                    "seq \(record.seq): epoch \(record.epoch) is lower than the previous row's \(previousEpoch)", seq: record.seq)
                return false
            }
            guard record.previousHash == result.headHash else {
                result.firstProblem = DeviceStoreError(.corruptJournal,
                    "seq \(record.seq): previous hash does not match the hash of seq \(result.head) (chain broken)", seq: record.seq)
                return false
            }
            guard record.recomputedHash(journalChain) == record.hash else {
                result.firstProblem = DeviceStoreError(.corruptJournal,
                    "seq \(record.seq): stored hash does not match the row's content (row altered)", seq: record.seq)
                return false
            }
            let event: JournalEvent
            do throws(DeviceStoreError) {
                event = try record.event()
            } catch {
                result.firstProblem = error
                return false
            }
            if let problem = purges.problem(record, event) {
                result.firstProblem = DeviceStoreError(.corruptJournal, "seq \(record.seq): \(problem)", seq: record.seq)
                return false
            }
            if previousEpoch > .beforeFirst, record.epoch != previousEpoch,
               let problem = Self.epochChangeProblem(event, from: previousEpoch, to: record.epoch) {
                result.firstProblem = DeviceStoreError(.corruptJournal, "seq \(record.seq): \(problem)", seq: record.seq)
                return false
            }
            previousEpoch = record.epoch
            result.verifiedRows += 1
            result.head = record.seq
            result.headHash = record.hash
            verified(record, consume event)
            return true
        }
        if result.firstProblem == nil, let stop = scan.stop {
            result.firstProblem = stop
        }
        if result.firstProblem == nil, let (seq, key) = purges.withoutDeletion {
            result.firstProblem = DeviceStoreError(.corruptJournal, """
                seq \(seq): its payload was purged, but no later deletion of \(key) follows it (a purge only takes the content of what was deleted)
                """, seq: seq)
        }
        return result
    }

    /// Why the row that begins epoch `to` after rows of epoch `from` cannot
    /// begin it, or nil when it can: only a restore (from a snapshot of epoch
    /// `from`, or of a later one when it was truncated with `--to-seq`) or an
    /// advance from exactly `from` to exactly `to` opens an epoch.
    static func epochChangeProblem(_ event: JournalEvent, from: Epoch, to: Epoch) -> String? {
        switch event {
        case .storeRestored(let restore) where restore.previousEpoch >= from && restore.previousEpoch < to:
            return nil
        case .epochAdvanced(let advancedFrom, let advancedTo, _) where advancedFrom == from && advancedTo == to:
            return nil
        default:
            return "epoch \(to) begins after epoch \(from) with a \(event.kind) event, not with the restore or advance that opens it"
        }
    }
}

/// What verification checks of purged rows (`Journal/FORMAT.md`, "Purged
/// rows"): only an item's indexing or update, or an activity's recording,
/// removal or engagement, is purged; its payload is exactly the residue; and
/// a removal of the item or activity follows each purged recording.
private struct PurgedRows {
    /// Items with a purged row and no deletion since: the first such row's seq.
    private var awaitingDeletion: [ItemKey: Seq] = [:]
    /// Activities (by their key's pseudonym) with a purged recording and no removal since.
    private var awaitingRemoval: [String: Seq] = [:]

    mutating func problem(_ record: JournalRecord, _ event: JournalEvent) -> String? {
        switch event {
        case .activityPurged(let residue):
            guard record.isPurged else { return "an activityPurged event is what a purge leaves, and the row is not marked purged" }
            if awaitingRemoval[residue.key] == nil { awaitingRemoval[residue.key] = record.seq }
            return nil
        case .activityDeleted(let key, _), .activityExpired(let key):
            if !awaitingRemoval.isEmpty { awaitingRemoval[key] = nil }
            return record.isPurged ? pseudonymProblem(key, event) : nil
        case .resultShown(let ref), .resultEngaged(let ref):
            return record.isPurged ? pseudonymProblem(ref, event) : nil
        default:
            break
        }
        guard record.isPurged else {
            if !awaitingDeletion.isEmpty, event.removesItem, let key = event.itemKey {
                awaitingDeletion[key] = nil
            }
            return nil
        }
        guard let residue = event.purgedResidue, let key = event.itemKey else {
            return "a \(event.kind.name) row is marked purged, and only an item's indexing or update or an activity's events are ever purged"
        }
        guard residue == event else {
            return "the row is marked purged, but its payload holds more than the residue a purge leaves"
        }
        if awaitingDeletion[key] == nil { awaitingDeletion[key] = record.seq }
        return nil
    }

    private func pseudonymProblem(_ name: String, _ event: JournalEvent) -> String? {
        PurgedActivity.isPseudonym(name) ? nil
            : "the row is marked purged, but its \(event.kind.name) names its subject in the clear, not by a pseudonym"
    }

    /// The first purged row whose item or activity no later row removes, and what it was of.
    var withoutDeletion: (Seq, String)? {
        let item = awaitingDeletion.min { $0.value < $1.value }.map { ($0.value, $0.key.description) }
        let activity = awaitingRemoval.min { $0.value < $1.value }.map { ($0.value, "activity \($0.key)") }
        return [item, activity].compactMap { $0 }.min { $0.0 < $1.0 }
    }
}
