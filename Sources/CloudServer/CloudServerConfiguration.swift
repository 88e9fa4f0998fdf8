import Hummingbird
import IndexQuery
import NIOCore
import NIOSSL
import SyncWire

/// How the HTTP server runs.
public struct CloudServerConfiguration: Sendable {
    public var host: String
    /// 0 picks a free port; `onRunning` is told which.
    public var port: Int
    /// The largest request body accepted, compressed frames included.
    public var maximumBodyBytes: Int
    /// Frames per second each device may send once its signature verified,
    /// and the burst it may save up.
    public var framesPerSecond: Double
    public var burst: Double
    /// Requests per second each client address may make without proving a
    /// device (enrolments, public reads, frames that do not authenticate),
    /// and the burst it may save up.
    public var addressRequestsPerSecond: Double
    public var addressBurst: Double
    /// The most devices and addresses each limiter remembers.
    public var limiterCapacity: Int
    /// A client must send a whole request body within this, and a
    /// connection idle for this long is closed: a slow client holds nothing
    /// for longer.
    public var clientTimeout: Duration
    /// Serve HTTPS with this certificate and key (`tlsConfiguration(certificateFile:keyFile:)`);
    /// nil: plain HTTP.
    public var tls: TLSConfiguration?
    /// What one public search's query may spend (`QueryBudget`), and for how
    /// long: past either the answer is 422 `queryTooExpensive`.
    public var searchBudget: Int
    public var searchTimeout: Duration
    /// Public searches running at once, in all and from one client address
    /// (`SearchGate`); past either the answer is 429.
    public var searchesInFlight: Int
    public var searchesPerAddress: Int
    /// What the served build is (`sightline_build_info`, the status page).
    public var build: BuildInfo

    /// Units a public search may spend by default (`QueryBudget.publicSearchUnits`).
    public static let defaultSearchBudget = QueryBudget.publicSearchUnits

    public init(host: String = "127.0.0.1", port: Int = 8080, maximumBodyBytes: Int = WireLimits.maximumFrameBytes,
                framesPerSecond: Double = 200, burst: Double = 400,
                addressRequestsPerSecond: Double = 100, addressBurst: Double = 1_000, limiterCapacity: Int = 100_000,
                clientTimeout: Duration = .seconds(30), searchBudget: Int = CloudServerConfiguration.defaultSearchBudget,
                searchTimeout: Duration = .seconds(2), searchesInFlight: Int = max(1, System.coreCount / 2),
                searchesPerAddress: Int = 1,
                build: BuildInfo = BuildInfo(version: "sightline wire version \(UploadFrame.version)",
                                             labels: [("wire_version", "\(UploadFrame.version)")])) {
        self.host = host
        self.port = port
        self.maximumBodyBytes = maximumBodyBytes
        self.framesPerSecond = framesPerSecond
        self.burst = burst
        self.addressRequestsPerSecond = addressRequestsPerSecond
        self.addressBurst = addressBurst
        self.limiterCapacity = limiterCapacity
        self.clientTimeout = clientTimeout
        self.searchBudget = searchBudget
        self.searchTimeout = searchTimeout
        self.searchesInFlight = searchesInFlight
        self.searchesPerAddress = searchesPerAddress
        self.build = build
    }
}

/// A request's context: Hummingbird's core, and the address of the client,
/// which keys the limit on requests that prove no device.
public struct CloudRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    /// The client's IP address (without its port), or "unknown".
    var clientAddress: String {
        remoteAddress?.ipAddress ?? "unknown"
    }
}
