import CloudCore
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import IndexModel
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import Prometheus
import ServiceLifecycle
import SyncWire
import Tracing

/// The cloud's HTTP API over any `CloudStore` (`docs/openapi.yaml`).
///
/// Every call into the store (it blocks: SQLite transactions, fsyncs) runs
/// on NIO's blocking thread pool, never on Swift's cooperative pool, so a
/// slow transaction never keeps other requests (health checks, refusals,
/// other connections' bodies) from being served.
///
/// Every refusal is a 4xx with a JSON body `{"error", "message"}`; a refused
/// frame's body also carries the signed rejection (`reply`, base64) for the
/// device's uploader. Logs name routes, devices, outcomes and sizes, never a
/// title, a URL or a search text.
public struct CloudServer: Sendable {
    public let cloud: any CloudService
    public let configuration: CloudServerConfiguration
    public let registry: PrometheusCollectorRegistry
    let logger: Logger
    let metrics: ServerMetrics
    /// Where the sync route's spans go: the process's tracer unless one is
    /// given (a no-op one unless `cloud serve --otlp-traces` bootstrapped it).
    let tracer: any Tracer
    /// Keyed by app and device, charged only once a frame's signature verified.
    let devices: RateLimiter<ProvenDevice>
    /// Keyed by client address, charged by every request that proves no device.
    let addresses: RateLimiter<String>
    /// The public searches running now.
    let searches: SearchGate
    /// What periodic snapshots have done (`PeriodicSnapshots` reports to it).
    public let snapshotStatus: SnapshotStatus
    /// When the server was made, for the status page's uptime.
    let started: ContinuousClock.Instant
    /// The store's per-app figures, read for scrapes and the status page within a deadline.
    let figures = StoreFigures()

    /// A device as its signature proved it: names are per app.
    struct ProvenDevice: Hashable, Sendable {
        let app: AppID
        let device: DeviceID
    }

    public init(cloud: any CloudService, configuration: CloudServerConfiguration = CloudServerConfiguration(),
                logger: Logger = Logger(label: "sightline.cloud"), tracer: (any Tracer)? = nil) {
        self.cloud = cloud
        self.configuration = configuration
        self.logger = logger
        self.tracer = tracer ?? InstrumentationSystem.tracer
        registry = PrometheusCollectorRegistry()
        metrics = ServerMetrics(registry: registry)
        snapshotStatus = SnapshotStatus(metrics: metrics)
        started = ContinuousClock.now
        devices = RateLimiter(rate: configuration.framesPerSecond, burst: configuration.burst, capacity: configuration.limiterCapacity)
        addresses = RateLimiter(rate: configuration.addressRequestsPerSecond, burst: configuration.addressBurst,
                                capacity: configuration.limiterCapacity)
        searches = SearchGate(total: configuration.searchesInFlight, perAddress: configuration.searchesPerAddress)
    }

