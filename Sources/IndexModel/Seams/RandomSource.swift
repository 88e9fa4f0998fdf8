import Synchronization

/// Where a store or the cloud draws randomness (identifiers, secrets, keys).
/// Injected so that a seeded run makes the same identifiers every time.
public protocol RandomSource: Sendable {
    func next() -> UInt64
}

/// A deterministic source (SplitMix64): the same seed gives the same sequence.
public final class SeededRandom: RandomSource {
    private let generator: Mutex<SplitMix64>

    public init(seed: UInt64) {
        generator = Mutex(SplitMix64(seed: seed))
    }

    public func next() -> UInt64 {
        generator.withLock { $0.next() }
    }
}

/// The system's random number generator, for real devices.
public struct SystemRandom: RandomSource {
    public init() {}

    public func next() -> UInt64 {
        var generator = SystemRandomNumberGenerator()
        return generator.next()
    }
}
