import CloudCore
import Crypto
import Foundation
import Logging
import NIOPosix

/// `cloud serve --snapshot-every`: a backup snapshot of the cloud store at
/// every tick, keeping the newest few. Each one moves the devices'
/// backed-up watermark, which is what lets them drop outbox messages, and
/// then lets the cloud purge the withdrawn content the backup made durable.
///
/// The ticks are given: `ticks(every:)` in a server, any stream in a test,
/// which then needs no clock and no sleeping.
public struct PeriodicSnapshots: Sendable {
    let cloud: any CloudStore
    let directory: String
    let kept: Int
    /// The key that seals each snapshot (they hold every device key), as
    /// bytes, which cross threads; nil only when the operator asked for
    /// plaintext snapshots.
    let key: [UInt8]?
    let logger: Logger
    /// Where each snapshot's outcome is reported (`/metrics`, the status page).
    let status: SnapshotStatus?

    public init(cloud: any CloudStore, directory: String, kept: Int, key: SymmetricKey?, logger: Logger,
                status: SnapshotStatus? = nil) {
        self.cloud = cloud
        self.status = status
        self.directory = directory
        self.kept = max(kept, 1)
        self.key = key.map { $0.withUnsafeBytes { Array($0) } }
        self.logger = logger
    }

    /// A tick every `seconds`, the first after `seconds`, until the task
    /// that reads them is cancelled.
    public static func ticks(every seconds: Int) -> AsyncStream<Void> {
        AsyncStream { continuation in
            let task = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(seconds))
                    if Task.isCancelled { break }
                    continuation.yield()
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Takes a snapshot at each tick, until the ticks end or the task is cancelled.
    public func run(ticks: AsyncStream<Void>) async {
        for await _ in ticks {
            if Task.isCancelled { return }
            await takeSnapshot()
        }
    }

    /// One backup: the snapshot written (on NIO's blocking pool, beside
    /// ingest, not on Swift's cooperative pool), withdrawn content purged,
    /// and snapshots beyond the newest `kept` removed. Returns the
    /// snapshot's manifest, or nil when it could not be written (logged).
    @discardableResult
    public func takeSnapshot() async -> CloudSnapshotManifest? {
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let name = "cloud-\(cloud.now.millisecondsSince1970).snap"
        let path = (directory as NSString).appendingPathComponent(name)
        let written = try? await NIOThreadPool.singleton.runIfActive { [cloud, key] in
            Result { () throws(CloudError) in try cloud.snapshot(to: path, key: key.map { SymmetricKey(data: $0) }) }
        }
        let manifest: CloudSnapshotManifest
        switch written {
        case .success(let written)?:
            manifest = written
            status?.written(file: name, logRows: manifest.logRows)
            logger.info("snapshot written", metadata: ["file": "\(name)", "logRows": .stringConvertible(manifest.logRows)])
        case .failure(let error)?:
            status?.failed()
            logger.error("snapshot failed", metadata: ["reason": "\(error.message)"])
            return nil
        case nil:
            return nil
        }
        // What this backup made durable below K goes from the log.
        let purged = try? await NIOThreadPool.singleton.runIfActive { [cloud] in
            Result { () throws(CloudError) in try cloud.purgeWithdrawnContent(dryRun: false) }
        }
        switch purged {
        case .success(let report)? where report.contentMessages > 0:
            status?.purged(contentMessages: report.contentMessages)
            logger.info("withdrawn content purged",
                        metadata: ["messages": .stringConvertible(report.contentMessages), "rows": .stringConvertible(report.rows.count)])
        case .failure(let error)?:
            logger.error("purge failed", metadata: ["reason": "\(error.message)"])
        default:
            break
        }
        let snapshots = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasPrefix("cloud-") && $0.hasSuffix(".snap") }
            .sorted { (Int64($0.dropFirst(6).dropLast(5)) ?? 0) < (Int64($1.dropFirst(6).dropLast(5)) ?? 0) }
        for old in snapshots.dropLast(kept) {
            try? FileManager.default.removeItem(atPath: (directory as NSString).appendingPathComponent(old))
        }
        return manifest
    }
}
