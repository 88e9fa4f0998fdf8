import ArgumentParser
import ByteCoding
import CloudCore
import CloudServer
import CloudSQLite
import DeviceStore
import Foundation
import IndexModel
import Logging
import Snapshot
import Synchronization
import SyncHTTP
import SyncWire

/// `bench sync`: the whole sync path over loopback HTTP with a real server.
///
/// Untimed: N device stores are filled with app calls from a shared catalogue of
/// public activities (Zipf popularity), private items and activities, views,
/// impressions and engagements; each device is enrolled over HTTP. Timed: every
/// device syncs its whole outbox at once (one `SyncClient` each, concurrently)
/// through `HTTPTransport` to `CloudServer` → `CloudIndex.ingest`, until every
/// message is acknowledged. An *event* here is an outbox message, the unit the
/// cloud ingests and folds.
///
/// In the same run:
/// - wire bytes: every request body, beside the same messages cut into the same
///   frames, written as JSON Lines and deflated at level 6;
/// - raw SQLite: the same messages inserted as (device, epoch, seq, message)
///   rows, one transaction per frame, through the C API (WAL, synchronous=FULL).
struct SyncBenchmark {
    let devices: Int
    let callsPerDevice: Int
    let seed: UInt64
    let directory: URL

    struct Result {
        var calls = 0
        var messages = 0
        var frames = 0
        var seconds = 0.0
        var wireBytes = 0
        var jsonDeflateBytes = 0
        var rawSeconds = 0.0
        var setupSeconds = 0.0
        var publicItems = 0
        var retries = 0
        var dictionaryResets = 0

        var messagesPerSecond: Double { Double(messages) / seconds }
        var rawMessagesPerSecond: Double { Double(messages) / rawSeconds }
        var wireRatio: Double { Double(wireBytes) / Double(jsonDeflateBytes) }
    }

    static let app = AppID("com.example.bench")
    static let secret = "a-benchmark-enrolment-secret"
    static let targetMessagesPerSecond = 150_000.0
    static let targetWireRatio = 0.35

    func run(progress: (String) -> Void) async throws -> Result {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var result = Result()
        let setupStart = ContinuousClock.now
        let cloudPath = directory.appendingPathComponent("cloud.sqlite").path
        StoreFiles.remove(cloudPath)
        let cloud = try CloudIndex(at: .file(cloudPath), options: CloudOptions(random: SeededRandom(seed: seed), threshold: 3))
        try cloud.registerApp(SyncBenchmark.app, enrolmentSecret: SyncBenchmark.secret)
        var logger = Logger(label: "sightline.bench")
        logger.logLevel = .critical
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let application = try CloudServer(cloud: cloud, configuration: CloudServerConfiguration(port: 0, framesPerSecond: 1e9, burst: 1e9),
                                      logger: logger).application { port in continuation.yield(port) }
        // (`application` throws only for a TLS configuration, which this one has not.)
        let server = Task { try await application.run() }
        defer { server.cancel() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw RawSQLiteError(message: "the server did not start") }
        let url = "http://127.0.0.1:\(port)"

        progress("filling \(devices) device stores with \(callsPerDevice) calls each")
        var stores: [DeviceStore] = []
        var outboxes: [[OutboxRecord]] = []
        for index in 0..<devices {
            let device = try await SyncBenchmark.fillDevice(index, directory: directory, callsPerDevice: callsPerDevice, seed: seed,
                                                            enrolAt: url)
            stores.append(device.store)
            outboxes.append(device.records)
            result.calls += device.calls
            result.messages += device.records.count
        }
        result.setupSeconds = setupStart.duration(to: .now).seconds

        progress("syncing \(result.messages) messages from \(devices) devices over \(url)")
        let configuration = UploaderConfiguration()
        let sync = try await SyncBenchmark.syncAll(stores, urls: [url], configuration: configuration)
        result.seconds = sync.seconds
        (result.frames, result.wireBytes, result.retries, result.dictionaryResets) = (sync.frames, sync.wireBytes, sync.retries, sync.dictionaryResets)
        let stats = try cloud.stats()
        // Content answers are journaled during the run, so the cloud holds at least the messages counted here.
        guard stats.messages >= result.messages else {
            throw RawSQLiteError(message: "the cloud holds \(stats.messages) messages, the devices sent \(result.messages)")
        }
        result.messages = stats.messages
        result.publicItems = stats.publicItems

        progress("baselines: JSON + deflate, raw SQLite inserts")
        result.jsonDeflateBytes = SyncBenchmark.jsonDeflateBytes(outboxes, frame: configuration.maximumMessages)
        result.rawSeconds = try rawInserts(outboxes, frame: configuration.maximumMessages)
        return result
    }

