import IndexModel
import Synchronization

/// The keys of enrolled devices as ingest has read them, so a frame does not
/// read its device's row again. A device is enrolled once and its key never
/// changes, so an entry stays true; a device not (yet) enrolled is not
/// remembered. At most `limit` devices are kept: one more forgets them all,
/// and each is read again at its next frame (a keyed row by its primary
/// key), so a cloud of a million devices holds at most `limit` names and
/// keys here, not those of every device that ever sent a frame.
package final class EnrolledKeys: Sendable {
    package let limit: Int
    private let keys = Mutex<[DeviceStream: [UInt8]]>([:])

    /// 262,144 devices.
    package static let defaultLimit = 1 << 18

    package init(limit: Int = EnrolledKeys.defaultLimit) {
        precondition(limit > 0, "a memory of no devices")
        self.limit = limit
    }

    package func key(of stream: DeviceStream) -> [UInt8]? {
        keys.withLock { $0[stream] }
    }

    package func remember(_ key: [UInt8], of stream: DeviceStream) {
        keys.withLock { keys in
            if keys[stream] == nil && keys.count >= limit { keys.removeAll(keepingCapacity: true) }
            keys[stream] = key
        }
    }

    /// Forgets `stream`'s key (a device found not enrolled after all).
    package func forget(_ stream: DeviceStream) {
        keys.withLock { _ = $0.removeValue(forKey: stream) }
    }

    /// How many devices it holds now.
    package var count: Int {
        keys.withLock { $0.count }
    }
}