    /// A server TLS configuration from PEM files: the certificate chain
    /// (leaf first) and its private key.
    public static func tlsConfiguration(certificateFile: String, keyFile: String) throws -> TLSConfiguration {
        let chain = try NIOSSLCertificate.fromPEMFile(certificateFile).map { NIOSSLCertificateSource.certificate($0) }
        guard !chain.isEmpty else { throw TLSFileError("\(certificateFile) holds no PEM certificate") }
        let key = try NIOSSLPrivateKey(file: keyFile, format: .pem)
        return TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(key))
    }

    /// A certificate file that `tlsConfiguration(certificateFile:keyFile:)`
    /// cannot serve from: it holds no PEM certificate. The description names the file.
    public struct TLSFileError: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// The application, ready to `run()`; `onRunning` receives the bound
    /// port. `services` run beside it and shut down with it (a tracing
    /// exporter, which flushes its spans then).
    public func application(services: [any Service] = [],
                            onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) throws -> some ApplicationProtocol {
        let http = HTTPServerBuilder.http1(configuration: .init(idleTimeout: TimeAmount(configuration.clientTimeout)))
        return Application(router: router(),
                    server: try configuration.tls.map { try .tls(http, tlsConfiguration: $0) } ?? http,
                    configuration: .init(address: .hostname(configuration.host, port: configuration.port),
                                         serverName: "sightline"),
                    services: services,
                    onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? 0) },
                    logger: logger)
    }

    /// The operator's application, on its own listener (loopback unless told
    /// otherwise): the status page `/`, `/healthz`, `/metrics` and
    /// `/v1/stats`, which count devices, hashes and votes below K and so
    /// stay off the public API.
    public func adminApplication(host: String = "127.0.0.1", port: Int,
                                 onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) -> some ApplicationProtocol {
        Application(router: adminRouter(),
                    configuration: .init(address: .hostname(host, port: port), serverName: "sightline-admin"),
                    onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? 0) },
                    logger: logger)
    }

    func adminRouter() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        router.add(middleware: AccessLogMiddleware(listener: "admin", metrics: metrics))
        router.add(middleware: RequestIDMiddleware())
        router.add(middleware: MethodNotAllowedMiddleware(routes: [
            ([], [.get]), (["healthz"], [.get]), (["metrics"], [.get]), (["v1", "stats"], [.get]),
        ]))
        router.get("/") { _, _ in
            let apps = await figures.read(cloud)
            let page = StatusPage(build: configuration.build, store: cloud.displayName, threshold: cloud.threshold,
                                  agreement: cloud.agreement, apps: apps, snapshot: snapshotStatus.current,
                                  uptime: (ContinuousClock.now - started).seconds)
            var headers = HTTPFields()
            headers[.contentType] = "text/html; charset=utf-8"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: page.html)))
        }
        router.get("healthz") { _, _ in
            CloudServer.json(.ok, ["status": .string("ok")])
        }
        router.get("metrics") { _, _ in
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            let text = await ScrapeMetrics(cloud: cloud, build: configuration.build, snapshots: snapshotStatus, figures: figures)
                .text(registry: registry.emitToString())
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
        }
        router.get("v1/stats") { _, _ in
            do {
                return CloudServer.json(.ok, try await blocking { try cloud.stats().jsonValue })
            } catch {
                return CloudServer.error(.serviceUnavailable, "unavailable", "the cloud store cannot be read: \(error)")
            }
        }
        return router
    }

    func router() -> Router<CloudRequestContext> {
        let router = Router(context: CloudRequestContext.self)
        router.add(middleware: AccessLogMiddleware(listener: "public", metrics: metrics))
        router.add(middleware: RequestIDMiddleware())
        router.add(middleware: MethodNotAllowedMiddleware(routes: [
            (["healthz"], [.get]), (["v1", "enrol"], [.post]), (["v1", "sync"], [.post]),
            (["v1", "apps", "*", "public"], [.get]), (["v1", "apps", "*", "items", "*"], [.get]),
        ]))
        router.get("healthz") { _, _ in
            CloudServer.json(.ok, ["status": .string("ok")])
        }
        router.post("v1/enrol") { request, context in
            guard addresses.allow(context.clientAddress, now: ContinuousClock.now) else {
                metrics.enrolmentRefused("rateLimited")
                return addressLimited(context)
            }
            return await enrol(request, context: context)
        }
        router.post("v1/sync") { request, context in
            await sync(request, context: context)
        }
        router.get("v1/apps/:app/public") { request, context in
            await search(request, context: context)
        }
        router.get("v1/apps/:app/items/:hash") { _, context in
            await item(context: context)
        }
        return router
    }

    // MARK: - Handlers

    /// A 400 answer, as an error a `Result` can carry.
    struct Refusal: Error {
        let response: Response
    }

    /// The app a route's path names, checked as every name is
    /// (`TextRule.name`) before a store sees it. The router hands the path's
    /// component over as written, not percent-decoded, so `%00` is three
    /// characters of another app's name; the check holds whatever the
    /// router does.
    static func appName(_ context: CloudRequestContext) -> Result<AppID, Refusal> {
        guard let name = context.parameters.get("app") else {
            return .failure(Refusal(response: error(.badRequest, "malformed", "no app")))
        }
        do {
            try TextRule.name.check(name)
        } catch {
            return .failure(Refusal(response: CloudServer.error(.badRequest, "malformed", "the app name \(error)")))
        }
        return .success(AppID(name))
    }

    /// Runs `body`, which blocks (SQLite), on NIO's blocking thread pool.
    func blocking<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await NIOThreadPool.singleton.runIfActive(body)
    }

    /// A request body that did not arrive within the client timeout.
    struct BodyTimeout: Error {
        let limit: Duration

        var response: Response {
            var response = CloudServer.error(.requestTimeout, "timeout", "the request body did not arrive within \(limit)")
            response.headers[.connection] = "close"
            return response
        }
    }

    /// The request's body, at most `limit` bytes, within the client timeout.
    func collect(_ request: Request, upTo limit: Int) async throws -> [UInt8] {
        let timeout = configuration.clientTimeout
        return try await withThrowingTaskGroup(of: [UInt8]?.self) { group in
            group.addTask {
                let buffer = try await request.body.collect(upTo: limit)
                return buffer.getBytes(at: buffer.readerIndex, length: buffer.readableBytes) ?? []
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let bytes = first else { throw BodyTimeout(limit: timeout) }
            return bytes
        }
    }

    func addressLimited(_ context: CloudRequestContext) -> Response {
        context.logger.notice("address rate limited", metadata: ["address": "\(context.clientAddress)"])
        return CloudServer.error(.tooManyRequests, "rateLimited",
                                 "this address makes requests that prove no device faster than its rate limit; retry later")
    }

    static func status(for code: WireError.Code) -> HTTPResponse.Status {
        switch code {
        case .malformed: .badRequest
        case .tooLarge: .contentTooLarge
        case .badSignature: .unauthorized
        case .gap, .equivocation, .unknownBase: .conflict
        case .unknownDevice: .forbidden
        case .rateLimited: .tooManyRequests
        case .refused: .unprocessableContent
        case .unavailable: .serviceUnavailable
        }
    }

    // MARK: - Bodies

    static func json(_ status: HTTPResponse.Status, _ object: JSONObject) -> Response {
        json(status, .object(object))
    }

    static func json(_ status: HTTPResponse.Status, _ value: JSONValue) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers,
                        body: .init(byteBuffer: ByteBuffer(string: JSONWriter.compact(value) + "\n")))
    }

    static func error(_ status: HTTPResponse.Status, _ code: String, _ message: String) -> Response {
        json(status, ["error": .string(code), "message": .string(message)])
    }

    static func binary(_ status: HTTPResponse.Status, _ bytes: [UInt8]) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/octet-stream"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
