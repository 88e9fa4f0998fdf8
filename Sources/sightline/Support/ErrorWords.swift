import CloudCore
import DeviceStore
import Snapshot

// The libraries' errors say what is wrong in their own terms; on the command
// line, an error that a flag answers also names the flag.

/// `message` with the flag that answers it, when one does.
private func namingTheFlag(_ message: String, keyRequired: Bool, destinationExists: Bool = false) -> String {
    if keyRequired { return "\(message): give its key with --key-file" }
    if destinationExists { return "\(message): --force restores over it" }
    return message
}

extension DeviceStoreError {
    var commandLineMessage: String {
        namingTheFlag(message, keyRequired: code == .keyRequired, destinationExists: code == .destinationExists)
    }
}

extension CloudError {
    var commandLineMessage: String {
        namingTheFlag(message, keyRequired: code == .keyRequired, destinationExists: code == .destinationExists)
    }
}

extension SnapshotError {
    var commandLineMessage: String {
        namingTheFlag(message, keyRequired: code == .keyRequired)
    }
}
