import ByteCoding
import CloudCore
import CloudPostgres
import CloudSQLite
import DeviceStore
import Foundation
import IndexModel
import Logging
import SyncWire

/// `bench rebuild --db postgres://…`: how fast the PostgreSQL backend
/// replays its log into fresh projections.
///
/// Untimed: a new database on the server the URL names, filled as `bench
/// rebuild` fills its file (the devices' frames straight to `ingest`).
/// Timed: `rebuildProjections()`, then a check that the digest is
/// unchanged. Baseline in the same run: the least any rebuild must do,
/// reading every log row's payload from PostgreSQL in one statement and
/// inflating it.
struct PostgresRebuildBenchmark {
    let devices: Int
    let callsPerDevice: Int
    let seed: UInt64
    let databases: BenchDatabases

    func run(progress: (String) -> Void) throws -> (result: RebuildBenchmark.Result, serverVersion: String) {
        let location = try databases.make("rebuild")
        var logger = Logger(label: "sightline.bench")
        logger.logLevel = .critical
        let clock = ManualClock(Timestamp(millisecondsSince1970: 1_795_000_000_000))
        let cloud = try PostgresCloud(at: location, password: databases.password, options: PostgresCloudOptions(
            store: CloudOptions(clock: clock, random: SeededRandom(seed: seed), threshold: 3), poolSize: 1, logger: logger))
        defer { cloud.close() }
        var result = try RebuildBenchmark.fillAndRebuild(cloud, devices: devices, callsPerDevice: callsPerDevice, seed: seed,
                                                         clock: clock, progress: progress)

        progress("baseline: reading and inflating every log row")
        let pool = databases.pool(location)
        defer { pool.close() }
        let inflated = try pool.withSession { session in
            // Untimed: the connection is opened.
            _ = try session.query("SELECT 1")
            let rawStart = ContinuousClock.now
            var inflated = 0
            for row in try session.query("SELECT codec, payload, uncompressed_length FROM cloud_log ORDER BY app, seq") {
                // A frame deflated against a dictionary is logged stored.
                let payload = try row[1].bytea
                inflated += try row[0].int64 == Int64(UploadFrame.Codec.deflate.rawValue)
                    ? Deflate.decompress(payload, limit: Int(try row[2].int64)).count : payload.count
            }
            result.rawSeconds = rawStart.duration(to: .now).seconds
            return inflated
        }
        guard inflated > 0 || result.messages == 0 else { throw BenchError(message: "the baseline inflated nothing") }
        return (result, try PostgresSyncBenchmark.serverVersion(databases, location))
    }
}
