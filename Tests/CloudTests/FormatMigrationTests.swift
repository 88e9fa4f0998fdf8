import CloudCore
import CloudSQLite
import Crypto
import DeviceStore
import Foundation
import GRDB
import IndexModel
import ScratchDirectory
import Snapshot
import SyncWire
import Testing

/// Stores and snapshots of format version 6, written by the build that made
/// `Journal/fixtures/cloud-v6.*`: two apps, K = 2, and in the second app two
/// devices whose names the first app's devices have too (version 6 kept
/// their streams under the ids "app\nname").
@Suite struct FormatMigrationTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Journal/fixtures")
    static let other = AppID("com.example.other")

    /// A copy of the format-6 store fixture, to be changed.
    private func format6Store(in directory: URL) throws -> String {
        let path = directory.appendingPathComponent("cloud.sqlite").path
        try FileManager.default.copyItem(atPath: Self.fixtures.appendingPathComponent("cloud-v6.sqlite").path, toPath: path)
        return path
    }

    /// What the fixture holds, whichever way it reached the current version.
    private func expectFixtureContent(_ cloud: CloudIndex) throws {
        let stats = try cloud.stats()
        #expect(stats.apps == 2 && stats.devices == 5 && stats.logRows == 10 && stats.messages == 15 && stats.publicItems == 2)
        let heads = try cloud.logHeads()
        #expect(heads.map(\.app) == [app, Self.other] && heads.map(\.rows) == [6, 4])
        let verification = try cloud.verifyLog()
        #expect(verification.isValid && verification.verifiedRows == 10, "\(verification)")
        #expect(try cloud.projectionDigest() == cloud.rebuiltProjectionDigest())
        // Each device's stream is under its own name in its app.
        let others = try cloud.heldEpochsByDevice(app: Self.other)
        #expect(others.count == 2 && others.keys.allSatisfy { !$0.rawValue.contains("\n") })
        #expect(Set(others.keys).isSubset(of: Set(try cloud.heldEpochsByDevice(app: app).keys)),
                "the other app's devices have the first app's devices' names")
        #expect(try cloud.publicIndex(app: Self.other).first?.content?.title == "Baked Potato Chips")
    }

    @Test func aFormatSixStoreIsMigratedToPerAppChainsWhenOpenedForWriting() throws {
        let directory = try ScratchDirectory.make("sightline-format6")
        let path = try format6Store(in: directory)
        let cloud = try CloudIndex(at: .file(path))
        #expect(try formatVersion(path) == CloudSchema.formatVersion)
        try expectFixtureContent(cloud)
    }

    @Test func aFormatSixStoreIsNotOpenedReadOnlyAndSaysHowToMigrateIt() throws {
        let directory = try ScratchDirectory.make("sightline-format6")
        let path = try format6Store(in: directory)
        let refusal = try #require(throws: CloudError.self) { try CloudIndex(at: .file(path), options: CloudOptions(readOnly: true)) }
        #expect(refusal.message.contains("format version 6") && refusal.message.contains("cloud rebuild"), "\(refusal)")
        #expect(try formatVersion(path) == 6)
    }

    /// The migration chains the log anew, so a broken chain is refused
    /// first: it would otherwise come out with a valid one.
    @Test func aFormatSixStoreWhoseChainIsBrokenIsNotMigrated() throws {
        let directory = try ScratchDirectory.make("sightline-format6")
        let path = try format6Store(in: directory)
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "UPDATE cloud_log SET received_at = received_at + 1 WHERE seq = 4")
        }
        let refusal = try #require(throws: CloudError.self) { try CloudIndex(at: .file(path)) }
        #expect(refusal.code == .corruptLog && refusal.message.contains("row 4 does not match its hash"), "\(refusal)")
        #expect(try formatVersion(path) == 6, "the store was changed")
    }

    /// A store of version 1 (before the columns versions 2 to 6 added)
    /// goes through every migration to the current version.
    @Test func aVersionOneStoreIsMigratedToTheCurrentVersion() throws {
        let directory = try ScratchDirectory.make("sightline-format1")
        let path = try format6Store(in: directory)
        try DatabaseQueue(path: path).write { db in
            // Version 1 had no device names: its devices were all unique
            // across apps, so this store keeps only the first app's.
            try db.execute(sql: """
                DELETE FROM devices WHERE app = 'com.example.other';
                DELETE FROM apps WHERE app = 'com.example.other';
                DELETE FROM cloud_log WHERE device LIKE 'com.example.other%';
                ALTER TABLE devices DROP COLUMN offered_at_epoch;
                ALTER TABLE devices DROP COLUMN offered_at_seq;
                ALTER TABLE votes DROP COLUMN signal_day;
                ALTER TABLE votes DROP COLUMN day_views;
                ALTER TABLE votes DROP COLUMN day_shown;
                ALTER TABLE votes DROP COLUMN day_engaged;
                ALTER TABLE devices DROP COLUMN enrolment_proof;
                DROP INDEX devices_by_name;
                ALTER TABLE devices DROP COLUMN name;
                ALTER TABLE apps DROP COLUMN maximum_devices;
                DROP TABLE content_offers;
                UPDATE cloud_meta SET value = 1 WHERE key = 'format_version';
                """)
            // The first app's rows, renumbered and chained as version 1 would have.
            var previous = [UInt8](repeating: 0, count: 32)
            var seq: Int64 = 0
            for row in try Row.fetchAll(db, sql: "SELECT seq FROM cloud_log ORDER BY seq") {
                seq += 1
                try db.execute(sql: "UPDATE cloud_log SET seq = ?, prev_hash = ? WHERE seq = ?", arguments: [seq, Data(previous), row[0]])
                previous = try Format6Chain.hash(db, seq: seq)
                try db.execute(sql: "UPDATE cloud_log SET hash = ? WHERE seq = ?", arguments: [Data(previous), seq])
            }
        }
        let clock = ManualClock(harnessStart)
        let cloud = try CloudIndex(at: .file(path), options: CloudOptions(clock: clock, threshold: 2))
        #expect(try formatVersion(path) == CloudSchema.formatVersion)
        #expect(try cloud.verifyLog().verifiedRows == 6)
        #expect(try cloud.projectionDigest() == cloud.rebuiltProjectionDigest())
        // And it ingests: a new device of the app votes.
        let store = try DeviceStore(at: .memory, options: StoreOptions(clock: clock, random: SeededRandom(seed: 40)))
        try store.setDeviceKey(cloud.enrol(app: app, device: store.deviceID, enrolmentSecret: enrolmentSecret))
        try vote([store])
        let frame = try #require(try store.pendingFrame(now: harnessStart))
        #expect(cloud.ingest(frame.encoded).outcome == .accepted(messages: 2))
        #expect(try cloud.logHeads().first?.rows == 7)
    }

    @Test func aFormatSixSnapshotRestoresAsACurrentStore() throws {
        let directory = try ScratchDirectory.make("sightline-format6")
        let path = directory.appendingPathComponent("restored.sqlite").path
        let manifest = try CloudIndex.restore(snapshot: Self.fixtures.appendingPathComponent("cloud-v6.slsnap").path, to: path)
        #expect(manifest.logRows == 10)
        #expect(try formatVersion(path) == CloudSchema.formatVersion)
        try expectFixtureContent(try CloudIndex(at: .file(path)))
    }

    /// The manifest of a format-6 snapshot names its single chain, which the
    /// restore checks before the store is rechained.
    @Test func aFormatSixSnapshotWhoseLogFallsShortOfItsManifestIsRefused() throws {
        let directory = try ScratchDirectory.make("sightline-format6")
        let extracted = directory.appendingPathComponent("extracted.sqlite").path
        let altered = directory.appendingPathComponent("altered.slsnap").path
        let manifest = try SnapshotFile.extract(Self.fixtures.appendingPathComponent("cloud-v6.slsnap").path, to: extracted, key: nil)
        try DatabaseQueue(path: extracted).write { db in try db.execute(sql: "DELETE FROM cloud_log WHERE seq = 10") }
        try SnapshotFile.write(source: extracted, destination: altered, manifest: manifest, key: nil)
        let staged = directory.appendingPathComponent("staged.sqlite").path
        let refusal = try #require(throws: CloudError.self) { try CloudIndex.stageRestore(snapshot: altered, at: staged) }
        #expect(refusal.message == "the snapshot's cloud log (9 rows) does not match its manifest (10 rows)")
        #expect(!FileManager.default.fileExists(atPath: staged))
    }
}

