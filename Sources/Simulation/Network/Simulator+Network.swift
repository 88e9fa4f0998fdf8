import CloudCore
import CloudSQLite
import DeviceStore
import Foundation
import IndexModel
import Snapshot
import SyncWire

/// The loop's side of the network (`SimNetwork`): what a device sends and
/// what the cloud answers, scheduled as the network says they arrive, and
/// the oracle's watch for private text on the wire.
extension Simulator {
    func send(from device: SimDevice, request: UInt64, bytes: [UInt8]) {
        counters.bytesUp += bytes.count
        counters.framesScanned += 1
        scanForCanary(bytes, from: device)
        let now = world.milliseconds
        guard now >= device.offlineUntil else { return }
        for arrival in network.carryRequest(bytes, from: device.number, now: now, counters: &counters) {
            queue.schedule(.toCloud(from: arrival.replayed ? nil : device.number, request: arrival.replayed ? 0 : request,
                                    bytes: arrival.bytes), at: arrival.at)
        }
    }

    /// What a device must have heard from the cloud to be quiet: news since
    /// its last sync means it syncs again while converging.
    ///
    /// From the embedded cloud, its incarnation (a restart or restore may
    /// have lost what the device was told) and its last content request
    /// (acks carry the requests to every device of the app, and only a
    /// device that heard one can answer it). Nothing else the cloud takes is
    /// news to a device that has nothing to send: counting every accepted
    /// frame would make each device probe again after any other device's
    /// upload, so that most of a large run's probes while converging would
    /// find nothing. A remote cloud says only how long its log is, so there
    /// every frame it took is news.
    func cloudNews() throws -> CloudNews {
        try cloudHost.news(accepted: counters.accepted)
    }

    func deliverToCloud(from number: Int?, request: UInt64, bytes: [UInt8]) throws {
        if let remote = options.remote { return try deliverRemotely(remote, from: number, request: request, bytes: bytes) }
        guard let cloud else {
            // Connection refused: the device learns at once that the outcome is unknown.
            if let number { queue.schedule(.timeout(number, request: request), at: world.milliseconds + 5) }
            return
        }
        let result = options.sabotage == .withdrawals ? cloud.ingestFoldingWithdrawalsAsVotes(bytes) : cloud.ingest(bytes)
        counters.record(result.outcome)
        guard let number,
              let arrival = network.carryReply(result.reply, to: number, now: world.milliseconds, replaying: true, counters: &counters)
        else { return }
        queue.schedule(.toDevice(number, request: request, bytes: arrival.bytes), at: arrival.at)
    }

    /// Every frame a device sends is searched for the canary that marks
    /// private strings: in its bytes and in its inflated payload, inflated
    /// against the dictionary the device's uploader holds while the frame
    /// is in flight. A frame that does not inflate against it counts as
    /// carrying the canary: the oracle could not read it.
    func scanForCanary(_ bytes: [UInt8], from device: SimDevice) {
        // Messages encode their strings as UTF-8, so a frame that carries the
        // canary carries its bytes: as sent, or in the inflated payload.
        var found = Simulator.holdsCanary(bytes)
        if !found, let frame = try? UploadFrame.parse(bytes) {
            let dictionary = device.session?.uploader.dictionary ?? .empty
            if let plain = try? frame.plainPayload(dictionary: dictionary) {
                found = Simulator.holdsCanary(plain)
            } else if frame.base != nil {
                found = true
                findings.append("device \(device.number) sent a frame the oracle could not inflate against the device's dictionary")
            }
        }
        if found {
            counters.leaks += 1
            if counters.leaks <= 5 { findings.append("device \(device.number) sent a frame carrying private text (the canary)") }
        }
    }

    static let canaryBytes = Array(Catalogue.canary.utf8)

    /// Whether `bytes` hold the canary's bytes anywhere: C's `memchr` finds
    /// each candidate first byte and `memcmp` the rest, far faster than the
    /// generic `firstRange(of:)` of Foundation's `DataProtocol`; the event
    /// loop scans every frame a device sends.
    static func holdsCanary(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { haystack in
            canaryBytes.withUnsafeBytes { needle in
                guard let base = haystack.baseAddress, let first = needle.first, haystack.count >= needle.count else {
                    return false
                }
                let lastStart = base + (haystack.count - needle.count)
                var from = base
                while from <= lastStart, let found = memchr(from, Int32(first), lastStart - from + 1) {
                    if memcmp(found, needle.baseAddress!, needle.count) == 0 { return true }
                    from = UnsafeRawPointer(found) + 1
                }
                return false
            }
        }
    }
}

extension CloudStore {
    /// `ingest(_:)` as `Sabotage.withdrawals` breaks it: the log keeps the
    /// frame as received, and the fold sees each withdrawal as a vote for its
    /// hash, with its token (one message for one, so every position stays).
    func ingestFoldingWithdrawalsAsVotes(_ bytes: [UInt8]) -> IngestResult {
        guard case .authenticated(let authenticated) = authenticate(bytes), let opened = try? open(authenticated) else {
            return ingest(bytes)
        }
        let messages = opened.messages.map { message -> OutboxMessage in
            if case .withdraw(let hash, let token) = message { return .vote(hash, token) }
            return message
        }
        let result = ingest(opened.authenticated, messages: messages)
        // The dictionary the device deflates its next frame against, as
        // `ingest(_ opened:)` keeps it.
        let frame = opened.authenticated.frame
        if case .rejected = result.outcome {} else if !frame.isProbe, frame.version >= UploadFrame.Flags.firstBasedVersion,
                                                    let next = try? opened.dictionary.following(opened.plain) {
            frameDictionaries.keep(next, app: opened.authenticated.app, device: frame.device)
        }
        return result
    }
}
