import IndexModel
@testable import Simulation
import Testing

/// The simulated app's own log (`AppTruth`), which a restored store resumes
/// from, kept only back to the oldest state a backup holds.
@Suite struct AppTruthTests {
    private func note(_ number: Int) -> AppOperation {
        .index(index: "notes", items: [SearchableItem(uniqueIdentifier: "n-\(number)",
                                                      attributes: AttributeSet([.title: .string("Note \(number)")]))])
    }

    /// The operations a resume sends, without their batches.
    private func operations(_ batches: [AppOperation]) -> [AppOperation] {
        batches.flatMap { batch -> [AppOperation] in
            guard case .batch(let batch) = batch else { return [batch] }
            return batch.operations
        }
    }

    private func clientStates(_ batches: [AppOperation]) -> [Int?] {
        batches.map { batch in
            guard case .batch(let batch) = batch else { return nil }
            return AppTruth.position(batch.clientState)
        }
    }

    @Test func aStoreBackAtABackupsStateResumesWithTheOperationsSinceIt() {
        var truth = AppTruth()
        var made: [AppOperation] = []
        for number in 0..<3 {
            made.append(note(number))
            _ = truth.record(made.last!)
        }
        // Backups at positions 3 and then 5; the log keeps from the oldest.
        truth.keep(from: ["notes": 3])
        for number in 3..<5 {
            made.append(note(number))
            _ = truth.record(made.last!)
        }
        truth.keep(from: ["notes": 3])
        for number in 5..<250 {
            made.append(note(number))
            _ = truth.record(made.last!)
        }
        #expect(truth.positions == ["notes": 250])
        let fromThree = truth.resume(index: "notes", from: AppTruth.state(3))
        #expect(operations(fromThree) == Array(made[3...]))
        #expect(clientStates(fromThree) == [103, 203, 250], "batches of at most 100, each with the state after it")
        #expect(operations(truth.resume(index: "notes", from: AppTruth.state(200))) == Array(made[200...]))
        #expect(truth.resume(index: "notes", from: AppTruth.state(250)).isEmpty, "a store as far on as the log needs nothing")
        // The oldest backup goes: the log keeps from the next one's state.
        truth.keep(from: ["notes": 5])
        #expect(operations(truth.resume(index: "notes", from: AppTruth.state(5))) == Array(made[5...]))
    }

    @Test func aStateOlderThanTheKeptLogReindexesEveryItemAsNoStateDoes() {
        var truth = AppTruth()
        for number in 0..<10 { _ = truth.record(note(number)) }
        _ = truth.record(.delete(index: "notes", identifiers: ["n-4"]))
        // No backup: nothing is kept, and a store with an old state (or
        // none) is brought back whole from the app's items.
        for state in [AppTruth.state(2), nil] {
            let batches = truth.resume(index: "notes", from: state)
            let sent = operations(batches)
            #expect(sent.first == .deleteAll(index: "notes"))
            guard case .index(_, let items) = sent.last else {
                Issue.record("expected the current items, got \(sent)")
                continue
            }
            #expect(items.map(\.uniqueIdentifier) == (0..<10).filter { $0 != 4 }.map { "n-\($0)" }.sorted())
            #expect(clientStates(batches) == [11])
        }
        truth.keep(from: ["notes": 11])
        _ = truth.record(note(10))
        #expect(operations(truth.resume(index: "notes", from: AppTruth.state(11))) == [note(10)])
        #expect(operations(truth.resume(index: "notes", from: AppTruth.state(10))).first == .deleteAll(index: "notes"))
        truth.keep(from: [:])
        #expect(operations(truth.resume(index: "notes", from: AppTruth.state(11))).first == .deleteAll(index: "notes"),
                "with its last backup gone, the app keeps no operations")
    }
}
