/// What the identifier and sequence number types share: a raw value that
/// orders them and prints them. Each is a type of its own, so that one kind
/// never passes for another (an app for a device, an outbox seq for a journal
/// seq); the raw value is for where a value is encoded, bound or printed.
public protocol Identifier: Hashable, Sendable, Comparable, CustomStringConvertible {
    associatedtype RawValue: Hashable, Sendable, Comparable, CustomStringConvertible
    var rawValue: RawValue { get }
}

// Inlinable, so that each identifier's ordering and printing is specialized
// where it is used: through the protocol, every comparison of two outbox
// positions in another module would go through witness tables and generic
// metadata.
extension Identifier {
    @inlinable public var description: String { rawValue.description }

    @inlinable public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The identity of one device store, chosen from the injected random source when
/// the store is created and never changed afterwards.
public struct DeviceID: Identifier {
    public let rawValue: String

    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }
}

/// The app a device store belongs to: its tenant in the cloud, and the salt of
/// its public hashes. Chosen when the store is created and never changed.
public struct AppID: Identifier {
    public let rawValue: String

    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }
}

/// A period of a store's life between two restores. A restore starts a new epoch,
/// so an (epoch, seq) pair is never used twice by one store.
public struct Epoch: Identifier {
    public let rawValue: UInt64

    public init(_ rawValue: UInt64) {
        self.rawValue = rawValue
    }

    /// Before every epoch: no store writes in it, so a position there is
    /// before anything (`OutboxPosition.nothing`).
    public static let beforeFirst = Epoch(0)
    public static let first = Epoch(1)
}

/// The position of an event in the event journal. Dense and increasing: the first
/// event has seq 1 and each appended event has the seq of its predecessor plus one.
public struct Seq: Identifier {
    public let rawValue: UInt64

    public init(_ rawValue: UInt64) {
        self.rawValue = rawValue
    }

    /// The seq before the first event: the head of an empty journal.
    public static let none = Seq(0)

    public var next: Seq { Seq(rawValue + 1) }

    /// How many events come after `earlier` up to and including this seq:
    /// 0 when this seq is not after it.
    public func count(after earlier: Seq) -> UInt64 {
        rawValue > earlier.rawValue ? rawValue - earlier.rawValue : 0
    }
}

/// The position of a message in one epoch of a device's outbox (`OutboxPosition`
/// in SyncWire pairs it with its epoch). Dense from 1 within each epoch; 0 is
/// "before the first message". A counter of its own, unrelated to the event
/// journal's `Seq`: an outbox seq says nothing about how many events passed.
///
/// It offers what positions need, the next and the previous seq, how many
/// seqs a range spans and the renumbering of an epoch advance, and no
/// arithmetic: an outbox seq plus a journal seq, or plus a number, names
/// nothing.
public struct OutboxSeq: Identifier {
    public let rawValue: UInt64

    public init(_ rawValue: UInt64) {
        self.rawValue = rawValue
    }

    /// Before the first message of an epoch.
    public static let beforeFirst = OutboxSeq(0)
    /// The first message of an epoch.
    public static let first = OutboxSeq(1)

    public var next: OutboxSeq { OutboxSeq(rawValue + 1) }

    /// The seq before this one; nil for `beforeFirst`, which has none.
    public var previous: OutboxSeq? { rawValue == 0 ? nil : OutboxSeq(rawValue - 1) }

    /// How many seqs there are from this one through `last`: 0 when `last`
    /// is before this one. Never traps; a count past `Int.max` (which no
    /// checked position comes near) is `Int.max`.
    public func count(through last: OutboxSeq) -> Int {
        guard last >= self else { return 0 }
        let before = count(before: last)
        return before == Int.max ? before : before + 1
    }

    /// How many seqs there are from this one up to `end`, without `end`: the
    /// offset of `end`'s message among messages that start at this seq. 0
    /// when `end` is not after this one.
    public func count(before end: OutboxSeq) -> Int {
        guard end > self else { return 0 }
        let span = end.rawValue - rawValue
        return span > UInt64(Int.max) ? Int.max : Int(span)
    }

    /// This seq's number once the seqs through `kept` stay behind and the
    /// ones after them are numbered again from 1 (an epoch advance,
    /// `JournalEvent.epochAdvanced`); `beforeFirst` when this seq stays.
    public func renumbered(after kept: OutboxSeq) -> OutboxSeq {
        self > kept ? OutboxSeq(rawValue - kept.rawValue) : .beforeFirst
    }
}

/// The number of the API call that appended an event. All events of one call (an
/// `index` of many items, a batch ending with its client state) share it, so the
/// journal can say which call, and which batch, produced an event.
public struct CallID: Identifier {
    public let rawValue: UInt64

    public init(_ rawValue: UInt64) {
        self.rawValue = rawValue
    }

    public var next: CallID { CallID(rawValue + 1) }
}