    /// Device `index`'s store in `directory`, filled with its calls (1,000
    /// per transaction) and enrolled over HTTP at `url`, with its outbox.
    static func fillDevice(_ index: Int, directory: URL, callsPerDevice: Int, seed: UInt64,
                           enrolAt url: String) async throws -> (store: DeviceStore, records: [OutboxRecord], calls: Int) {
        let path = directory.appendingPathComponent("device-\(index).sqlite").path
        StoreFiles.remove(path)
        let store = try DeviceStore(at: .file(path), options: StoreOptions(
            clock: ManualClock(Timestamp(millisecondsSince1970: 1_795_000_000_000)),
            random: SeededRandom(seed: seed &+ UInt64(index)), durability: .normal, app: SyncBenchmark.app))
        let calls = SyncBenchmark.calls(device: index, count: callsPerDevice, seed: seed)
        for start in stride(from: 0, to: calls.count, by: 1000) {
            _ = try store.performAll(Array(calls[start..<min(start + 1000, calls.count)]))
        }
        try store.setDeviceKey(try await HTTPEnrolment.enrol(baseURL: url, app: SyncBenchmark.app,
                                                             device: store.deviceID, secret: SyncBenchmark.secret))
        return (store, try store.pendingOutbox(after: .start, limit: Int.max), calls.count)
    }

    /// The timed part: every device syncs its whole outbox at once, device
    /// `i` to `urls[i % urls.count]`, one `SyncClient` each, until every
    /// message is acknowledged. Throws the first device's failure.
    /// How the devices' requests go to the servers: each device to one (a
    /// load balancer that keeps a device on a server), or each request to
    /// the next one (round robin), so that each frame names a dictionary
    /// another server made.
    enum Spread: String, CaseIterable, ExpressibleByArgument {
        case device
        case frame
    }

    static func syncAll(_ stores: [DeviceStore], urls: [String], configuration: UploaderConfiguration, spread: Spread = .device)
        async throws -> (seconds: Double, frames: Int, wireBytes: Int, retries: Int, dictionaryResets: Int) {
        let counter = RequestCounter()
        let start = ContinuousClock.now
        let reports = try await withThrowingTaskGroup(of: SyncReport.self) { group in
            for (index, store) in stores.enumerated() {
                let servers = (0..<urls.count).map { HTTPTransport(baseURL: urls[(index + $0) % urls.count]) }
                let inner: any Transport = spread == .frame && servers.count > 1 ? RoundRobinTransport(servers) : servers[0]
                let transport = CountingTransport(inner: inner, counter: counter)
                group.addTask {
                    try await SyncClient(store: store, transport: transport, configuration: configuration).run()
                }
            }
            var reports: [SyncReport] = []
            for try await report in group { reports.append(report) }
            return reports
        }
        let seconds = start.duration(to: .now).seconds
        if let failure = reports.compactMap(\.failure).first {
            throw RawSQLiteError(message: "sync failed: \(failure)")
        }
        let (frames, wireBytes) = counter.totals
        return (seconds, frames, wireBytes, reports.reduce(0) { $0 + $1.retries }, reports.reduce(0) { $0 + $1.dictionaryResets })
    }

    /// The wire baseline: each device's messages cut into frames of `frame`
    /// messages, each frame as JSON Lines deflated at level 6; total bytes.
    static func jsonDeflateBytes(_ outboxes: [[OutboxRecord]], frame: Int) -> Int {
        outboxes.reduce(0) { total, records in
            total + stride(from: 0, to: records.count, by: frame).reduce(0) { sum, start in
                let chunk = records[start..<min(start + frame, records.count)]
                let lines = chunk.map { record -> String in
                    JSONWriter.compact(SyncBenchmark.json(record)) + "\n"
                }.joined()
                return sum + Deflate.compress(Array(lines.utf8), level: 6).count
            }
        }
    }

