import Foundation
import IndexModel
import SyncWire

/// What the fold knows of each (device, public hash) it met: the hash's key,
/// the device's pseudonym, and the device's vote row as the store holds it.
/// A replay keeps one across all the log's frames, so a vote row is read at
/// most once and its signal allowance written once, at the end. Ingest keeps
/// one across frames (`CloudIndex.IngestMemory`), so a popular hash's row is
/// not read again with every frame of every device.
///
/// Everything the fold writes to a vote row it writes here too, so the memory
/// never differs from the rows of the transaction it is used in. Whoever
/// keeps one past a transaction must forget it when the transaction rolls
/// back or anything else writes the votes (`IngestMemory` does).
package final class FoldMemory {

    package struct Vote: Hashable, Sendable {
        package var token: [UInt8]
        package var live: Bool
        package var allowance: PopularityRule.Allowance

        package init(token: [UInt8], live: Bool, allowance: PopularityRule.Allowance) {
            self.token = token
            self.live = live
            self.allowance = allowance
        }
    }

    /// A class, so that the fold changes it where the memory holds it.
    package final class Entry {
        package let app: AppID
        package let key: Data
        package let voter: [UInt8]
        /// The vote row, once read or written: nil when the device never voted.
        package var vote: Vote?
        /// Whether `vote` says what the store holds (else it was not read yet).
        package var isLoaded = false
        /// Whether the store holds `vote.allowance` (else `flush` writes it).
        package var isAllowanceWritten = true

        package init(app: AppID, key: Data, voter: [UInt8]) {
            self.app = app
            self.key = key
            self.voter = voter
        }
    }

    /// By device, then by hash.
    package var devices: [DeviceStream: [PublicHash: Entry]] = [:]
    /// How many entries are held.
    package var count = 0
    /// The entries whose allowance `flush` must write.
    package var unwritten: [Entry] = []
    /// What each device's acks ask for (`AskMemory`). A backend that can
    /// tell that none but its own transactions changed the projections since
    /// it last used one hands it over here (`PostgresCloud`'s kept requests).
    package var asks = AskMemory()

    /// The most entries held after a flush (about 250 bytes each): past it,
    /// the memory forgets everything and reads rows again as it meets them.
    package let limit: Int

    package init(limit: Int) {
        self.limit = limit
    }

    package func forget() {
        devices.removeAll(keepingCapacity: true)
        unwritten.removeAll(keepingCapacity: true)
        count = 0
        asks.forget()
    }
}

extension PopularityRule.Allowance {
    /// Nothing used yet (a new vote row's allowance).
    package static let none = PopularityRule.Allowance(day: 0, used: Popularity())
}
