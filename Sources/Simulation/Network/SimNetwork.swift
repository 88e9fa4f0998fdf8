/// The simulated network between the devices and the cloud: latency, and in
/// the fault phase loss, duplication, delay, replay, bit flips and
/// partitions, drawn from its own random stream as the fault plan says. It
/// carries bytes and says when each copy arrives; the event loop schedules
/// the arrivals, and the faults it made are counted in the run's counters.
final class SimNetwork {
    /// A copy of a frame or reply on its way, and when it arrives.
    struct Arrival {
        let bytes: [UInt8]
        let at: Int64
        /// A frame captured earlier, sent again by someone on the wire: no
        /// device waits for its reply.
        let replayed: Bool
    }

    struct Partition {
        let id: UInt64
        /// Nil: every device.
        let members: Set<Int>?
        let blocksRequests: Bool
        let blocksReplies: Bool

        func covers(_ device: Int) -> Bool { members?.contains(device) ?? true }
    }

    private var random: SimRandom
    private let plan: FaultPlan
    /// Off once the fault phase ends: from then on the network only delays.
    private(set) var faulty = true
    private var partitions: [Partition] = []
    private var nextPartition: UInt64 = 0
    /// Frames seen on the wire, for replays (at most 64, each kept at random).
    private(set) var captured: [[UInt8]] = []
    /// The last reply each device was sent, for replays of it.
    private var lastReply: [Int: [UInt8]] = [:]

    init(plan: FaultPlan, random: SimRandom) {
        self.plan = plan
        self.random = random
    }

    /// Carries `bytes` from `device` to the cloud at `now`: nothing when a
    /// partition blocks it or it is lost, else the copies that arrive (a
    /// duplicate and a replay of a captured frame come first), each with the
    /// faults counted in `counters`.
    func carryRequest(_ bytes: [UInt8], from device: Int, now: Int64, counters: inout RunCounters) -> [Arrival] {
        guard !partitions.contains(where: { $0.blocksRequests && $0.covers(device) }) else { return [] }
        if faulty {
            if captured.count < 64 { captured.append(bytes) } else { captured[random.below(64)] = bytes }
            if random.chance(plan.requestLoss) { counters.fault(.requestLost, device: device); return [] }
        }
        var delivered = bytes
        let latency = transit(&delivered, device: device, counters: &counters)
        var arrivals: [Arrival] = []
        if faulty {
            if random.chance(plan.duplication) {
                counters.fault(.duplicated, device: device)
                arrivals.append(Arrival(bytes: delivered, at: now + latency + random.between(1, 3_000), replayed: false))
            }
            if random.chance(plan.replay), !captured.isEmpty {
                counters.fault(.replayed, device: device)
                arrivals.append(Arrival(bytes: captured[random.below(captured.count)], at: now + random.between(1_000, 60_000),
                                        replayed: true))
            }
        }
        arrivals.append(Arrival(bytes: delivered, at: now + latency, replayed: false))
        return arrivals
    }

    /// Carries the cloud's `reply` to `device` at `now`: nil when a partition
    /// blocks it or it is lost. With `replaying`, an earlier reply to the
    /// same device may arrive in its place (a replay on the wire).
    func carryReply(_ reply: [UInt8], to device: Int, now: Int64, replaying: Bool, counters: inout RunCounters) -> Arrival? {
        if partitions.contains(where: { $0.blocksReplies && $0.covers(device) }) { return nil }
        if faulty && random.chance(plan.replyLoss) { counters.fault(.replyLost, device: device); return nil }
        var delivered = reply
        if replaying {
            defer { lastReply[device] = reply }
            if faulty, let old = lastReply[device], random.chance(plan.replay) {
                counters.fault(.replyReplayed, device: device)
                delivered = old
            }
        }
        let latency = transit(&delivered, device: device, counters: &counters)
        counters.bytesDown += delivered.count
        return Arrival(bytes: delivered, at: now + latency, replayed: false)
    }

    /// How long a frame that no device sent takes to reach the cloud.
    func latency() -> Int64 { random.between(5, 60) }

    /// Cuts `members` (nil: every device) off, one way or both, until `heal`.
    func partition(members: Set<Int>?, blocksRequests: Bool, blocksReplies: Bool) -> UInt64 {
        nextPartition += 1
        partitions.append(Partition(id: nextPartition, members: members, blocksRequests: blocksRequests, blocksReplies: blocksReplies))
        return nextPartition
    }

    func heal(_ partition: UInt64) {
        partitions.removeAll { $0.id == partition }
    }

    /// The fault phase is over: every partition heals and no fault is drawn again.
    func endFaults() {
        faulty = false
        partitions.removeAll()
    }

    /// What the way there does to a frame or a reply: its latency, and in the
    /// fault phase a delay (which reorders) and a flipped bit, each as the plan says.
    private func transit(_ bytes: inout [UInt8], device: Int, counters: inout RunCounters) -> Int64 {
        var latency = random.between(5, 60)
        guard faulty else { return latency }
        if random.chance(plan.delay) {
            counters.fault(.delayed, device: device)
            latency += random.between(500, 6_000)
        }
        if random.chance(plan.bitFlip) {
            counters.fault(.bitFlip, device: device)
            flipBit(&bytes)
        }
        return latency
    }

    private func flipBit(_ bytes: inout [UInt8]) {
        guard !bytes.isEmpty else { return }
        let bit = random.below(bytes.count * 8)
        bytes[bit / 8] ^= UInt8(1 << (bit % 8))
    }
}
