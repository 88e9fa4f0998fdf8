import Synchronization

/// How many public searches run at once: at most `total`, and at most
/// `perAddress` from one client address. A search holds one of the blocking
/// pool's threads, which syncs need too; a full gate refuses at once (429)
/// rather than queueing, so searches can never make a sync wait for a thread.
final class SearchGate: Sendable {
    private let total: Int
    private let perAddress: Int
    private let state = Mutex(State())

    private struct State {
        var running = 0
        var byAddress: [String: Int] = [:]
    }

    init(total: Int, perAddress: Int) {
        self.total = max(total, 1)
        self.perAddress = max(perAddress, 1)
    }

    /// Takes a place for a search from `address`; false when the gate is
    /// full for it. Every place taken is given back with `leave`.
    func enter(_ address: String) -> Bool {
        state.withLock { state in
            let mine = state.byAddress[address, default: 0]
            guard state.running < total, mine < perAddress else { return false }
            state.running += 1
            state.byAddress[address] = mine + 1
            return true
        }
    }

    func leave(_ address: String) {
        state.withLock { state in
            state.running -= 1
            let mine = state.byAddress[address, default: 1] - 1
            state.byAddress[address] = mine > 0 ? mine : nil
        }
    }
}
