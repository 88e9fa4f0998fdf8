import CloudIndex
import DeviceStore
import Foundation
import IndexModel
import SyncWire

let harnessStart = ISO8601.parse("2026-11-22T00:00:00Z")!
let app = StoreOptions.defaultApp
let enrolmentSecret = "enrolment-secret-for-tests"

/// A cloud and devices in one process, synced through the real uploader and
/// the cloud's ingest, with every byte on the wire kept.
final class SyncHarness {
    let clock = ManualClock(harnessStart)
    let cloud: CloudIndex
    private(set) var devices: [DeviceStore] = []
    private(set) var wire: [[UInt8]] = []

    init(threshold: Int = 3, location: CloudLocation = .memory) throws {
        cloud = try CloudIndex(at: location, options: CloudOptions(clock: clock, random: SeededRandom(seed: 99),
                                                                   threshold: threshold))
        try cloud.registerApp(app, enrolmentSecret: enrolmentSecret)
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
func vote(_ stores: [DeviceStore]) throws {
    for store in stores {
        try store.record(publicRecipe())
        try store.recordEngaged(ref: recipeURL)
    }
}

