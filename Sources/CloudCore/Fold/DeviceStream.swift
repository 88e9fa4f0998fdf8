import IndexModel

/// A device's stream as the cloud keeps it: device names are per app, so
/// the app and the name together name one device's log rows, epochs and
/// votes.
package struct DeviceStream: Hashable, Sendable, Comparable {
    package let app: AppID
    package let device: DeviceID

    package init(app: AppID, device: DeviceID) {
        self.app = app
        self.device = device
    }

    package static func < (a: DeviceStream, b: DeviceStream) -> Bool {
        a.app != b.app ? a.app < b.app : a.device < b.device
    }
}
