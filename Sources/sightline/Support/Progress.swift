import ArgumentParser
import Foundation
import Simulation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `--quiet` and `--progress-every`, for every command that reports progress.
struct ProgressOption: ParsableArguments {
    @Flag(name: .long, help: "Print no progress on stderr.")
    var quiet = false

    @Option(name: .long, help: ArgumentHelp("Seconds between progress lines when stderr is not a terminal.", valueName: "seconds"))
    var progressEvery: Double = 10

    func validate() throws {
        guard progressEvery.isFinite, (0.1...86_400).contains(progressEvery) else {
            throw ValidationError("--progress-every must be between 0.1 and 86400 seconds")
        }
    }

    /// A bar on a terminal, a line every `--progress-every` seconds otherwise, nothing when quiet.
    var mode: ProgressLine.Mode {
        quiet ? .off : isatty(STDERR_FILENO) == 1 ? .terminal : .lines(every: progressEvery)
    }
}

/// A long command's progress on stderr, by the work done and the time
/// left: on a terminal a bar redrawn every half second, otherwise a line
/// every 10 seconds (a log, a CI job; `--progress-every`), and nothing
/// with `--quiet`.
///
/// The work reports what it has done with `update`, which only stores it,
/// so that the work pays nothing for the drawing; a thread of the line's
/// own draws, so the line moves (its clock, at least) while one long step
/// runs, until `finish()`, which every user calls (in a `defer`). The time
/// left is the phase's elapsed time scaled by the work left, shown once a
/// second of the phase has passed.
final class ProgressLine: Sendable {
    enum Mode: Sendable, Equatable {
        /// A bar redrawn every half second.
        case terminal
        /// A line every so many seconds.
        case lines(every: Double)
        case off
    }

    /// What the work has reported.
    struct State: Sendable {
        /// What is being done now ("calls", "converging", a benchmark's step).
        var phase: String
        var done: Int = 0
        /// Nil while the amount of work is unknown: only the time is shown.
        var total: Int?
        var unit: String
        var phaseStarted = ContinuousClock.now
    }

    let mode: Mode
    private let state: Mutex<State>
    private let started = ContinuousClock.now
    /// Whether the drawing thread runs.
    private let drawing = Mutex(false)
    private let stopped = Mutex(false)
    private let write: @Sendable (String) -> Void

    /// Starts reporting `phase` of `total` `unit`s (nil: unknown).
    init(mode: Mode, phase: String, total: Int?, unit: String,
         write: @escaping @Sendable (String) -> Void = { FileHandle.standardError.write(Data($0.utf8)) }) {
        self.mode = mode
        self.write = write
        state = Mutex(State(phase: phase, total: total, unit: unit))
        let interval: Double
        switch mode {
        case .off: return
        case .terminal: interval = 0.5
        case .lines(let every): interval = every
        }
        let thread = Thread { [self] in
            var last = ContinuousClock.now
            while !stopped.withLock({ $0 }) {
                Thread.sleep(forTimeInterval: min(0.1, interval / 2))
                guard ContinuousClock.now - last >= .milliseconds(Int64(interval * 1000)) else { continue }
                last = ContinuousClock.now
                draw()
            }
            drawing.withLock { $0 = false }
        }
        thread.name = "progress"
        drawing.withLock { $0 = true }
        thread.start()
    }

    /// The work done so far in this phase.
    func update(done: Int) {
        state.withLock { $0.done = done }
    }

    /// A new phase, with its own amount of work and clock.
    func begin(phase: String, total: Int?, unit: String) {
        state.withLock { state in
            state = State(phase: phase, total: total, unit: unit)
        }
    }

    /// A simulation's progress: its calls, then its convergence, then its checks.
    func hear(_ progress: SimulationProgress) {
        state.withLock { state in
            switch progress {
            case .preparing(let done, let total):
                if state.phase != "setting devices up" { state = State(phase: "setting devices up", total: total, unit: "devices") }
                state.done = done
            case .day(let seconds):
                if state.phase != "the day" { state = State(phase: "the day", total: 86_400, unit: "virtual s") }
                state.done = seconds
            case .calls(let done, let total):
                if state.phase != "calls" { state = State(phase: "calls", total: total, unit: "calls") }
                state.done = done
            case .converging(let seconds):
                if state.phase != "converging" { state = State(phase: "converging", total: nil, unit: "virtual s synced") }
                state.done = seconds
            case .checking:
                if state.phase != "checking" { state = State(phase: "checking the invariants", total: nil, unit: "") }
            }
        }
    }

    /// Stops drawing and clears the bar (a terminal) so the command's own output starts clean.
    func finish() {
        let wasStopped = stopped.withLock { stopped in
            defer { stopped = true }
            return stopped
        }
        guard !wasStopped, mode != .off else { return }
        // Wait for the drawing thread to see the flag, so no bar is drawn after this.
        while drawing.withLock({ $0 }) { Thread.sleep(forTimeInterval: 0.01) }
        if mode == .terminal { write("\r\u{1B}[K") }
    }

    private func draw() {
        let now = ContinuousClock.now
        let text = ProgressLine.describe(state.withLock { $0 }, elapsed: (now - started).seconds,
                                         inPhase: (now - state.withLock { $0.phaseStarted }).seconds, bar: mode == .terminal)
        write(mode == .terminal ? "\r\u{1B}[K" + text : text + "\n")
    }

    /// The line for `state`: `[#####....] 42% 4,200/10,000 calls, 12 s, about 16 s left`,
    /// or without a total `converging: 1,234 rounds, 12 s`.
    static func describe(_ state: State, elapsed: Double, inPhase: Double, bar: Bool) -> String {
        var text = ""
        if let total = state.total, total > 0 {
            let fraction = min(1, Double(state.done) / Double(total))
            let percent = Int(fraction * 100)
            if bar {
                let filled = Int(fraction * 25)
                text += "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: 25 - filled) + "] "
            }
            text += "\(state.phase): \(percent)% \(ProgressLine.grouped(state.done))/\(ProgressLine.grouped(total)) \(state.unit), \(duration(elapsed))"
            let left = inPhase * Double(total - state.done) / Double(max(state.done, 1))
            if state.done > 0, inPhase >= 1, left >= 1 {
                text += ", about \(duration(left)) left"
            }
        } else {
            text += "\(state.phase): "
            if state.done > 0 { text += "\(ProgressLine.grouped(state.done)) \(state.unit), " }
            text += duration(elapsed)
        }
        return text
    }

    /// 1234567 as "1,234,567".
    static func grouped(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var text = ""
        for (index, digit) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { text += "," }
            text.append(digit)
        }
        return (value < 0 ? "-" : "") + text
    }

    /// "42 s", "3 min 04 s", "1 h 02 min".
    static func duration(_ seconds: Double) -> String {
        let whole = Int(max(0, seconds.isFinite ? min(seconds, 1e9) : 0).rounded())
        if whole >= 3600 { return String(format: "%d h %02d min", whole / 3600, whole / 60 % 60) }
        if whole >= 60 { return String(format: "%d min %02d s", whole / 60, whole % 60) }
        return "\(whole) s"
    }
}
