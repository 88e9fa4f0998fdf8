import Foundation
import Synchronization
import Threads
import Testing

/// The pipeline a snapshot's chunks go through: results come back in the
/// order made whatever each worker takes, and stopping early from either
/// end leaves no thread waiting.
@Suite struct PipelineTests {
    private struct Stop: Error {}

    @Test(arguments: [1, 2, 3])
    func resultsComeBackInTheOrderMadeWhateverEachWorkerTakes(workers: Int) {
        var received: [Int] = []
        Parallel.pipeline(workers: workers, produce: { hand in
            for value in 0..<200 { _ = hand(value) }
        }, transform: { value in
            // Every third item takes longer, so the workers finish out of order.
            if value % 3 == 0 { Thread.sleep(forTimeInterval: 0.001) }
            return value * 2
        }, consume: { value in
            received.append(value)
            return true
        })
        #expect(received == (0..<200).map { $0 * 2 })
    }

    @Test func aConsumerThatStopsStopsTheProducer() {
        let made = Mutex(0)
        var received: [Int] = []
        Parallel.pipeline(workers: 2, produce: { hand in
            for value in 0..<100_000 {
                guard hand(value) else { return }
                made.withLock { $0 += 1 }
            }
        }, transform: { $0 }, consume: { value in
            received.append(value)
            return value < 9
        })
        #expect(received == Array(0...9))
        #expect(made.withLock { $0 } < 100, "the producer stopped soon after the consumer")
    }

    @Test func aConsumerThatThrowsEndsEveryThread() {
        #expect(throws: Stop.self) {
            try Parallel.pipeline(workers: 2, produce: { hand in
                for value in 0..<100_000 { guard hand(value) else { return } }
            }, transform: { $0 }, consume: { (value: Int) throws(Stop) -> Bool in
                if value == 5 { throw Stop() }
                return true
            })
        }
    }
}