/// The format version the cloud store at `path` says it has.
private func formatVersion(_ path: String) throws -> Int? {
    try DatabaseQueue(path: path).read { db in try Int.fetchOne(db, sql: "SELECT value FROM cloud_meta WHERE key = 'format_version'") }
}

/// The store fixture of format `version`, copied: a read-only open refuses
/// it and says how to migrate it, and the writable open returned migrates it.
private func migratedStoreFixture(version: Int) throws -> (path: String, cloud: CloudIndex) {
    let directory = try ScratchDirectory.make("sightline-format\(version)")
    let path = directory.appendingPathComponent("cloud.sqlite").path
    try FileManager.default.copyItem(atPath: FormatMigrationTests.fixtures.appendingPathComponent("cloud-v\(version).sqlite").path,
                                     toPath: path)
    let refusal = try #require(throws: CloudError.self) { try CloudIndex(at: .file(path), options: CloudOptions(readOnly: true)) }
    #expect(refusal.message.contains("format version \(version)") && refusal.message.contains("cloud rebuild"), "\(refusal)")
    return (path, try CloudIndex(at: .file(path)))
}

/// A store and a snapshot of format version 7, written by the build before
/// crawled pages (`Journal/fixtures/make-cloud.sh 7`): one app, K = 2,
/// three devices, and "Potato Soup" public from the devices' content.
@Suite struct FormatSevenMigrationTests {
    private let soupURL = "https://recipes.example.com/potato-soup"

