import CloudCore
import CoreMetrics
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import IndexModel
import IndexQuery
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import Prometheus
import ServiceLifecycle
import Synchronization
import SyncWire
import Tracing

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

    /// Units a public search may spend by default (`QueryBudget.publicSearchUnits`).
    public static let defaultSearchBudget = QueryBudget.publicSearchUnits

    public init(host: String = "127.0.0.1", port: Int = 8080, maximumBodyBytes: Int = WireLimits.maximumFrameBytes,
                framesPerSecond: Double = 200, burst: Double = 400,
                addressRequestsPerSecond: Double = 100, addressBurst: Double = 1_000, limiterCapacity: Int = 100_000,
                clientTimeout: Duration = .seconds(30), searchBudget: Int = CloudServerConfiguration.defaultSearchBudget,
                searchTimeout: Duration = .seconds(2), searchesInFlight: Int = max(1, System.coreCount / 2),
                searchesPerAddress: Int = 1) {
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
    public let cloud: any CloudStore
    public let configuration: CloudServerConfiguration
    public let registry: PrometheusCollectorRegistry
    private let logger: Logger
    private let metrics: ServerMetrics
    /// Where the sync route's spans go: the process's tracer unless one is
    /// given (a no-op one unless `cloud serve --otlp-traces` bootstrapped it).
    private let tracer: any Tracer
    /// Keyed by app and device, charged only once a frame's signature verified.
    private let devices: RateLimiter<ProvenDevice>
    /// Keyed by client address, charged by every request that proves no device.
    private let addresses: RateLimiter<String>
    /// The public searches running now.
    private let searches: SearchGate

    /// A device as its signature proved it: names are per app.
    private struct ProvenDevice: Hashable, Sendable {
        let app: AppID
        let device: DeviceID
    }

    public init(cloud: any CloudStore, configuration: CloudServerConfiguration = CloudServerConfiguration(),
                logger: Logger = Logger(label: "sightline.cloud"), tracer: (any Tracer)? = nil) {
        self.cloud = cloud
        self.configuration = configuration
        self.logger = logger
        self.tracer = tracer ?? InstrumentationSystem.tracer
        registry = PrometheusCollectorRegistry()
        metrics = ServerMetrics(registry: registry)
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
    /// otherwise): `/healthz`, `/metrics` and `/v1/stats`, which count
    /// devices, hashes and votes below K and so stay off the public API.
    public func adminApplication(host: String = "127.0.0.1", port: Int,
                                 onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) -> some ApplicationProtocol {
        Application(router: adminRouter(),
                    configuration: .init(address: .hostname(host, port: port), serverName: "sightline-admin"),
                    onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? 0) },
                    logger: logger)
    }

    func adminRouter() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        router.add(middleware: RequestIDMiddleware())
        router.add(middleware: MethodNotAllowedMiddleware(routes: [
            (["healthz"], [.get]), (["metrics"], [.get]), (["v1", "stats"], [.get]),
        ]))
        router.get("healthz") { _, _ in
            CloudServer.json(.ok, ["status": .string("ok")])
        }
        router.get("metrics") { _, _ in
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4"
            return Response(status: .ok, headers: headers,
                            body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
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
            let started = ContinuousClock.now
            guard addresses.allow(context.clientAddress, now: ContinuousClock.now) else {
                metrics.searchRefused("rateLimited")
                return addressLimited(context)
            }
            let app: AppID
            switch CloudServer.appName(context) {
            case .success(let named): app = named
            case .failure(let refusal):
                metrics.searchRefused("malformed")
                return refusal.response
            }
            let parameters = request.uri.queryParameters
            guard ["q", "limit", "query", "explain"].allSatisfy({ parameters.getAll($0).count <= 1 }) else {
                metrics.searchRefused("malformed")
                return CloudServer.error(.badRequest, "malformed", "q, limit, query and explain may each be given once")
            }
            let explain: Bool
            switch parameters.get("explain").map({ String($0) }) {
            case nil, "false": explain = false
            case "true": explain = true
            case let other?:
                metrics.searchRefused("malformed")
                return CloudServer.error(.badRequest, "malformed", "explain is true or false, not \"\(other.prefix(64))\"")
            }
            let text = parameters.get("q").map { String($0) } ?? ""
            let limitText = parameters.get("limit").map { String($0) }
            let limit = limitText.map { Int($0) ?? 0 } ?? 20
            guard (1...1000).contains(limit), text.utf8.count <= 1024 else {
                metrics.searchRefused("malformed")
                return CloudServer.error(.badRequest, "malformed", "limit must be an integer from 1 to 1000 and q at most 1024 bytes")
            }
            do {
                try TextRule.text.check(text)
            } catch {
                metrics.searchRefused("malformed")
                return CloudServer.error(.badRequest, "malformed", "q \(error)")
            }
            var filter: CompiledQuery?
            if let query = request.uri.queryParameters.get("query").map({ String($0) }) {
                do throws(QueryError) {
                    filter = CompiledQuery(try QueryParser.parse(query), now: cloud.now)
                } catch {
                    metrics.searchRefused("invalidQuery")
                    return CloudServer.error(.badRequest, "invalidQuery", error.rendered(query: query))
                }
            }
            let address = context.clientAddress
            guard searches.enter(address) else {
                metrics.searchRefused("busy")
                return CloudServer.error(.tooManyRequests, "busy", """
                    as many searches as the server runs at once are running (from this address, or in all); retry later
                    """)
            }
            defer { searches.leave(address) }
            let budget = QueryBudget(units: configuration.searchBudget, deadline: .now + configuration.searchTimeout)
            do {
                let results = try await blocking { [filter] in
                    try cloud.search(app: app, text: text, filter: filter, limit: limit, explain: explain, budget: budget)
                        .map(\.jsonValue)
                }
                metrics.searched(in: ContinuousClock.now - started)
                return CloudServer.json(.ok, ["results": .array(results)])
            } catch let error as CloudError where error.code == .queryTooExpensive {
                metrics.searchRefused("queryTooExpensive")
                return CloudServer.error(.unprocessableContent, "queryTooExpensive", error.message)
            } catch {
                metrics.searchRefused("unavailable")
                context.logger.error("search failed", metadata: ["error": "\(error)"])
                return CloudServer.error(.serviceUnavailable, "unavailable", "the cloud store cannot be read: \(error)")
            }
        }
        router.get("v1/apps/:app/items/:hash") { _, context in
            guard addresses.allow(context.clientAddress, now: ContinuousClock.now) else { return addressLimited(context) }
            let app: AppID
            switch CloudServer.appName(context) {
            case .success(let named): app = named
            case .failure(let refusal): return refusal.response
            }
            guard let hex = context.parameters.get("hash"), let hash = PublicHash(hex: hex) else {
                return CloudServer.error(.badRequest, "malformed", "the item is named by its 64-digit public hash")
            }
            do {
                guard let entry = try await blocking({ try cloud.publicEntry(app: app, hash: hash) }) else {
                    return CloudServer.error(.notFound, "notFound", "no public item with this hash")
                }
                return CloudServer.json(.ok, entry.jsonValue)
            } catch {
                return CloudServer.error(.serviceUnavailable, "unavailable", "the cloud store cannot be read: \(error)")
            }
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

    private func enrol(_ request: Request, context: CloudRequestContext) async -> Response {
        let body: [UInt8]
        do {
            body = try await collect(request, upTo: 16 * 1024)
        } catch let error as BodyTimeout {
            metrics.enrolmentRefused("timeout")
            return error.response
        } catch {
            metrics.enrolmentRefused("tooLarge")
            return CloudServer.error(.contentTooLarge, "tooLarge", "an enrolment request is at most 16 KiB")
        }
        guard case .object(let object)? = try? JSONReader.parse(body),
              case .string(let appName)? = object["app"], case .string(let deviceName)? = object["device"],
              case .string(let secret)? = object["secret"] else {
            metrics.enrolmentRefused("malformed")
            return CloudServer.error(.badRequest, "malformed", "expected a JSON object with string members app, device and secret")
        }
        let app = AppID(appName)
        let device = DeviceID(deviceName)
        var proof: [UInt8]?
        if let member = object["proof"] {
            guard case .string(let encoded) = member, let decoded = Data(base64Encoded: encoded), (16...64).contains(decoded.count) else {
                metrics.enrolmentRefused("malformed")
                return CloudServer.error(.badRequest, "malformed", "proof must be 16 to 64 bytes in base64")
            }
            proof = [UInt8](decoded)
        }
        let enrolled = try? await blocking { [proof] in
            Result { () throws(CloudError) in try cloud.enrol(app: app, device: device, enrolmentSecret: secret, proof: proof) }
        }
        switch enrolled {
        case nil:
            return CloudServer.error(.serviceUnavailable, "unavailable", "the server is shutting down")
        case .success(let key)?:
            context.logger.info("enrolled", metadata: ["device": "\(device)", "app": "\(app)"])
            return CloudServer.json(.ok, ["device": .string(device.rawValue), "key": .string(Data(key).base64EncodedString())])
        case .failure(let error)?:
            metrics.enrolmentRefused(error.code.rawValue)
            // A name refused as invalid (a line break, too long) is not logged: in text logs it could forge a line.
            let named: Logger.Metadata = error.code == .invalidOption ? [:] : ["device": "\(device)"]
            context.logger.notice("enrolment refused", metadata: named.merging(["reason": "\(error.code.rawValue)"]) { $1 })
            switch error.code {
            case .alreadyEnrolled: return CloudServer.error(.conflict, error.code.rawValue, error.message)
            case .enrolmentRefused: return CloudServer.error(.forbidden, error.code.rawValue, error.message)
            case .invalidOption: return CloudServer.error(.badRequest, error.code.rawValue, error.message)
            default: return CloudServer.error(.serviceUnavailable, "unavailable", error.message)
            }
        }
    }

    /// A frame is charged to its device only once its signature verified, so
    /// junk naming a victim costs the victim nothing. Frames that do not
    /// authenticate are charged to the client's address, and an address out
    /// of tokens is refused before its next frame is read.
    /// `POST /v1/sync`, in a server span with a child for each step:
    /// `receive` (the body), `verify` (structure, device, signature),
    /// `inflate` (the messages), `ingest` (placement, log, fold, commit and
    /// the signed ack) and `reply`.
    private func sync(_ request: Request, context: CloudRequestContext) async -> Response {
        let span = tracer.startAnySpan("POST /v1/sync", context: ServiceContext.current ?? .topLevel, ofKind: .server)
        defer { span.end() }
        let response = await sync(request, context: context, span: span)
        span.attributes["http.response.status_code"] = Int(response.status.code)
        return response
    }

    private func sync(_ request: Request, context: CloudRequestContext, span: any Span) async -> Response {
        let address = context.clientAddress
        if addresses.isExhausted(address, now: ContinuousClock.now) {
            metrics.rejected(.rateLimited)
            return addressLimited(context)
        }
        let body: [UInt8]
        do {
            let receive = tracer.startAnySpan("receive", context: span.context)
            defer { receive.end() }
            body = try await collect(request, upTo: configuration.maximumBodyBytes)
            receive.attributes["sightline.frame.bytes"] = body.count
        } catch let error as BodyTimeout {
            _ = addresses.allow(address, now: ContinuousClock.now)
            return error.response
        } catch {
            metrics.rejected(.tooLarge)
            _ = addresses.allow(address, now: ContinuousClock.now)
            return CloudServer.error(.contentTooLarge, "tooLarge",
                                     "a sync body is at most \(configuration.maximumBodyBytes) bytes")
        }
        metrics.received(bytes: body.count)
        let started = ContinuousClock.now
        let ingested: Ingested
        do {
            ingested = try await blocking { [cloud, devices, addresses, metrics, tracer, parent = span.context] () -> Ingested in
                let authentication = CloudServer.step(tracer, "verify", under: parent) { _ in cloud.authenticate(body) }
                switch authentication {
                case .refused(let refusal):
                    _ = addresses.allow(address, now: ContinuousClock.now)
                    return .result(refusal)
                case .authenticated(let frame):
                    guard devices.allow(ProvenDevice(app: frame.app, device: frame.device), now: ContinuousClock.now) else {
                        return .deviceLimited(frame.device)
                    }
                    let inflated = CloudServer.step(tracer, "inflate", under: parent) { step in
                        let opened = Result<OpenedFrame, WireError> { () throws(WireError) in try cloud.open(frame) }
                        if case .success(let opened) = opened {
                            step.attributes["sightline.frame.messages"] = opened.messages.count
                            if opened.recoveredDictionary {
                                step.attributes["sightline.frame.dictionary_recovered"] = true
                                metrics.dictionaryRecovered()
                            }
                        }
                        return opened
                    }
                    switch inflated {
                    case .failure(let error):
                        return .result(.rejecting(error, device: frame.device, frame: frame.frame, key: frame.key))
                    case .success(let opened):
                        return .result(CloudServer.step(tracer, "ingest", under: parent) { _ in cloud.ingest(opened) })
                    }
                }
            }
        } catch {
            return CloudServer.error(.serviceUnavailable, "unavailable", "the server is shutting down")
        }
        return CloudServer.step(tracer, "reply", under: span.context) { step in
            let response = reply(ingested, bytes: body.count, took: ContinuousClock.now - started, context: context)
            span.attributes["sightline.outcome"] = response.outcome
            return response.response
        }
    }

    /// The answer to a frame that was read whole, counted and logged.
    private func reply(_ ingested: Ingested, bytes: Int, took: Duration,
                       context: CloudRequestContext) -> (response: Response, outcome: String) {
        let result: IngestResult
        switch ingested {
        case .deviceLimited(let device):
            metrics.rejected(.rateLimited)
            context.logger.notice("rate limited", metadata: ["device": "\(device)"])
            return (CloudServer.error(.tooManyRequests, "rateLimited", "device \(device) sends faster than its rate limit; retry later"),
                    "rateLimited")
        case .result(let ingestResult):
            result = ingestResult
        }
        let device = result.device?.description ?? "-"
        switch result.outcome {
        case .accepted(let count):
            metrics.accepted(frames: 1, messages: count, bytes: bytes)
            metrics.ingested("accepted", in: took)
            context.logger.debug("frame accepted", metadata: ["device": "\(device)", "messages": "\(count)", "bytes": "\(bytes)"])
            return (CloudServer.binary(.ok, result.reply), "accepted")
        case .duplicate:
            metrics.duplicate()
            metrics.ingested("duplicate", in: took)
            context.logger.debug("frame acknowledged again", metadata: ["device": "\(device)"])
            return (CloudServer.binary(.ok, result.reply), "duplicate")
        case .rejected(let error):
            metrics.rejected(error.code)
            metrics.ingested("rejected", in: took)
            context.logger.notice("frame refused", metadata: ["device": "\(device)", "reason": "\(error.code.name)"])
            return (CloudServer.json(CloudServer.status(for: error.code), [
                "error": .string(error.code.name),
                "message": .string(error.message),
                "reply": .string(Data(result.reply).base64EncodedString()),
            ]), error.code.name)
        }
    }

    /// Runs `body` in a span of `tracer` named `name` under `parent`, ended when it returns.
    static func step<Value>(_ tracer: any Tracer, _ name: String, under parent: ServiceContext,
                            _ body: (any Span) -> Value) -> Value {
        let span = tracer.startAnySpan(name, context: parent)
        defer { span.end() }
        return body(span)
    }

    private enum Ingested: Sendable {
        case result(IngestResult)
        case deviceLimited(DeviceID)
    }

    /// Runs `body`, which blocks (SQLite), on NIO's blocking thread pool.
    private func blocking<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await NIOThreadPool.singleton.runIfActive(body)
    }

    /// A request body that did not arrive within the client timeout.
    private struct BodyTimeout: Error {
        let limit: Duration

        var response: Response {
            var response = CloudServer.error(.requestTimeout, "timeout", "the request body did not arrive within \(limit)")
            response.headers[.connection] = "close"
            return response
        }
    }

    /// The request's body, at most `limit` bytes, within the client timeout.
    private func collect(_ request: Request, upTo limit: Int) async throws -> [UInt8] {
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

    private func addressLimited(_ context: CloudRequestContext) -> Response {
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

/// The server's metrics, through swift-metrics into a Prometheus registry,
/// named and measured as Prometheus users expect (`docs/CLOUD.md`,
/// "Metrics"): counters end in `_total`, durations are in seconds and sizes
/// in bytes, and each histogram has buckets chosen for what it measures.
struct ServerMetrics: Sendable {
    private let frames: CoreMetrics.Counter
    private let messages: CoreMetrics.Counter
    private let bytes: CoreMetrics.Counter
    private let duplicates: CoreMetrics.Counter
    private let recoveredDictionaries: CoreMetrics.Counter
    private let frameSizes: CoreMetrics.Recorder
    private let frameMessages: CoreMetrics.Recorder
    /// Made once: a metric made per frame would look itself up in the registry each time.
    private let ingestDurations: [String: CoreMetrics.Timer]
    private let searchDuration: CoreMetrics.Timer
    private let factory: PrometheusMetricsFactory

    static let ingestDuration = "sightline_ingest_duration_seconds"
    static let searchDuration = "sightline_search_duration_seconds"
    static let frameSize = "sightline_frame_size_bytes"
    static let messagesPerFrame = "sightline_frame_messages"

    init(registry: PrometheusCollectorRegistry) {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets = [
            ServerMetrics.ingestDuration: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
                .map { Duration.nanoseconds(Int64($0 * 1e9)) },
            ServerMetrics.searchDuration: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1]
                .map { Duration.nanoseconds(Int64($0 * 1e9)) },
        ]
        factory.valueHistogramBuckets = [
            ServerMetrics.frameSize: [256, 1024, 4096, 16384, 65536, 262_144, 1_048_576, 4_194_304],
            ServerMetrics.messagesPerFrame: [1, 10, 50, 100, 250, 500, 1000, 2000, 5000, 10000],
        ]
        self.factory = factory
        frames = CoreMetrics.Counter(label: "sightline_frames_accepted_total", factory: factory)
        messages = CoreMetrics.Counter(label: "sightline_messages_accepted_total", factory: factory)
        bytes = CoreMetrics.Counter(label: "sightline_frame_bytes_accepted_total", factory: factory)
        duplicates = CoreMetrics.Counter(label: "sightline_frames_duplicate_total", factory: factory)
        recoveredDictionaries = CoreMetrics.Counter(label: "sightline_frame_dictionaries_recovered_total", factory: factory)
        frameSizes = CoreMetrics.Recorder(label: ServerMetrics.frameSize, aggregate: true, factory: factory)
        frameMessages = CoreMetrics.Recorder(label: ServerMetrics.messagesPerFrame, aggregate: true, factory: factory)
        ingestDurations = Dictionary(uniqueKeysWithValues: ServerMetrics.outcomes.map { outcome in
            (outcome, CoreMetrics.Timer(label: ServerMetrics.ingestDuration, dimensions: [("outcome", outcome)], factory: factory))
        })
        searchDuration = CoreMetrics.Timer(label: ServerMetrics.searchDuration, factory: factory)
    }

    /// What becomes of a frame that was read whole and verified or refused.
    static let outcomes = ["accepted", "duplicate", "rejected"]

    /// A sync body read whole, whatever becomes of it.
    func received(bytes count: Int) {
        frameSizes.record(count)
    }

    func accepted(frames count: Int, messages: Int, bytes: Int) {
        frames.increment(by: count)
        self.messages.increment(by: messages)
        self.bytes.increment(by: bytes)
        frameMessages.record(messages)
    }

    func duplicate() {
        duplicates.increment()
    }

    /// A frame named a dictionary this process did not hold, and the
    /// device's log rows made it again.
    func dictionaryRecovered() {
        recoveredDictionaries.increment()
    }

    func rejected(_ code: WireError.Code) {
        CoreMetrics.Counter(label: "sightline_frames_rejected_total", dimensions: [("reason", code.name)], factory: factory).increment()
    }

    /// How long a frame took from its whole body to its reply (verifying,
    /// inflating and ingesting it), by what became of it.
    func ingested(_ outcome: String, in duration: Duration) {
        ingestDurations[outcome]?.recordNanoseconds(duration.nanoseconds)
    }

    /// How long a public search took, from its request to its results.
    func searched(in duration: Duration) {
        searchDuration.recordNanoseconds(duration.nanoseconds)
    }

    func enrolmentRefused(_ reason: String) {
        CoreMetrics.Counter(label: "sightline_enrolments_refused_total", dimensions: [("reason", reason)], factory: factory).increment()
    }

    func searchRefused(_ reason: String) {
        CoreMetrics.Counter(label: "sightline_searches_refused_total", dimensions: [("reason", reason)], factory: factory).increment()
    }
}

extension Duration {
    /// The whole nanoseconds, saturating.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return seconds < 0 ? .min : .max }
        return whole.addingReportingOverflow(attoseconds / 1_000_000_000).overflow ? .max : whole + attoseconds / 1_000_000_000
    }
}
