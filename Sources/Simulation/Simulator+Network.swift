import CloudIndex
import DeviceStore
import Foundation
import IndexModel
import Snapshot
import SyncWire

/// The simulated network: delivery, latency and the network faults.
extension Simulator {
    // MARK: - The network

    var networkFaults: Bool {
        if case .faults = phase { return true }
        return false
    }

    func send(from device: SimDevice, request: UInt64, bytes: [UInt8]) {
        counters.bytesUp += bytes.count
        counters.framesScanned += 1
        scanForCanary(bytes, from: device)
        let now = world.milliseconds
        guard now >= device.offlineUntil,
              !partitions.contains(where: { $0.blocksRequests && $0.covers(device.number) }) else { return }
        if networkFaults {
            if captured.count < 64 { captured.append(bytes) } else { captured[networkRandom.below(64)] = bytes }
            if networkRandom.chance(plan.requestLoss) { counters.fault(.requestLost); return }
        }
        var delivered = bytes
        let latency = transit(&delivered)
        if networkFaults {
            if networkRandom.chance(plan.duplication) {
                counters.fault(.duplicated)
                queue.schedule(.toCloud(from: device.number, request: request, bytes: delivered),
                               at: now + latency + networkRandom.between(1, 3_000))
            }
            if networkRandom.chance(plan.replay), !captured.isEmpty {
                counters.fault(.replayed)
                queue.schedule(.toCloud(from: nil, request: 0, bytes: captured[networkRandom.below(captured.count)]),
                               at: now + networkRandom.between(1_000, 60_000))
            }
        }
        queue.schedule(.toCloud(from: device.number, request: request, bytes: delivered), at: now + latency)
    }

    /// What a device must have heard from the cloud to be quiet: news since
    /// its last sync means it syncs again while converging.
    ///
    /// From the embedded cloud, its incarnation (a restart or restore may
    /// have lost what the device was told) and its last content request
    /// (acks carry the requests to every device of the app, and only a
    /// device that heard one can answer it). Nothing else the cloud takes is
    /// news to a device that has nothing to send. Counting every accepted
    /// frame instead made each device probe again after any other device's
    /// upload: about 12 probes per device in the 31 virtual seconds of
    /// converging, 122,000 of 144,000 in a 10,000-device run. A remote cloud
    /// says only how long its log is, so there every frame it took is news.
    func cloudNews() throws -> CloudNews {
        if options.remote != nil, let cloud {
            return CloudNews(incarnation: cloudIncarnation, mark: try cloud.logHead())
        }
        if newsRead.accepted != counters.accepted || newsRead.news.incarnation != cloudIncarnation, let cloud {
            newsRead = (counters.accepted, CloudNews(incarnation: cloudIncarnation, mark: try cloud.contentRequestHead()))
        }
        return newsRead.news
    }

    func deliverToCloud(from number: Int?, request: UInt64, bytes: [UInt8]) throws {
        if let remote = options.remote { return try deliverRemotely(remote, from: number, request: request, bytes: bytes) }
        guard let cloud else {
            // Connection refused: the device learns at once that the outcome is unknown.
            if let number { queue.schedule(.timeout(number, request: request), at: world.milliseconds + 5) }
            return
        }
        let result = cloud.ingest(bytes)
        counters.record(result.outcome)
        guard let number else { return }
        if partitions.contains(where: { $0.blocksReplies && $0.covers(number) }) { return }
        if networkFaults && networkRandom.chance(plan.replyLoss) { counters.fault(.replyLost); return }
        var reply = result.reply
        let device = devices[number]
        defer { device.lastReply = result.reply }
        if networkFaults, let old = device.lastReply, networkRandom.chance(plan.replay) {
            counters.fault(.replyReplayed)
            reply = old
        }
        let latency = transit(&reply)
        counters.bytesDown += reply.count
        queue.schedule(.toDevice(number, request: request, bytes: reply), at: world.milliseconds + latency)
    }

    /// What the way there does to a frame or a reply: its latency, and in the
    /// fault phase a delay (which reorders) and a flipped bit, each as the plan says.
    func transit(_ bytes: inout [UInt8]) -> Int64 {
        var latency = networkRandom.between(5, 60)
        guard networkFaults else { return latency }
        if networkRandom.chance(plan.delay) {
            counters.fault(.delayed)
            latency += networkRandom.between(500, 6_000)
        }
        if networkRandom.chance(plan.bitFlip) {
            counters.fault(.bitFlip)
            flipBit(&bytes)
        }
        return latency
    }

    func flipBit(_ bytes: inout [UInt8]) {
        guard !bytes.isEmpty else { return }
        let bit = networkRandom.below(bytes.count * 8)
        bytes[bit / 8] ^= UInt8(1 << (bit % 8))
    }

    /// Every frame a device sends is searched for the canary that marks
    /// private strings: in its bytes and in its inflated payload.
    func scanForCanary(_ bytes: [UInt8], from device: SimDevice) {
        // Messages encode their strings as UTF-8, so a frame that carries the
        // canary carries its bytes: as sent, or in the inflated payload.
        var found = Simulator.holdsCanary(bytes)
        if !found, let frame = try? UploadFrame.parse(bytes), let plain = try? frame.plainPayload() {
            found = Simulator.holdsCanary(plain)
        }
        if found {
            counters.leaks += 1
            if counters.leaks <= 5 { findings.append("device \(device.number) sent a frame carrying private text (the canary)") }
        }
    }

    static let canaryBytes = Array(Catalogue.canary.utf8)

    /// Whether `bytes` hold the canary's bytes anywhere: C's `memchr` finds
    /// each candidate first byte and `memcmp` the rest. The generic
    /// `firstRange(of:)` of Foundation's `DataProtocol` took 5% of a
    /// 10,000-device run's event loop for the 420,000 frames it scanned.
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