    private func expectFixtureContent(_ cloud: CloudIndex) throws {
        let stats = try cloud.stats()
        #expect(stats.apps == 1 && stats.devices == 3 && stats.logRows == 5 && stats.messages == 11 && stats.publicItems == 1
                && stats.pages == 0, "\(stats)")
        #expect(try cloud.verifyLog().verifiedRows == 5)
        #expect(try cloud.projectionDigest() == cloud.rebuiltProjectionDigest())
        let soup = try #require(try cloud.publicIndex(app: app).first)
        #expect(soup.content?.title == "Potato Soup" && soup.content?.webpageURL == soupURL && soup.contentSource == "devices")
    }

    @Test func aFormatSevenStoreGainsThePagesWhenOpenedForWriting() throws {
        let (path, cloud) = try migratedStoreFixture(version: 7)
        #expect(try formatVersion(path) == CloudSchema.formatVersion)
        try expectFixtureContent(cloud)
        try cloud.recordPages([CrawledPage(url: soupURL, title: "Creamy Potato Soup", deepLink: "recipes://soup")], app: app)
        let soup = try #require(try cloud.publicIndex(app: app).first)
        #expect(soup.contentSource == "page" && soup.shownTitle == "Creamy Potato Soup" && soup.page?.deepLink == "recipes://soup")
    }

    @Test func aFormatSevenSnapshotRestoresAsACurrentStore() throws {
        let directory = try ScratchDirectory.make("sightline-format7")
        let path = directory.appendingPathComponent("restored.sqlite").path
        let manifest = try CloudIndex.restore(snapshot: FormatMigrationTests.fixtures.appendingPathComponent("cloud-v7.slsnap").path,
                                              to: path)
        #expect(manifest.logRows == 5)
        #expect(try formatVersion(path) == CloudSchema.formatVersion)
        try expectFixtureContent(try CloudIndex(at: .file(path)))
    }
}

