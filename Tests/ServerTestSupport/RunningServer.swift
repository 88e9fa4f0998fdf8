import AsyncHTTPClient
import CloudCore
import CloudServer
import CloudSQLite
import DeviceStore
import IndexModel
import Logging
import NIOCore
import SyncHTTP
import SyncWire
import Tracing

/// A real cloud server on a loopback port picked by the system, with its
/// admin listener, over an in-memory (or file) `CloudIndex` with one app
/// registered: what the server's tests and the HTTP client's tests both run
/// against.
public struct RunningServer: Sendable {
    /// The app the server registers, which devices enrol in.
    public static let app = StoreOptions.defaultApp
    /// The app's enrolment secret.
    public static let secret = "an-enrolment-secret-for-http-tests"

    /// The public listener: `http://127.0.0.1:PORT`, or
    /// `https://localhost:PORT` when the configuration has TLS.
    public let url: String
    /// The public listener's port.
    public let port: Int
    /// The operator's listener: metrics and stats.
    public let adminURL: String
    /// The store the server serves.
    public let cloud: CloudIndex
    /// The server, for what a test reaches past HTTP (its snapshot status).
    public let server: CloudServer
    private let tasks: [Task<Void, any Error>]

    /// Starts a server with threshold K = `threshold` on `configuration`
    /// (whose port is ignored: the system picks one), and returns once both
    /// listeners are bound.
    public static func start(threshold: Int = 2, configuration: CloudServerConfiguration = CloudServerConfiguration(port: 0),
                             location: CloudLocation = .memory, logger: Logger? = nil,
                             tracer: (any Tracer)? = nil) async throws -> RunningServer {
        let cloud = try CloudIndex(at: location, options: CloudOptions(random: SeededRandom(seed: 5), threshold: threshold))
        try cloud.registerApp(app, enrolmentSecret: secret)
        var configuration = configuration
        configuration.port = 0
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let logger = logger ?? {
            var logger = Logger(label: "sightline.cloud.test")
            logger.logLevel = .critical  // cancelling the server at the end of a test logs at error level
            return logger
        }()
        let server = CloudServer(cloud: cloud, configuration: configuration, logger: logger, tracer: tracer)
        let application = try server.application { port in
            continuation.yield(port)
        }
        let task = Task { try await application.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw TransportError("the server did not start") }
        let (adminPorts, adminContinuation) = AsyncStream<Int>.makeStream()
        let admin = server.adminApplication(port: 0) { port in adminContinuation.yield(port) }
        let adminTask = Task { try await admin.run() }
        var adminIterator = adminPorts.makeAsyncIterator()
        guard let adminPort = await adminIterator.next() else { throw TransportError("the admin listener did not start") }
        let url = configuration.tls == nil ? "http://127.0.0.1:\(port)" : "https://localhost:\(port)"
        return RunningServer(url: url, port: port, adminURL: "http://127.0.0.1:\(adminPort)", cloud: cloud, server: server,
                             tasks: [task, adminTask])
    }

    /// Stops both listeners.
    public func stop() async {
        for task in tasks {
            task.cancel()
            _ = try? await task.value
        }
    }

    /// How long a request of these tests may take before it fails. They run
    /// beside the whole suite, whose synchronous tests can hold every thread
    /// of the cooperative pool, the server's included, for minutes on a
    /// two-core machine: 10 s was once too short for a fresh server's
    /// `/metrics`. A server that works answers in milliseconds either way.
    public static let patience: TimeAmount = .seconds(300)

    /// GET `path` on the admin listener.
    public func admin(_ path: String) async throws -> (status: UInt, body: String) {
        try await RunningServer.get(adminURL + path)
    }

    /// GET `url`.
    public static func get(_ url: String) async throws -> (status: UInt, body: String) {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: patience)
        let buffer = try await response.body.collect(upTo: 1 << 22)
        return (response.status.code, String(decoding: buffer.readableBytesView, as: UTF8.self))
    }

    /// GET `path`, or POST `body` to it, on the public listener.
    public func request(_ path: String, body: [UInt8]? = nil,
                        timeout: TimeAmount = patience) async throws -> (status: UInt, body: String) {
        var request = HTTPClientRequest(url: url + path)
        request.method = body == nil ? .GET : .POST
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await HTTPClient.shared.execute(request, timeout: timeout)
        let buffer = try await response.body.collect(upTo: 1 << 22)
        return (response.status.code, String(decoding: buffer.readableBytesView, as: UTF8.self))
    }

    /// GET `path`, or POST `body` to it, on the public listener, with the
    /// request's id as the response's `x-request-id` names it.
    public func exchange(_ path: String, body: [UInt8]? = nil) async throws -> (status: UInt, body: String, requestID: String?) {
        var request = HTTPClientRequest(url: url + path)
        request.method = body == nil ? .GET : .POST
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await HTTPClient.shared.execute(request, timeout: RunningServer.patience)
        let buffer = try await response.body.collect(upTo: 1 << 22)
        return (response.status.code, String(decoding: buffer.readableBytesView, as: UTF8.self),
                response.headers.first(name: "x-request-id"))
    }

    /// A new in-memory device store drawn from `seed`, enrolled over HTTP
    /// and holding the key the server issued.
    public func enrolledDevice(seed: UInt64) async throws -> DeviceStore {
        let store = try DeviceStore(at: .memory, options: StoreOptions(random: SeededRandom(seed: seed)))
        let key = try await HTTPEnrolment.enrol(baseURL: url, app: RunningServer.app, device: store.deviceID,
                                                secret: RunningServer.secret)
        try store.setDeviceKey(key)
        return store
    }
}

/// A public recipe a device engages with, so that its outbox holds a vote,
/// signals and (once asked) content for the server to take.
public enum PublicRecipe {
    public static let url = "https://www.yummly.com/recipe/BPC-983195"

    /// Records the recipe as a public activity, shows it and engages with it,
    /// then shows it again: only impressions after the device's first
    /// engagement leave it.
    public static func engage(_ store: DeviceStore) throws {
        try store.record(UserActivity(activityType: "com.yummly/browseRecipe", title: "Baked Potato Chips", keywords: ["potato"],
                                      webpageURL: url, eligibleForSearch: true, eligibleForPublicIndexing: true))
        try store.recordShown(ref: url)
        try store.recordEngaged(ref: url)
        try store.recordShown(ref: url)
    }
}
