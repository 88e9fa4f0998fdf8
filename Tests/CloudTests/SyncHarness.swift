import CloudCore
import CloudPostgres
import CloudSQLite
import DeviceStore
import Foundation
import IndexModel
import PostgresTestSupport
import SyncWire

let harnessStart = ISO8601.parse("2026-11-22T00:00:00Z")!
let app = StoreOptions.defaultApp
let enrolmentSecret = "enrolment-secret-for-tests"

/// The cloud backends the behaviour tests run against: the same test, with
/// the same expectations, on each (`@Test(arguments: Backend.allCases)`).
enum Backend: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite
    case postgres

    var description: String { rawValue }

    /// A new, empty cloud store of this backend; the returned value keeps a
    /// PostgreSQL store's database until it is released.
    func makeCloud(options: CloudOptions, location: CloudLocation = .memory) throws -> (cloud: any CloudStore, database: TestDatabase?) {
        switch self {
        case .sqlite:
            return (try CloudIndex(at: location, options: options), nil)
        case .postgres:
            let database = try TestDatabase()
            return (try PostgresCloud(at: database.location, password: database.password,
                                      options: PostgresCloudOptions(store: options, poolSize: 2)), database)
        }
    }
}

/// A cloud and devices in one process, synced through the real uploader and
/// the cloud's ingest, with every byte on the wire kept.
final class SyncHarness {
    let clock = ManualClock(harnessStart)
    let cloud: any CloudStore
    let backend: Backend
    /// A PostgreSQL cloud's database, dropped with the harness.
    let database: TestDatabase?
    private(set) var devices: [DeviceStore] = []
    private(set) var wire: [[UInt8]] = []

    init(threshold: Int = 3, location: CloudLocation = .memory, backend: Backend = .sqlite,
         frameDictionaryBytes: Int = FrameDictionaries.defaultCapacityBytes, mapBytes: Int = 0) throws {
        self.backend = backend
        (cloud, database) = try backend.makeCloud(options: CloudOptions(clock: clock, random: SeededRandom(seed: 99), threshold: threshold,
                                                                        frameDictionaryBytes: frameDictionaryBytes, mapBytes: mapBytes),
                                                  location: location)
        try cloud.registerApp(app, enrolmentSecret: enrolmentSecret)
    }

    /// The SQLite cloud of a harness of that backend, for the tests of what only it has.
    var sqlite: CloudIndex {
        get throws {
            guard let index = cloud as? CloudIndex else { throw HarnessError("this harness's cloud is not SQLite") }
            return index
        }
    }

    @discardableResult
    func addDevice(seed: UInt64? = nil, app deviceApp: AppID = app) throws -> DeviceStore {
        let store = try DeviceStore(at: .memory, options: StoreOptions(clock: clock, random: SeededRandom(seed: seed ?? UInt64(devices.count + 1)),
                                                                       app: deviceApp))
        try store.setDeviceKey(cloud.enrol(app: deviceApp, device: store.deviceID, enrolmentSecret: enrolmentSecret))
        devices.append(store)
        return store
    }

    /// Sends `frame` to the cloud, keeping both directions' bytes.
    func deliver(_ frame: [UInt8]) -> IngestResult {
        wire.append(frame)
        let result = cloud.ingest(frame)
        wire.append(result.reply)
        return result
    }

    /// Runs one sync session of `store` (no faults): its outbox is sent, or,
    /// with nothing pending, it probes, and so hears the cloud's requests.
    @discardableResult
    func sync(_ store: DeviceStore, configuration: UploaderConfiguration = UploaderConfiguration()) throws -> [IngestResult] {
        var run = try store.beginSync(configuration: configuration)
        var results: [IngestResult] = []
        var action = try store.perform(run.next(now: clock.now()), in: &run, now: clock.now())
        while case .send(let frame) = action {
            let result = deliver(frame.encoded)
            results.append(result)
            action = try store.perform(run.received(result.reply, now: clock.now()), in: &run, now: clock.now())
        }
        return results
    }

    func syncAll() throws {
        // Three rounds: a hash wanted in the first is heard by every device
        // in the second and its answers arrive by the third.
        for _ in 0..<3 { for store in devices { try sync(store) } }
    }
}

/// One sync session of `store` against `cloud` (no faults), at `clock`'s time.
func syncSession(_ store: DeviceStore, with cloud: any CloudStore, clock: ManualClock) throws -> [IngestResult] {
    var run = try store.beginSync()
    var results: [IngestResult] = []
    var action = try store.perform(run.next(now: clock.now()), in: &run, now: clock.now())
    while case .send(let frame) = action {
        let result = cloud.ingest(frame.encoded)
        results.append(result)
        action = try store.perform(run.received(result.reply, now: clock.now()), in: &run, now: clock.now())
    }
    return results
}

let recipeURL = "https://www.yummly.com/recipe/BPC-983195"

func publicRecipe(url: String = recipeURL, id: String = "r1") -> UserActivity {
    UserActivity(activityType: "com.yummly/browseRecipe", title: "Baked Potato Chips", keywords: ["potato"],
                 webpageURL: url, eligibleForSearch: true, eligibleForPublicIndexing: true, persistentIdentifier: id)
}

/// A new directory under the system's temporary one, for a test to remove.
func temporaryDirectory(_ prefix: String) throws -> URL {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}

func recipeHash(url: String = recipeURL) -> PublicHash {
    PublicHash.of(app: app, content: PublicContent(publicRecipe(url: url))!)!
}

/// Every device records the recipe and engages with it.
/// A device of `harness` that voted, synced, then engaged once more: its
/// key and the one message pending (seq 3).
func votedThenEngaged(_ harness: SyncHarness) throws -> (store: DeviceStore, key: [UInt8], pending: [OutboxRecord]) {
    let store = try harness.addDevice()
    try vote([store])
    try harness.sync(store)
    try store.recordEngaged(ref: recipeURL)
    guard let key = try store.deviceKey() else { throw HarnessError("the device has no key") }
    return (store, key, try store.pendingOutbox(after: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(2)), limit: 10))
}

func vote(_ stores: [DeviceStore]) throws {
    for store in stores {
        try store.record(publicRecipe())
        try store.recordEngaged(ref: recipeURL)
    }
}


struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
