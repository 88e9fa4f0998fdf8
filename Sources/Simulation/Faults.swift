import Foundation

/// Every kind of fault the simulator can inject. Each run lists how often each
/// one fired; the coverage gate wants every kind reached somewhere in a campaign.
public enum FaultKind: String, CaseIterable, Hashable, Sendable, Comparable {
    /// A frame never reached the cloud.
    case requestLost
    /// The cloud committed a frame and its reply never came back.
    case replyLost
    /// The network delivered a frame twice.
    case duplicated
    /// The network (or an eavesdropper) delivered an old frame again later.
    case replayed
    /// A frame or reply was held back long enough to arrive out of order.
    case delayed
    /// A bit of a frame or a reply changed in transit.
    case bitFlip
    /// Some devices could not reach the cloud, or hear it (asymmetric), until healed.
    case partition
    /// A device process died: what it had not committed is gone, and its store is reopened.
    case deviceCrash
    /// A device stayed offline for a long time.
    case offline
    /// A device was wiped and restored from a backup snapshot of random age.
    case deviceRestore
    /// The cloud process died and came back; replies in flight were lost.
    case cloudCrash
    /// The cloud was restored from its last snapshot.
    case cloudRestore
    /// A device's clock jumped forwards or backwards.
    case clockJump
    /// A hostile device attacked: forged, replayed, ballot-stuffing frames,
    /// extreme positions, content for a hash it never voted for, and signal
    /// floods for the one it did (`Simulator.hostileFrame`).
    case hostileFrame
    /// The network delivered an old reply of a device in place of the
    /// answer to its frame in flight.
    case replyReplayed

    public static func < (lhs: FaultKind, rhs: FaultKind) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// How hostile the run's world is.
public enum FaultProfile: String, CaseIterable, Hashable, Sendable {
    /// A perfect network, no crashes: the baseline.
    case none
    /// Occasional loss, duplication and delay; rare crashes.
    case light
    /// Every fault, often.
    case heavy
    /// Each seed switches each fault on or off and draws its rate (swarm testing).
    case swarm

    /// The kinds of fault a run of this profile can inject (against the
    /// embedded cloud): every kind for `swarm`, whose seeds switch each on
    /// about half the time.
    public var injectableKinds: Set<FaultKind> {
        guard self != .swarm else { return Set(FaultKind.allCases) }
        var random = SimRandom(seed: 0)
        return FaultPlan.draw(self, random: &random).injectableKinds
    }
}

/// The rates one run uses, drawn from the profile and the seed. Network
/// faults are probabilities per frame; the others are expected occurrences per
/// device (or for the cloud) per virtual hour. A run of the default size lasts
/// a few virtual minutes, so the hourly rates are high.
public struct FaultPlan: Hashable, Sendable {
    public var requestLoss = 0.0
    public var replyLoss = 0.0
    public var duplication = 0.0
    public var replay = 0.0
    public var delay = 0.0
    public var bitFlip = 0.0
    /// Partitions per virtual hour.
    public var partitions = 0.0
    /// Per device per virtual hour.
    public var deviceCrashes = 0.0
    public var offlinePeriods = 0.0
    public var deviceRestores = 0.0
    public var clockJumps = 0.0
    /// For the cloud, per virtual hour.
    public var cloudCrashes = 0.0
    public var cloudRestores = 0.0
    /// A hostile device takes part.
    public var hostile = false
    /// K−1 devices collude to push an item of their own (a Sybil group smaller than K).
    public var sybil = false

    public init() {}

    static func draw(_ profile: FaultProfile, random: inout SimRandom) -> FaultPlan {
        var plan = FaultPlan()
        switch profile {
        case .none:
            break
        case .light:
            plan.requestLoss = 0.02
            plan.replyLoss = 0.02
            plan.duplication = 0.02
            plan.delay = 0.05
            plan.deviceCrashes = 3
            plan.partitions = 10
        case .heavy:
            plan.requestLoss = 0.1
            plan.replyLoss = 0.1
            plan.duplication = 0.08
            plan.replay = 0.05
            plan.delay = 0.15
            plan.bitFlip = 0.03
            plan.partitions = 60
            plan.deviceCrashes = 10
            plan.offlinePeriods = 5
            plan.deviceRestores = 10
            plan.clockJumps = 8
            plan.cloudCrashes = 40
            plan.cloudRestores = 30
            plan.hostile = true
            plan.sybil = true
        case .swarm:
            // Each fault is on for about half the seeds, at a rate up to the heavy one.
            func rate(_ maximum: Double) -> Double {
                random.chance(0.5) ? maximum * (0.1 + 0.9 * random.unit()) : 0
            }
            plan.requestLoss = rate(0.15)
            plan.replyLoss = rate(0.15)
            plan.duplication = rate(0.1)
            plan.replay = rate(0.08)
            plan.delay = rate(0.2)
            plan.bitFlip = rate(0.05)
            plan.partitions = rate(80)
            plan.deviceCrashes = rate(15)
            plan.offlinePeriods = rate(8)
            plan.deviceRestores = rate(15)
            plan.clockJumps = rate(10)
            plan.cloudCrashes = rate(50)
            plan.cloudRestores = rate(40)
            plan.hostile = random.chance(0.5)
            plan.sybil = random.chance(0.5)
        }
        return plan
    }

    /// The kinds of fault this plan can inject: a kind whose rate or count
    /// is zero never happens.
    public var injectableKinds: Set<FaultKind> {
        let possible: [(Bool, [FaultKind])] = [
            (requestLoss > 0, [.requestLost]), (replyLoss > 0, [.replyLost]), (duplication > 0, [.duplicated]),
            (replay > 0, [.replayed, .replyReplayed]), (delay > 0, [.delayed]), (bitFlip > 0, [.bitFlip]),
            (partitions > 0, [.partition]), (deviceCrashes > 0, [.deviceCrash]), (offlinePeriods > 0, [.offline]),
            (deviceRestores > 0, [.deviceRestore]), (clockJumps > 0, [.clockJump]), (cloudCrashes > 0, [.cloudCrash]),
            (cloudRestores > 0, [.cloudRestore]), (hostile, [.hostileFrame]),
        ]
        return Set(possible.filter(\.0).flatMap(\.1))
    }

    /// The plan as `name=value` pairs, for the report and for replaying a run.
    public var summary: [(name: String, value: String)] {
        func format(_ value: Double) -> String { value == 0 ? "0" : String(format: "%.3g", value) }
        return [
            ("requestLoss", format(requestLoss)), ("replyLoss", format(replyLoss)),
            ("duplication", format(duplication)), ("replay", format(replay)), ("delay", format(delay)),
            ("bitFlip", format(bitFlip)), ("partitions/h", format(partitions)),
            ("deviceCrashes/h", format(deviceCrashes)), ("offline/h", format(offlinePeriods)),
            ("deviceRestores/h", format(deviceRestores)), ("clockJumps/h", format(clockJumps)),
            ("cloudCrashes/h", format(cloudCrashes)), ("cloudRestores/h", format(cloudRestores)),
            ("hostile", hostile ? "yes" : "no"), ("sybil", sybil ? "yes" : "no"),
        ]
    }
}

