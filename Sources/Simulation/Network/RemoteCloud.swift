import CloudCore
import CloudSQLite
import Foundation
import IndexModel
import SyncWire

/// A cloud the simulator does not run: a real `sightline cloud serve`, reached
/// over the network (`sightline simulate --cloud URL`). The simulator still
/// runs every device, the app and the faults of the wire between them and the
/// cloud; the cloud's own faults (crash, restore) are the server's business.
///
/// At the end the oracle reads the cloud's store (`storePath`, opened read-only)
/// to make the same checks as against an embedded cloud: the log, the counts
/// and the projections are not served over HTTP, by design.
public protocol RemoteCloud: Sendable {
    /// Where the cloud is, for the report.
    var location: String { get }
    /// The served cloud's store file.
    var storePath: String { get }
    /// Enrols a device and returns its key.
    func enrol(app: AppID, device: DeviceID) throws -> [UInt8]
    /// The cloud's reply to `frame`, or nil when none came (the outcome is unknown).
    func exchange(_ frame: [UInt8]) -> [UInt8]?
}

extension Simulator {
    /// The remote cloud's store, read-only, checked to be one this run can
    /// account for: no device enrolled yet (the oracle must explain every
    /// count), and the K the run was given.
    static func openRemoteStore(_ remote: any RemoteCloud, options: SimulationOptions) throws(SimulationError) -> any CloudStore {
        let store: any CloudStore
        let stats: CloudStats
        do {
            store = try CloudIndex(at: .file(remote.storePath), options: CloudOptions(readOnly: true))
            stats = try store.stats()
        } catch {
            throw SimulationError("cannot read the store of the cloud at \(remote.location) (\(remote.storePath)): \(error)")
        }
        guard stats.devices == 0 else {
            throw SimulationError("""
                the cloud at \(remote.location) already has \(stats.devices) enrolled device(s): a remote run needs a cloud \
                store of its own (a new `cloud serve --db`), since the oracle must account for everything the cloud counts
                """)
        }
        guard stats.threshold == options.threshold else {
            throw SimulationError("the cloud at \(remote.location) has K = \(stats.threshold): give --threshold \(stats.threshold)")
        }
        return store
    }

    /// Takes a frame to the remote cloud and the reply back to its device.
    func deliverRemotely(_ remote: any RemoteCloud, from number: Int?, request: UInt64, bytes: [UInt8]) throws {
        guard let reply = remote.exchange(bytes) else {
            // No answer: the device learns at once that the outcome is unknown.
            if let number { queue.schedule(.timeout(number, request: request), at: world.milliseconds + 5) }
            return
        }
        guard let number else { return }
        try settle(devices[number])
        recordRemoteOutcome(reply, device: devices[number])
        guard let arrival = network.carryReply(reply, to: number, now: world.milliseconds, replaying: false, counters: &counters) else { return }
        queue.schedule(.toDevice(number, request: request, bytes: arrival.bytes), at: arrival.at)
    }

    /// Counts the reply as the embedded cloud's outcome would be counted: an
    /// ack through a position beyond the device's last one took something new.
    private func recordRemoteOutcome(_ reply: [UInt8], device: SimDevice) {
        guard let key = try? device.store.deviceKey(),
              let decoded = try? CloudReply.decode(reply, device: device.name, key: key) else { return }
        switch decoded.reply {
        case .ack(let ack):
            if ack.acceptedThrough > (device.remoteHead ?? .nothing) {
                device.remoteHead = ack.acceptedThrough
                counters.record(.accepted(messages: 0))
            } else {
                counters.record(.duplicate)
            }
        case .rejection(let rejection):
            counters.record(.rejected(rejection.error))
        }
    }
}
