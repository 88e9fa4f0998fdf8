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

    /// What one device's hashes are filed and voted under (`names(for:secrets:)`).
    package struct Names {
        private let stream: DeviceStream
        private let entries: [PublicHash: Entry]?
        private let secrets: CloudSecrets

        fileprivate init(stream: DeviceStream, entries: [PublicHash: Entry]?, secrets: CloudSecrets) {
            self.stream = stream
            self.entries = entries
            self.secrets = secrets
        }

        /// The keyed hash of `hash` and the device's pseudonym for it.
        package func of(_ hash: PublicHash) -> (key: Data, voter: [UInt8]) {
            if let entry = entries?[hash] { return (entry.key, entry.voter) }
            return (Data(secrets.key(app: stream.app, hash: hash)), secrets.voter(device: stream.device, hash: hash))
        }

        /// The device's pseudonym for `hash`.
        package func voter(_ hash: PublicHash) -> [UInt8] {
            entries?[hash]?.voter ?? secrets.voter(device: stream.device, hash: hash)
        }
    }

    /// The keyed hash and pseudonym of each hash for the device of `stream`:
    /// taken from the entries, which hold both for every hash a frame of the
    /// device touched, else computed from `secrets` (an HMAC each).
    package func names(for stream: DeviceStream, secrets: CloudSecrets) -> Names {
        Names(stream: stream, entries: devices[stream], secrets: secrets)
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
