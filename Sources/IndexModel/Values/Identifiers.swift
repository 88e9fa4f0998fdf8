/// The identity of one device store, chosen from the injected random source when
/// the store is created and never changed afterwards.
public struct DeviceID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: String

    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    public var description: String { rawValue }

    public static func < (lhs: DeviceID, rhs: DeviceID) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The app a device store belongs to: its tenant in the cloud, and the salt of
/// its public hashes. Chosen when the store is created and never changed.
public struct AppID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: String

    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    public var description: String { rawValue }

    public static func < (lhs: AppID, rhs: AppID) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A period of a store's life between two restores. A restore starts a new epoch,
/// so an (epoch, seq) pair is never used twice by one store.
public struct Epoch: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: UInt64

    public init(_ rawValue: UInt64) {
        self.rawValue = rawValue
    }

    public static let first = Epoch(1)

    public var description: String { String(rawValue) }

    public static func < (lhs: Epoch, rhs: Epoch) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The position of an event in the event journal. Dense and increasing: the first
/// event has seq 1 and each appended event has the seq of its predecessor plus one.
public struct Seq: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: UInt64

    public init(_ rawValue: UInt64) {
        self.rawValue = rawValue
    }

    /// The seq before the first event: the head of an empty journal.
    public static let none = Seq(0)

    public var next: Seq { Seq(rawValue + 1) }

    public var description: String { String(rawValue) }

    public static func < (lhs: Seq, rhs: Seq) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The number of the API call that appended an event. All events of one call (an
/// `index` of many items, a batch ending with its client state) share it, so the
/// journal can say which call, and which batch, produced an event.
public struct CallID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: UInt64

    public init(_ rawValue: UInt64) {
        self.rawValue = rawValue
    }

    public var next: CallID { CallID(rawValue + 1) }

    public var description: String { String(rawValue) }

    public static func < (lhs: CallID, rhs: CallID) -> Bool { lhs.rawValue < rhs.rawValue }
}
