import CloudCore
import DeviceStore
import Snapshot

// The libraries' errors say what is wrong in their own terms; on the command
// line, an error that a flag answers also names the flag.

extension DeviceStoreError {
    var commandLineMessage: String {
        switch code {
        case .keyRequired: "\(message): give its key with --key-file"
        case .destinationExists: "\(message): --force restores over it"
        default: message
        }
    }
}

extension CloudError {
    var commandLineMessage: String {
        switch code {
        case .keyRequired: "\(message): give its key with --key-file"
        case .destinationExists: "\(message): --force restores over it"
        default: message
        }
    }
}

extension SnapshotError {
    var commandLineMessage: String {
        code == .keyRequired ? "\(message): give its key with --key-file" : message
    }
}
