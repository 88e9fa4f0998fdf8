import IndexModel
import Synchronization
import SyncWire

/// The frame dictionaries a cloud process holds for its devices
/// (`FrameDictionary`): for each device, the two it made last, so that a
/// frame retried after its ack was lost still finds the one it was deflated
/// against. They live in memory only. A dictionary not held (the process
/// restarted, the device's frames went to another server, or it was let go
/// to stay within `capacityBytes`) is recovered from the device's newest
/// `recoveryRows` log rows (`CloudStore.open`); when they do not make it,
/// the frame is answered `unknownBase` and the device sends its messages
/// again deflated alone, so losing one costs bytes on the wire, never a
/// message.
///
/// Each device holds at most two dictionaries of 32 KiB, whatever it sends,
/// and the devices used longest ago go first when the total passes
/// `capacityBytes`: a hostile device can push others' dictionaries out, and
/// so cost them a resend, but it cannot grow the cloud's memory.
public final class FrameDictionaries: Sendable {
    private struct Device: Hashable {
        let app: AppID
        let device: DeviceID
    }

    private struct Held {
        /// Oldest first; at most `perDevice`.
        var dictionaries: [FrameDictionary]
        var lastUse: UInt64
        var bytes: Int { dictionaries.reduce(0) { $0 + $1.bytes.count } }
    }

    private struct State {
        var held: [Device: Held] = [:]
        var bytes = 0
        var uses: UInt64 = 0
        var recoveries = Recoveries()
    }

    /// How many dictionaries this process recovered from the log, and how
    /// many frames named one it could not recover.
    public struct Recoveries: Equatable, Sendable {
        public var recovered = 0
        public var unrecovered = 0
    }

    private static let perDevice = 2
    /// The total of the dictionaries' bytes held at once.
    public let capacityBytes: Int
    private let state = Mutex(State())

    /// The log rows a recovery reads, newest first. A device's dictionary
    /// holds the hashes of its frames since it started it, up to 1,024: one
    /// that holds a hash only older frames listed cannot be made from them,
    /// and the frame comes again alone. One recovery reads at most this many
    /// rows and hashes at most twice as many dictionaries.
    public static let recoveryRows = 64
    /// The rows a recovery reads first, and all it reads when they make
    /// the dictionary.
    public static let firstRecoveryRows = 4
    /// The uncompressed bytes of the rows one read of a recovery takes, at
    /// most: a payload may be 16 MiB, and a frame that names a dictionary
    /// costs its sender a few dozen bytes. A device's frames of a few
    /// thousand messages fit by the dozen.
    public static let recoveryBytes = 1 << 20

    /// How many of the newest rows, whose uncompressed lengths are
    /// `lengths` (newest first, as stored), fit in `maximumBytes` together:
    /// the rows up to the first that would pass it, or whose length is not
    /// a payload's.
    public static func rows(_ lengths: [Int64], within maximumBytes: Int) -> Int {
        var total: Int64 = 0
        for (index, length) in lengths.enumerated() {
            guard (0...Int64(WireLimits.maximumPayloadBytes)).contains(length), total + length <= Int64(maximumBytes) else { return index }
            total += length
        }
        return lengths.count
    }

    /// 64 MiB: the last two dictionaries of 1,024 devices that each list a
    /// thousand hashes or more, or of far more devices that list fewer.
    public static let defaultCapacityBytes = 64 << 20

    public init(capacityBytes: Int = defaultCapacityBytes) {
        self.capacityBytes = max(capacityBytes, 0)
    }

    /// The dictionary of `digest` that `device` of `app` made, if it is held.
    public func dictionary(app: AppID, device: DeviceID, digest: [UInt8]) -> FrameDictionary? {
        state.withLock { state in
            let key = Device(app: app, device: device)
            guard let held = state.held[key], let found = held.dictionaries.last(where: { $0.digest == digest }) else { return nil }
            state.uses += 1
            state.held[key]?.lastUse = state.uses
            return found
        }
    }

    /// Holds `dictionary` as the newest `device` of `app` made, letting go
    /// of its oldest beyond two and, past `capacityBytes`, of the devices
    /// used longest ago. An empty dictionary is not held: a frame names none.
    /// `recovered`: made from the log rather than from a frame this process
    /// acknowledged (counted in `recoveries`).
    public func keep(_ dictionary: FrameDictionary, app: AppID, device: DeviceID, recovered: Bool = false) {
        guard !dictionary.isEmpty else { return }
        state.withLock { state in
            if recovered { state.recoveries.recovered += 1 }
            let key = Device(app: app, device: device)
            state.uses += 1
            var held = state.held[key] ?? Held(dictionaries: [], lastUse: 0)
            state.bytes -= held.bytes
            held.dictionaries.removeAll { $0.digest == dictionary.digest }
            held.dictionaries.append(dictionary)
            held.dictionaries = Array(held.dictionaries.suffix(FrameDictionaries.perDevice))
            held.lastUse = state.uses
            state.held[key] = held
            state.bytes += held.bytes
            guard state.bytes > capacityBytes else { return }
            // Down to three quarters at once, so that the sort is paid for
            // by many keeps after it.
            for (evicted, entry) in state.held.sorted(by: { $0.value.lastUse < $1.value.lastUse }) {
                guard state.bytes > capacityBytes / 4 * 3 else { break }
                state.held[evicted] = nil
                state.bytes -= entry.bytes
            }
        }
    }

    /// Counts a frame whose dictionary the log did not make.
    public func noteUnrecovered() {
        state.withLock { $0.recoveries.unrecovered += 1 }
    }

    public var recoveries: Recoveries { state.withLock { $0.recoveries } }

    /// The bytes of the dictionaries held now.
    public var heldBytes: Int { state.withLock { $0.bytes } }
}