    /// The raw baseline: the same messages as rows, one transaction per frame.
    private func rawInserts(_ outboxes: [[OutboxRecord]], frame: Int) throws -> Double {
        let path = directory.appendingPathComponent("raw.sqlite").path
        StoreFiles.remove(path)
        let database = try RawSQLite(path: path)
        try database.execute("""
            PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;
            CREATE TABLE messages (device INTEGER, epoch INTEGER, seq INTEGER, message BLOB, PRIMARY KEY (device, epoch, seq));
            """)
        let insert = try database.prepare("INSERT INTO messages VALUES (?, ?, ?, ?)")
        let start = ContinuousClock.now
        for (device, records) in outboxes.enumerated() {
            for chunkStart in stride(from: 0, to: records.count, by: frame) {
                try database.execute("BEGIN")
                for record in records[chunkStart..<min(chunkStart + frame, records.count)] {
                    try insert.run([.integer(Int64(device)), .integer(Int64(clamping: record.position.epoch.rawValue)),
                                    .integer(Int64(clamping: record.position.seq.rawValue)), .blob(record.encoded)])
                }
                try database.execute("COMMIT")
            }
        }
        return start.duration(to: .now).seconds
    }

    /// A message as one JSON object, for the JSON + deflate comparison: its
    /// position, then what `journal export` prints for it.
    static func json(_ record: OutboxRecord) -> JSONValue {
        var object: JSONObject = ["epoch": .integer(Int64(clamping: record.position.epoch.rawValue)),
                                  "seq": .integer(Int64(clamping: record.position.seq.rawValue))]
        if case .object(let fields)? = (try? OutboxMessage.decode(record.encoded))?.jsonValue {
            for member in fields.members { object[member.key] = member.value }
        }
        return .object(object)
    }

    /// One device's calls: public activities from a shared catalogue of 2,000
    /// recipes (Zipf popularity, so devices share hashes), private notes and
    /// activities, and impressions and engagements of what the device recorded.
    static func calls(device: Int, count: Int, seed: UInt64) -> [AppOperation] {
        var random = SplitMix64(seed: seed &* 31 &+ UInt64(device))
        func zipf(_ n: Int) -> Int {
            // Inverse-CDF of a Zipf(1) over 1...n, approximated by exp(u · ln n).
            let u = Double(random.next() >> 11) / Double(1 << 53)
            return min(n - 1, Int(exp(u * log(Double(n)))) - 1)
        }
        var recorded: [String] = []
        var calls: [AppOperation] = []
        calls.reserveCapacity(count)
        while calls.count < count {
            let roll = random.next() % 100
            if roll < 10 || recorded.isEmpty {
                let recipe = zipf(2_000)
                let url = "https://recipes.example/\(recipe)"
                calls.append(.activity(UserActivity(
                    activityType: "com.example.bench/recipe", title: "Recipe \(recipe)", keywords: ["recipe", "dish\(recipe % 50)"],
                    webpageURL: url, eligibleForSearch: true, eligibleForPublicIndexing: true)))
                recorded.append(url)
            } else if roll < 15 {
                calls.append(.index(index: "notes", items: [SearchableItem(uniqueIdentifier: "note-\(calls.count)")]))
            } else if roll < 55 {
                calls.append(.shown(ref: recorded[Int(random.next() % UInt64(recorded.count))]))
            } else {
                calls.append(.engage(ref: recorded[Int(random.next() % UInt64(recorded.count))]))
            }
        }
        return calls
    }
}

/// Counts the requests and request bytes that cross an inner transport.
struct CountingTransport: Transport {
    let inner: any Transport
    let counter: RequestCounter

    func exchange(_ frame: [UInt8]) async throws(TransportError) -> [UInt8] {
        counter.add(bytes: frame.count)
        return try await inner.exchange(frame)
    }
}

/// Each exchange to the next of `servers`, in turn.
final class RoundRobinTransport: Transport {
    private let servers: [HTTPTransport]
    private let next = Mutex(0)

    init(_ servers: [HTTPTransport]) {
        self.servers = servers
    }

    func exchange(_ frame: [UInt8]) async throws(TransportError) -> [UInt8] {
        let index = next.withLock { index in
            defer { index = (index + 1) % servers.count }
            return index
        }
        return try await servers[index].exchange(frame)
    }
}

final class RequestCounter: Sendable {
    private let state = Mutex((requests: 0, bytes: 0))

    func add(bytes: Int) {
        state.withLock {
            $0.requests += 1
            $0.bytes += bytes
        }
    }

    var totals: (requests: Int, bytes: Int) { state.withLock { $0 } }
}
