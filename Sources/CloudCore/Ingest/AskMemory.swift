import Foundation
import IndexModel
import SyncWire

/// What ingest remembers between frames about which wanted hashes each
/// device is asked for (`CloudIndex.ack`), so that an ack looks only at what
/// changed since that device's previous ack instead of at every wanted hash.
///
/// A device's requests are the wanted hashes it holds a live vote for and has
/// made no offer of. They change only when a hash becomes wanted or stops
/// being wanted (the fold records each such hash here, in order), or when the
/// device's own vote, withdrawal or content changes its vote or offer (its own
/// frame names the hash). An ack rechecks exactly those hashes; a device
/// without a memory, or whose memory is older than the changes kept, is
/// checked against every wanted hash. The answer is the same either way.
///
/// Part of `FoldMemory`, so it is forgotten whenever that is: after a
/// transaction rolls back, after another connection wrote the store, after a
/// rebuild.
package final class AskMemory {
    /// A hash a device is asked for, with its key and wanted seq (the order
    /// acks ask in).
    package struct Request {
        package let key: Data
        package let wantedSeq: Int64

        package init(key: Data, wantedSeq: Int64) {
            self.key = key
            self.wantedSeq = wantedSeq
        }
    }

    package struct Device {
        /// The change number the device's requests are up to date with.
        package var mark: Int
        package var requests: [PublicHash: Request]
    }

    /// The hashes whose wanted state changed, oldest first; `first` is the
    /// change number of `changes[0]`.
    private var changes: [PublicHash] = []
    private var first = 0
    private var devices: [DeviceStream: Device] = [:]

    /// The most changes and devices kept; past them the oldest changes, or
    /// every device, are forgotten (and checked in full at their next ack).
    static let keptChanges = 1 << 16
    static let keptDevices = 1 << 16

    /// The number the next change gets.
    package var head: Int { first + changes.count }

    /// Records that `hash` became wanted or stopped being wanted.
    package func changed(_ hash: PublicHash) {
        changes.append(hash)
        if changes.count > AskMemory.keptChanges {
            let dropped = changes.count / 2
            changes.removeFirst(dropped)
            first += dropped
        }
    }

    /// The hashes changed since `mark`, or nil when some of them are no
    /// longer kept.
    package func changes(since mark: Int) -> ArraySlice<PublicHash>? {
        guard mark >= first, mark <= head else { return nil }
        return changes[(mark - first)...]
    }

    package func device(_ stream: DeviceStream) -> Device? {
        devices[stream]
    }

    package func remember(_ device: Device, for stream: DeviceStream) {
        if devices[stream] == nil, devices.count >= AskMemory.keptDevices { devices.removeAll(keepingCapacity: true) }
        devices[stream] = device
    }

    package func forget() {
        changes.removeAll(keepingCapacity: true)
        first = 0
        devices.removeAll(keepingCapacity: true)
    }
}
