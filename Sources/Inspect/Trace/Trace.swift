import DeviceStore
import IndexModel
import SyncWire

/// What `sightline trace` follows: an item or activity identifier, a web page
/// URL, a public hash, or a device.
public enum TraceTarget: Hashable, Sendable {
    /// An item's unique identifier, an activity's key or persistent
    /// identifier, an identifier activities are related to, or a result
    /// reference.
    case identifier(String)
    /// An activity's web page URL (and the result reference it is).
    case url(String)
    case hash(PublicHash)
    /// A device: its number in a run folder, or its id.
    case device(String)

    /// Reads a target as a person types it: `device:N`, `hash:HEX`, `url:U`
    /// or `id:X` say what it is; without a prefix, 64 hexadecimal digits are a
    /// public hash, an `http://` or `https://` address a URL, and anything
    /// else an identifier (an activity key such as `id:pub-3` is one too).
    public init(parsing text: String) throws(TraceError) {
        func rest(_ prefix: String) -> String { String(text.dropFirst(prefix.count)) }
        guard !text.isEmpty else { throw TraceError("the target is empty: give an identifier, a URL, a public hash or device:N") }
        guard text.utf8.count <= 4_096 else { throw TraceError("the target is \(text.utf8.count) bytes; the limit is 4096") }
        if text.hasPrefix("device:") {
            guard !rest("device:").isEmpty else { throw TraceError("device: names no device: give its number or id") }
            self = .device(rest("device:"))
        } else if text.hasPrefix("hash:") {
            guard let hash = PublicHash(hex: rest("hash:")) else {
                throw TraceError("hash:\(TextRule.printable(rest("hash:"))) is not a public hash: 64 hexadecimal digits")
            }
            self = .hash(hash)
        } else if text.hasPrefix("url:") {
            self = .url(rest("url:"))
        } else if let hash = PublicHash(hex: text) {
            self = .hash(hash)
        } else if text.hasPrefix("https://") || text.hasPrefix("http://") {
            self = .url(text)
        } else {
            self = .identifier(text)
        }
    }

    public var description: String {
        switch self {
        case .identifier(let id): "identifier \(TextRule.printable(id))"
        case .url(let url): "URL \(TextRule.printable(url))"
        case .hash(let hash): "public hash \(hash.hex)"
        case .device(let device): "device \(TextRule.printable(device))"
        }
    }
}

/// A trace that could not be made, in words.
public struct TraceError: Error, CustomStringConvertible, Sendable {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }
}

/// One device store a trace reads, and how the trace names it.
public struct TraceDevice {
    /// `device 3` in a run folder, else the store's file name.
    public let label: String
    public let store: DeviceStore

    public init(label: String, store: DeviceStore) {
        self.label = label
        self.store = store
    }
}

/// One line of a trace: something a device journaled or holds in its outbox,
/// or something the cloud's log shows and what the cloud did with it.
public struct TraceStep: Sendable {
    public enum Place: Hashable, Sendable {
        /// A device store, by the trace's label for it.
        case device(label: String, id: DeviceID)
        case cloud
    }

    /// Where the step's position is.
    public enum Position: Hashable, Sendable {
        /// A journal row of the device store.
        case journal(seq: UInt64, epoch: UInt64, call: UInt64)
        /// A message waiting in the device's outbox, appended by a journal row.
        case outbox(epoch: UInt64, seq: UInt64, journalSeq: UInt64)
        /// A row of the cloud log, from `device`, the messages `epoch`
        /// `firstSeq…lastSeq` (`seq`: the message's own, when the step is one).
        case log(app: AppID, row: Int64, device: DeviceID, sender: String?, epoch: UInt64, firstSeq: UInt64, lastSeq: UInt64,
                 seq: UInt64?)
        /// What the cloud holds now of a device in an app.
        case cloudState(app: AppID, device: DeviceID, sender: String?)
    }

    public let time: Timestamp
    public let place: Place
    public let position: Position
    /// What happened, as a name a machine can match: a journal event kind,
    /// an outbox message kind, `frame` for a whole log row.
    public let event: String
    public let text: String
    /// The public hash the step is about, when it is about one.
    public let hash: PublicHash?
    /// What the cloud did with a logged message.
    public let decisions: [TraceDecision]
    /// The order the trace read steps in, which breaks ties of time.
    let order: Int
}

/// Why one public hash is or is not public, in counts only: the cloud's
/// privacy rules never let it say which devices voted.
public struct PublicVerdict: Sendable {
    public let app: AppID
    public let hash: PublicHash
    public let isPublic: Bool
    public let liveVotes: Int64
    public let threshold: Int
    public let agreement: Int
    /// Votes withdrawn and not cast again.
    public let withdrawn: Int
    /// While wanted: the live voters' offers, and the largest group of them
    /// that agree byte for byte.
    public let offers: Int
    public let versions: Int
    public let largestAgreeing: Int
    /// Of the device stores the trace read: how many hold a live vote for
    /// the hash, how many of those the cloud counts, and how many of the
    /// rest wait in their outbox.
    public let devicesHolding: Int
    public let devicesCounted: Int
    public let devicesWaiting: Int
    /// The reasons, one sentence each, most important first.
    public let reasons: [String]
}

/// A merged timeline across device stores and a cloud store.
public struct Trace: Sendable {
    /// The trace with only the steps of `device`: its own, and the cloud's
    /// of what its log holds from it. The verdicts stay the whole cloud's.
    public func only(device: DeviceID) -> Trace {
        let kept = steps.filter { step in
            switch (step.place, step.position) {
            case (.device(_, let id), _): id == device
            case (.cloud, .log(_, _, let sender, _, _, _, _, _)): sender == device
            case (.cloud, .cloudState(_, let id, _)): id == device
            default: false
            }
        }
        return Trace(target: target, steps: kept, verdicts: verdicts, problems: problems, devicesRead: devicesRead, cloudRead: cloudRead)
    }

    public let target: TraceTarget
    /// Every step, in time order (ties in the order read).
    public let steps: [TraceStep]
    /// For each public hash the trace met, why it is public or not.
    public let verdicts: [PublicVerdict]
    /// What could not be read, or where the cloud's projections differ from
    /// its log; a trace with problems is partial.
    public let problems: [String]
    /// Device stores read, and whether a cloud store was.
    public let devicesRead: Int
    public let cloudRead: Bool
}
