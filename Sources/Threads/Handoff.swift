import Foundation

/// Passes elements, in order, from one producing thread to one consuming
/// thread, holding at most `capacity` of them: two steps of a restore run on
/// both cores this way (inflating and writing; verifying and replaying).
///
/// The producer calls `put` for each element and must call `finish()` when it
/// stops, for any reason. The consumer calls `next()` until it returns nil,
/// and `abandon()` if it stops early, so that the producer never waits for
/// room that nobody makes: `put` then returns false and the producer stops.
public final class Handoff<Element: Sendable>: @unchecked Sendable {
    private let capacity: Int
    /// Guards everything below; both sides wait on it.
    private let condition = NSCondition()
    /// Taken elements leave their slot at once (nil), so that the handoff
    /// never holds the last reference to one: it would be freed on whichever
    /// thread next clears the slots.
    private var waiting: [Element?] = []
    private var first = 0
    private var finished = false
    private var abandoned = false

    /// A handoff that holds at most `capacity` elements (at least one) waiting
    /// for the consumer.
    public init(capacity: Int) {
        precondition(capacity > 0, "a handoff holds at least one element")
        self.capacity = capacity
    }

    // MARK: - Producer

    /// Hands `element` over, waiting while `capacity` elements wait already.
    /// False when the consumer has abandoned the handoff.
    @discardableResult
    public func put(_ element: Element) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while isFull && !abandoned {
            condition.wait()
        }
        guard !abandoned else { return false }
        append(element)
        return true
    }

    /// Hands `element` over only if there is room now: false, without
    /// waiting, when `capacity` elements wait already or the consumer has
    /// abandoned the handoff. For a producer that can do the work itself.
    public func offer(_ element: Element) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !isFull && !abandoned else { return false }
        append(element)
        return true
    }

    /// Under the lock.
    private var isFull: Bool { waiting.count - first >= capacity }

    /// Under the lock.
    private func append(_ element: Element) {
        // Only an empty handoff can have the consumer waiting.
        let wasEmpty = first == waiting.count
        waiting.append(element)
        if wasEmpty { condition.broadcast() }
    }

    /// No more elements: the consumer gets those waiting, then nil.
    public func finish() {
        condition.lock()
        finished = true
        condition.broadcast()
        condition.unlock()
    }

    // MARK: - Consumer

    /// The next element in order, nil once the producer has finished and
    /// every element was taken. Waits while the producer is behind.
    public func next() -> Element? {
        condition.lock()
        defer { condition.unlock() }
        while first == waiting.count && !finished {
            condition.wait()
        }
        guard first < waiting.count, let element = waiting[first] else { return nil }
        // Only a full handoff can have the producer waiting.
        let wasFull = isFull
        waiting[first] = nil
        first += 1
        if first == waiting.count {
            waiting.removeAll(keepingCapacity: true)
            first = 0
        }
        if wasFull { condition.broadcast() }
        return element
    }

    /// The consumer takes no more: what waits is dropped and the producer's
    /// next `put` returns false at once.
    public func abandon() {
        condition.lock()
        abandoned = true
        waiting.removeAll()
        first = 0
        condition.broadcast()
        condition.unlock()
    }
}