/// A store and a snapshot of format version 8, written by the build before
/// private popularity (`Journal/fixtures/make-cloud.sh 8`): the content of
/// the version-7 fixture, and the crawler's page for "Potato Soup".
@Suite struct FormatEightMigrationTests {
    private func expectFixtureContent(_ cloud: CloudIndex) throws {
        let stats = try cloud.stats()
        #expect(stats.apps == 1 && stats.devices == 3 && stats.logRows == 6 && stats.messages == 12 && stats.publicItems == 1
                && stats.pages == 1 && stats.reports == 0, "\(stats)")
        #expect(try cloud.verifyLog().verifiedRows == 6)
        #expect(try cloud.projectionDigest() == cloud.rebuiltProjectionDigest())
        #expect(try cloud.popularity(app: app) == .exact, "an app of an older store counts exactly")
        let soup = try #require(try cloud.publicIndex(app: app).first)
        #expect(soup.contentSource == "page" && soup.page?.deepLink == "recipes://potato-soup" && soup.estimatedEngaged == nil)
    }

    @Test func aFormatEightStoreGainsPrivatePopularityWhenOpenedForWriting() throws {
        let (path, cloud) = try migratedStoreFixture(version: 8)
        #expect(try formatVersion(path) == CloudSchema.formatVersion)
        try expectFixtureContent(cloud)
        let settings = try PrivatePopularity(epsilonThousandths: 4_000, dailyBudgetThousandths: 8_000, hashes: 16, buckets: 256)
        try cloud.setPopularity(.ldp(settings), app: app)
        let soup = try #require(try cloud.publicIndex(app: app).first)
        #expect(soup.estimatedEngaged == 0, "no report yet: an empty sketch estimates 0")
    }

    /// Version 10 marks purged log rows with a codec value and changes no
    /// table: a version-9 store opened for writing is a current store.
    @Test func aFormatNineStoreIsACurrentStoreWhenOpenedForWriting() throws {
        let (path, cloud) = try migratedStoreFixture(version: 9)
        #expect(try formatVersion(path) == CloudSchema.formatVersion)
        try expectFixtureContent(cloud)
        #expect(try cloud.purgeWithdrawnContent(dryRun: true).contentMessages == 0, "the fixture's content is public")
    }

    /// Version 9 is version 8 with private popularity, and the same content.
    @Test(arguments: [8, 9]) func aSnapshotOfFormatEightOrNineRestoresAsACurrentStore(version: Int) throws {
        let directory = try ScratchDirectory.make("sightline-format\(version)")
        let path = directory.appendingPathComponent("restored.sqlite").path
        let manifest = try CloudIndex.restore(snapshot: FormatMigrationTests.fixtures.appendingPathComponent("cloud-v\(version).slsnap").path,
                                              to: path)
        #expect(manifest.logRows == 6)
        #expect(try formatVersion(path) == CloudSchema.formatVersion)
        try expectFixtureContent(try CloudIndex(at: .file(path)))
    }
}

/// The row hash of format versions 1 to 6, for a test that writes such a chain.
enum Format6Chain {
    static func hash(_ db: Database, seq: Int64) throws -> [UInt8] {
        let row = try #require(try Row.fetchOne(db, sql: """
            SELECT prev_hash, device, epoch, first_seq, last_seq, accepted_from, digest, received_at FROM cloud_log WHERE seq = ?
            """, arguments: [seq]))
        var writer = BinaryWriter()
        writer.raw([UInt8](row[0] as Data))
        writer.string(row[1])
        writer.uvarint(UInt64(row[2] as Int64))
        writer.uvarint(UInt64(row[3] as Int64))
        writer.uvarint(UInt64(row[4] as Int64))
        writer.uvarint(UInt64(row[5] as Int64))
        writer.raw([UInt8](row[6] as Data))
        writer.svarint(row[7])
        return Array(SHA256.hash(data: writer.bytes))
    }
}
