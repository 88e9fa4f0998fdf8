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
