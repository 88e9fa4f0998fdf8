import CloudCore
import CloudSQLite
import DeviceStore
import Foundation
import IndexModel
import Snapshot
import SyncWire

/// Restore drills: one backup, one loss, one restore, measured.
extension Simulator {
    // MARK: - Restore drills

    /// The drill's backup: device 0's store, or the cloud.
    func drillBackup() throws {
        guard var drill else { return }
        drill.backupAt = world.milliseconds
        switch drill.side {
        case .device:
            let device = devices[0]
            try takeBackup(device)
            drill.backup = device.backups.last
        case .cloud:
            try takeCloudSnapshot()
            drill.backupLogRows = try cloudHost.cloud?.stats().logRows
        }
        self.drill = drill
    }

    /// Deletes the store the drill is about; the restore follows after a
    /// while (the time it takes to notice and fetch the backup).
    func drillDestroy() throws {
        guard var drill, drill.backupAt != nil else { return }
        drill.destroyedAt = world.milliseconds
        switch drill.side {
        case .device:
            let device = devices[0]
            dropSession(device)
            // What the wipe destroys: the journal events after the backup.
            let from = (drill.backup?.journalHead ?? .none).next
            var kinds: [String: Int] = [:]
            _ = try device.store.scanJournal(from: from) { record in
                kinds[(try record.event()).kind.name, default: 0] += 1
                return true
            }
            drill.lostEventKinds = kinds
            device.offlineUntil = world.milliseconds + Simulator.drillOutage
        case .cloud:
            crashCloud(restore: false)
            try cloudHost.destroyStore()
        }
        self.drill = drill
        queue.schedule(.drillRestore, at: world.milliseconds + Simulator.drillOutage)
    }

    func drillRestore() throws {
        guard var drill else { return }
        let wall = ContinuousClock.now
        switch drill.side {
        case .device:
            let device = devices[0]
            guard let backup = drill.backup else { return }
            try restore(device, from: backup)
            device.offlineUntil = 0
        case .cloud:
            if let back = options.drillCutBack, let backupAt = drill.backupAt {
                cloudHost.restoreThrough = Timestamp(millisecondsSince1970: backupAt - back)
            }
            beginCloudRestore()
            try bringCloudUp(restore: true)
            drill.restoredLogRows = try cloudHost.cloud?.stats().logRows
        }
        drill.restoredAt = world.milliseconds
        drill.restoreWall = ContinuousClock.now - wall
        // Caught up: the cloud acknowledged what the devices held at the restore.
        for device in drill.side == .device ? [devices[0]] : devices {
            drill.targets[device.number] = try device.store.syncStatus().head
        }
        self.drill = drill
        try drillCaughtUp()
    }

    static let drillOutage: Int64 = 10_000

    func drillCaughtUp() throws {
        guard var drill, drill.restoredAt != nil, drill.caughtUpAt == nil, try drillBehind().isEmpty else { return }
        drill.caughtUpAt = world.milliseconds
        self.drill = drill
    }

    /// The devices whose outbox head at the restore the cloud has not yet
    /// acknowledged, in device order: what each held, what is acknowledged.
    func drillBehind() throws -> [(device: Int, held: OutboxPosition, acknowledged: OutboxPosition)] {
        guard let drill else { return [] }
        return try drill.targets.sorted { $0.key < $1.key }.compactMap { number, target in
            let acknowledged = try devices[number].store.syncStatus().acknowledged
            return acknowledged < target ? (number, target, acknowledged) : nil
        }
    }
}
