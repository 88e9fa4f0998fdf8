import Foundation
import IndexModel

/// A decoded journal event with its position and, when the call that wrote it
/// was a batch, that batch: what `journal grep` and `journal grep --explain` see.
public struct JournalEntry: Hashable, Sendable {
    public let device: DeviceID
    public let record: JournalRecord
    public let event: JournalEvent
    /// The batch whose call wrote this event, nil for calls that are not batches.
    public let batch: JournalBatch?
}

/// A batch call: its events share a call number and it ends with the client
/// state it committed for its index.
public struct JournalBatch: Hashable, Sendable {
    public let call: CallID
    public let index: String
    public let clientState: [UInt8]
}

/// The result of reading entries: how far the scan got and which rows did not
/// decode (they are skipped, and named so that the output says it is partial).
public struct JournalEntryScan: Sendable {
    public var scan: JournalScan
    public var undecodable: [Seq]
}

extension DeviceStore {
    /// Calls `body` with every decodable journal entry in seq order until the end,
    /// until `body` returns false, or until a row cannot be read. Entries are
    /// handed over a call at a time, so each knows the batch it belongs to.
    public func scanEntries(_ body: (JournalEntry) throws -> Bool) throws(DeviceStoreError) -> JournalEntryScan {
        var undecodable: [Seq] = []
        var pending: [(JournalRecord, JournalEvent)] = []
        var stopped = false
        let device = deviceID
        func flush() throws -> Bool {
            defer { pending.removeAll(keepingCapacity: true) }
            var batch: JournalBatch?
            if let (record, event) = pending.last, case .clientStateSet(let index, let state) = event {
                batch = JournalBatch(call: record.call, index: index, clientState: state)
            }
            for (record, event) in pending {
                guard try body(JournalEntry(device: device, record: record, event: event, batch: batch)) else {
                    stopped = true
                    return false
                }
            }
            return true
        }
        let scan = try scanJournal { record in
            if let first = pending.first?.0, first.call != record.call, try !flush() { return false }
            guard let event = try? record.event() else {
                undecodable.append(record.seq)
                return true
            }
            pending.append((record, event))
            return true
        }
        if !stopped {
            do {
                _ = try flush()
            } catch let error as DeviceStoreError {
                throw error
            } catch {
                throw DeviceStoreError(.database, DeviceStore.describe(error))
            }
        }
        return JournalEntryScan(scan: scan, undecodable: undecodable)
    }
}
