import Synchronization

/// Token buckets by key (a proven device, or a client address), in memory
/// and bounded: at most `capacity` keys are remembered. A bucket that has
/// refilled to its burst is the same as no bucket, so it is the first to be
/// forgotten; when every remembered key is still short of tokens, the ones
/// idle longest go. Forgetting only ever lets a key through sooner, and a
/// restart forgets everything, which errs the same way.
final class RateLimiter<Key: Hashable & Sendable>: Sendable {
    private let rate: Double
    private let burst: Double
    private let capacity: Int
    private let buckets = Mutex<[Key: Bucket]>([:])

    private struct Bucket {
        var tokens: Double
        var at: ContinuousClock.Instant
    }

    /// `rate` tokens a second up to `burst`; `capacity` keys at most.
    init(rate: Double, burst: Double, capacity: Int = 100_000) {
        self.rate = max(rate, 0.001)
        self.burst = max(burst, 1)
        self.capacity = max(capacity, 1)
    }

    /// Takes a token from `key`'s bucket, if it has one.
    func allow(_ key: Key, now: ContinuousClock.Instant) -> Bool {
        buckets.withLock { buckets in
            var bucket = refilled(buckets[key], now: now)
            let allowed = bucket.tokens >= 1
            if allowed { bucket.tokens -= 1 }
            if buckets[key] == nil && buckets.count >= capacity { forget(in: &buckets, now: now) }
            buckets[key] = bucket
            return allowed
        }
    }

    /// Whether `key` has no token left, without taking one.
    func isExhausted(_ key: Key, now: ContinuousClock.Instant) -> Bool {
        buckets.withLock { buckets in
            guard let bucket = buckets[key] else { return false }
            return refilled(bucket, now: now).tokens < 1
        }
    }

    /// How many keys are remembered.
    var count: Int { buckets.withLock { $0.count } }

    private func refilled(_ bucket: Bucket?, now: ContinuousClock.Instant) -> Bucket {
        guard let bucket else { return Bucket(tokens: burst, at: now) }
        let elapsed = bucket.at.duration(to: now)
        let seconds = max(0, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        return Bucket(tokens: min(burst, bucket.tokens + seconds * rate), at: now)
    }

    /// Makes room for at least a quarter of `capacity`: full buckets first,
    /// then the longest idle. Each pass costs a sweep of the map, and frees
    /// room for a quarter of its capacity, so a key costs O(log n) on average.
    private func forget(in buckets: inout [Key: Bucket], now: ContinuousClock.Instant) {
        buckets = buckets.filter { refilled($0.value, now: now).tokens < burst }
        let keep = capacity - capacity / 4 - 1
        guard buckets.count > keep else { return }
        let newest = buckets.sorted { $0.value.at > $1.value.at }.prefix(max(keep, 0))
        buckets = Dictionary(uniqueKeysWithValues: newest.map { ($0.key, $0.value) })
    }
}
