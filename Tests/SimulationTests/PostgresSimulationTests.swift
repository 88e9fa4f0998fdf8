import CloudCore
import CloudPostgres
import CloudSQLite
import Foundation
import IndexModel
import PostgresTestSupport
import Simulation
import Testing

/// The simulator's embedded cloud on PostgreSQL: the same run, invariants
/// and digest as on SQLite, crashes, cloud restores and drills included.
@Suite struct PostgresSimulationTests {
    private func database(_ test: TestDatabase) -> PostgresCloudDatabase {
        PostgresCloudDatabase(location: test.location, password: test.password)
    }

    /// The run of `options` on SQLite, then on a new PostgreSQL database.
    private func onBothBackends(_ options: SimulationOptions) throws -> (sqlite: SimulationReport, postgres: SimulationReport) {
        let onSQLite = try Simulator(options: options).run()
        let test = try TestDatabase()
        var onPostgres = options
        onPostgres.cloudDatabase = database(test)
        return (onSQLite, try Simulator(options: onPostgres).run())
    }

    /// Seeds whose heavy faults crash the cloud and restore it from a backup
    /// (seeds 67 and 99 from one older than a device's first frame).
    @Test(arguments: [UInt64(67), 99, 94])
    func aSeedSimulatedOnPostgresGivesTheDigestItGivesOnSQLite(seed: UInt64) throws {
        let (onSQLite, report) = try onBothBackends(SimulationOptions(devices: 8, eventsPerDevice: 80, seed: seed, faults: .heavy,
                                                                      threshold: 3))
        #expect(report.passed, "seed \(seed) on PostgreSQL: \(report.failures.map(\.detail))")
        #expect(report.digest == onSQLite.digest, "seed \(seed) ran to another digest on PostgreSQL")
        #expect(report.faults[.cloudCrash, default: 0] > 0, "seed \(seed) never crashed the cloud")
    }

    /// Private popularity folds reports into the sketch on either backend
    /// alike: the same cells, estimates and digest.
    @Test func aPrivatePopularityRunOnPostgresGivesTheDigestAndTheErrorsItGivesOnSQLite() throws {
        var options = SimulationOptions(devices: 8, eventsPerDevice: 80, seed: 67, faults: .heavy, threshold: 3)
        options.popularity = try PrivatePopularity(epsilonThousandths: 2_000, dailyBudgetThousandths: 8_000, hashes: 64, buckets: 1024)
        let (onSQLite, report) = try onBothBackends(options)
        #expect(report.passed, "on PostgreSQL: \(report.failures.map(\.detail))")
        #expect(report.digest == onSQLite.digest && report.popularity == onSQLite.popularity)
        #expect((report.popularity?.reports ?? 0) > 0, "the run counted no report")
    }

    @Test func aCloudRestoreDrillOnPostgresLosesNothingAndCountsNothingTwice() throws {
        let test = try TestDatabase()
        let drill = try DrillReport.run(side: .cloud, seed: 2, cloudDatabase: database(test))
        #expect(drill.passed && drill.doubleCounts == 0 && drill.caughtUp, "\(drill.simulation.failures.map(\.detail))")
        #expect(drill.simulation.digest == (try DrillReport.run(side: .cloud, seed: 2)).simulation.digest)
    }

    /// A restore cut back to an instant runs to the same digest on either backend.
    @Test func aCloudDrillCutBackToAnInstantRunsAlikeOnPostgres() throws {
        let test = try TestDatabase()
        let drill = try DrillReport.run(side: .cloud, devices: 6, eventsPerDevice: 80, seed: 2, cloudDatabase: database(test),
                                        cutBackMilliseconds: 30_000)
        #expect(drill.passed && drill.logRowsCut > 0, "\(drill.simulation.failures.map(\.detail))")
        let onSQLite = try DrillReport.run(side: .cloud, devices: 6, eventsPerDevice: 80, seed: 2, cutBackMilliseconds: 30_000)
        #expect(drill.simulation.digest == onSQLite.simulation.digest && drill.logRowsCut == onSQLite.logRowsCut)
    }

    /// The oracle accounts for everything the cloud counts, so a run refuses
    /// a database that holds a cloud store already.
    @Test func aDatabaseThatHoldsACloudStoreIsRefused() throws {
        let test = try TestDatabase()
        _ = try PostgresCloud(at: test.location, password: test.password)
        var options = SimulationOptions(devices: 2, eventsPerDevice: 4, seed: 1, faults: .none)
        options.cloudDatabase = database(test)
        let error = try #require(throws: SimulationError.self) { try Simulator(options: options) }
        #expect(error.message.contains("already holds a cloud store"), "\(error)")
    }
}

extension PostgresSimulationTests {
    /// A run whose cloud is in PostgreSQL names the database in its
    /// manifest, so `--run DIR` finds the cloud there, and it reads back.
    @Test func aRunOnPostgresNamesItsDatabaseInItsManifest() throws {
        let test = try TestDatabase()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pg-manifest-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = SimulationOptions(devices: 3, eventsPerDevice: 30, seed: 5, faults: .none, threshold: 2, directory: directory)
        options.cloudDatabase = PostgresCloudDatabase(location: test.location, password: test.password)
        let simulator = try Simulator(options: options)
        let manifest = simulator.manifest(try simulator.run())
        #expect(manifest.cloudStore == test.location.description)
        #expect(try RunManifest(json: manifest.jsonValue) == manifest)
    }
}
