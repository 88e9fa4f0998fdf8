import Dispatch
import Threads
import Synchronization
import Testing

/// The handoff between a restore's two threads: in order, bounded, and never
/// leaving either side waiting for good. The producers run on dispatch
/// threads: both sides block, which Swift concurrency's threads must not.
@Suite struct HandoffTests {
    @Test func elementsArriveInOrderAndTheConsumerSeesTheEnd() {
        let handoff = Handoff<Int>(capacity: 3)
        let producing = DispatchGroup()
        DispatchQueue.global().async(group: producing) {
            for value in 0..<1000 { handoff.put(value) }
            handoff.finish()
        }
        var received: [Int] = []
        while let value = handoff.next() { received.append(value) }
        producing.wait()
        #expect(received == Array(0..<1000))
    }

    @Test func aConsumerThatAbandonsReleasesAProducerWaitingForRoom() {
        let handoff = Handoff<Int>(capacity: 2)
        let accepted = Mutex(0)
        let producing = DispatchGroup()
        DispatchQueue.global().async(group: producing) {
            for value in 0..<100 {
                guard handoff.put(value) else { break }
                accepted.withLock { $0 += 1 }
            }
            handoff.finish()
        }
        #expect(handoff.next() == 0)
        handoff.abandon()
        #expect(producing.wait(timeout: .now() + 10) == .success, "the producer was left waiting for room")
        #expect(accepted.withLock { $0 } < 100, "the producer stopped once the consumer had abandoned")
        #expect(handoff.next() == nil)
    }
}
