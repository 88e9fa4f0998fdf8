import ArgumentParser
import CloudCore
import CloudPostgres
import CloudSQLite
import CloudServer
import DeviceStore
import Foundation
import Hummingbird
import IndexModel
import Logging
import OTel
import ServiceLifecycle
import Snapshot
import SyncWire

struct ServeCommand: AsyncParsableCommand {
    /// A popularity mode in words, as `cloud serve` announces it.
    static func describe(_ mode: PopularityMode) -> String {
        guard let settings = mode.privateSettings else { return "exact" }
        return """
            ldp (ε \(PrivatePopularity.decimal(settings.epsilonThousandths)) a report, \
            \(PrivatePopularity.decimal(settings.dailyBudgetThousandths)) a day: \(settings.reportsPerDay) reports; \
            sketch \(settings.hashes) × \(settings.buckets))
            """
    }

    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the cloud's HTTP API (docs/openapi.yaml) until SIGINT or SIGTERM.",
        discussion: """
            Creates the store if it does not exist. With --app, registers the app (or changes \
            its secret) with the enrolment secret from --enrolment-secret-file or \
            SIGHTLINE_ENROLMENT_SECRET. Prints "listening on http://HOST:PORT" on stderr once \
            the port is bound (--port 0 picks a free one).
            """
    )

    @OptionGroup var store: CloudStoreOption
    @OptionGroup var secretOption: EnrolmentSecretOption

    @Option(name: .long, help: "The address to listen on.")
    var host: String = "127.0.0.1"

    @Option(name: .long, help: "The port to listen on (0: any free port).")
    var port: Int = 8080

    @Option(name: .long, help: ArgumentHelp(
        "Serve /metrics, /v1/stats and /healthz for operators on this port (0: any free one); none when not given.",
        valueName: "port"))
    var adminPort: Int?

    @Option(name: .long, help: "The address the admin port listens on.")
    var adminHost: String = "127.0.0.1"

    @Option(name: .long, help: ArgumentHelp("Serve HTTPS with this PEM certificate chain (leaf first); needs --tls-key.",
                                            valueName: "pem"))
    var tlsCert: String?

    @Option(name: .long, help: ArgumentHelp("The PEM private key of --tls-cert.", valueName: "pem"))
    var tlsKey: String?

    @Option(name: .long, help: ArgumentHelp(
        "K: distinct devices with a live vote before a public activity's content is asked for and shown (default 5 for a new store; changing it rebuilds the projections).",
        valueName: "k"))
    var threshold: Int?

    @Option(name: .long, help: ArgumentHelp(
        "Live voters that must offer byte-identical content before it is shown (default: K; changing it rebuilds the projections).",
        valueName: "count"))
    var agreement: Int?

    @Option(name: .long, help: ArgumentHelp("Register this app for enrolment.", valueName: "name"))
    var app: AppID?

    @Option(name: .long, help: ArgumentHelp("With --app: the most devices that may enrol for it (default: no limit).", valueName: "count"))
    var maxDevices: Int?

    @Option(name: .long, help: ArgumentHelp(
        "With --app: how its devices report popularity: exact (signals) or ldp (randomised reports under local differential privacy); changing it rebuilds the projections.",
        valueName: "exact|ldp"))
    var popularity: String?

    @OptionGroup var privately: PopularityOptions

    @Option(name: .long, help: ArgumentHelp("With --popularity ldp: the sketch's hash functions, k (default 64).", valueName: "k"))
    var sketchHashes: Int = 64

    @Option(name: .long, help: ArgumentHelp("With --popularity ldp: the sketch's buckets, m, a power of two (default 1024).",
                                            valueName: "m"))
    var sketchBuckets: Int = 1024

    @Option(name: .long, help: "Frames per second each device may send, counted once its signature verified (burst: twice this).")
    var rate: Double = 200

    @Option(name: .long, help: ArgumentHelp(
        "Requests per second each client address may make that prove no device: enrolments, public reads, frames that do not authenticate.",
        valueName: "rate"))
    var addressRate: Double = 100

    @Option(name: .long, help: ArgumentHelp("The burst of such requests an address may save up.", valueName: "count"))
    var addressBurst: Double = 1_000

    @Option(name: .long, help: ArgumentHelp(
        "Seconds a client has to send a whole request body; a connection idle this long is closed.", valueName: "seconds"))
    var clientTimeout: Int = 30

    @Option(name: .long, help: ArgumentHelp("""
        The most work one public search's query may do, in units (a string predicate looking at a value costs the \
        value's length times the pattern's); past it the answer is 422.
        """, valueName: "units"))
    var searchBudget: Int = CloudServerConfiguration.defaultSearchBudget

    @Option(name: .long, help: ArgumentHelp("Seconds one public search may run; past it the answer is 422.", valueName: "seconds"))
    var searchTimeout: Double = 2

    @Option(name: .long, help: ArgumentHelp("""
        Public searches run at once, in all (default: half the cores, at least one) and from one client address \
        (default 1); past either the answer is 429.
        """, valueName: "count"))
    var searchesInFlight: Int?

    @Option(name: .long, help: ArgumentHelp("Public searches one client address may run at once.", valueName: "count"))
    var searchesPerAddress: Int = 1

    @Option(name: .long, help: ArgumentHelp("Log level: trace, debug, info, notice, warning, error, critical.", valueName: "level"))
    var logLevel: String = "info"

    @Option(name: .long, help: ArgumentHelp(
        "Log lines as text, or as one JSON object each (time, level, label, message, request id, metadata).",
        valueName: "text|json"))
    var logFormat: String = "text"

    @Option(name: .long, help: ArgumentHelp(
        "Export the sync route's spans over OTLP/HTTP to this URL (e.g. http://127.0.0.1:4318/v1/traces); off when not given.",
        valueName: "url"))
    var otlpTraces: String?

    @Option(name: .long, help: ArgumentHelp(
        "Take a backup snapshot every this many seconds into --snapshot-dir (devices drop outbox messages only once a snapshot holds them).",
        valueName: "seconds"))
    var snapshotEvery: Int?

    @Option(name: .long, help: ArgumentHelp("Where periodic snapshots go; the newest --snapshots-kept are kept.", valueName: "path"))
    var snapshotDir: String?

    @Option(name: .long, help: "Periodic snapshots to keep.")
    var snapshotsKept: Int = 3

    @OptionGroup var keyOption: KeyFileOption

    @Flag(name: .long, help: "Write periodic snapshots unencrypted although they hold every device key.")
    var plaintextSnapshots = false

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        if let adminPort, !(0...65535).contains(adminPort) { throw ValidationError("--admin-port must be between 0 and 65535") }
        guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
        if let threshold, !(1...1_000_000).contains(threshold) {
            throw ValidationError("--threshold must be between 1 and 1,000,000")
        }
        if let agreement, !(1...1_000_000).contains(agreement) {
            throw ValidationError("--agreement must be between 1 and 1,000,000")
        }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("--log-level: unknown level \"\(logLevel)\"") }
        if let otlpTraces {
            guard let url = URL(string: otlpTraces), ["http", "https"].contains(url.scheme ?? ""), url.host?.isEmpty == false else {
                throw ValidationError("--otlp-traces must be an http:// or https:// URL (got \"\(otlpTraces)\")")
            }
        }
        guard ["text", "json"].contains(logFormat) else { throw ValidationError("--log-format must be text or json (got \"\(logFormat)\")") }
        guard rate > 0 else { throw ValidationError("--rate must be positive") }
        guard (1...3600).contains(clientTimeout) else { throw ValidationError("--client-timeout must be between 1 and 3600 seconds") }
        guard searchBudget >= 1 else { throw ValidationError("--search-budget must be at least 1") }
        guard searchTimeout > 0, searchTimeout <= 3600 else { throw ValidationError("--search-timeout must be more than 0 and at most 3600 seconds") }
        guard (searchesInFlight ?? 1) >= 1, searchesPerAddress >= 1 else {
            throw ValidationError("--searches-in-flight and --searches-per-address must be at least 1")
        }
        if let maxDevices {
            guard app != nil else { throw ValidationError("--max-devices needs --app") }
            guard (1...100_000_000).contains(maxDevices) else { throw ValidationError("--max-devices must be between 1 and 100,000,000") }
        }
        if let snapshotEvery {
            guard snapshotEvery >= 1 else { throw ValidationError("--snapshot-every must be at least 1 second") }
            guard snapshotDir != nil else { throw ValidationError("--snapshot-every needs --snapshot-dir") }
            guard keyOption.keyFile != nil || plaintextSnapshots else {
                throw ValidationError("""
                    --snapshot-every writes every device key into each snapshot: give --key-file to encrypt them, \
                    or --plaintext-snapshots to write them unencrypted
                    """)
            }
        }
        guard snapshotsKept >= 1 else { throw ValidationError("--snapshots-kept must be at least 1") }
        _ = try popularityMode()
    }

    /// The mode `--popularity` and its options choose for `--app`, checked;
    /// nil when not given.
    func popularityMode() throws -> PopularityMode? {
        let ldpOptions = privately.isGiven || sketchHashes != 64 || sketchBuckets != 1024
        guard let popularity else {
            if ldpOptions { throw ValidationError("--epsilon, --daily-budget and --sketch-* need --popularity ldp") }
            return nil
        }
        guard app != nil else { throw ValidationError("--popularity sets the mode of the app given with --app") }
        switch popularity {
        case "exact":
            if ldpOptions { throw ValidationError("--epsilon, --daily-budget and --sketch-* need --popularity ldp") }
            return .exact
        case "ldp":
            return .ldp(try privately.settings(hashes: sketchHashes, buckets: sketchBuckets))
        default:
            throw ValidationError("--popularity must be exact or ldp (got \"\(popularity)\")")
        }
    }

    func run() async throws {
        if logFormat == "json" {
            // Every logger of the process, the server's and its libraries', writes JSON lines.
            LoggingSystem.bootstrap { label in JSONLogHandler(label: label) }
        }
        let cloud = try store.open(readOnly: false, threshold: threshold, agreement: agreement)
        if let app {
            guard let secret = try secretOption.secret() else {
                Output.error("error: --app \(app) needs an enrolment secret (--enrolment-secret-file or SIGHTLINE_ENROLMENT_SECRET)")
                throw ExitStatus.invalidInput
            }
            do {
                try cloud.registerApp(app, enrolmentSecret: secret, maximumDevices: maxDevices)
            } catch {
                Output.error("error: \(error.commandLineMessage)")
                throw ExitStatus.invalidInput
            }
            if let mode = try popularityMode() {
                try cloud.setPopularity(mode, app: app)
                Output.error("app \(app): popularity \(ServeCommand.describe(mode))")
            }
        }
        var logger = Logger(label: "sightline.cloud")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        var configuration = CloudServerConfiguration(
            host: host, port: port, framesPerSecond: rate, burst: rate * 2,
            addressRequestsPerSecond: addressRate, addressBurst: addressBurst, clientTimeout: .seconds(clientTimeout),
            searchBudget: searchBudget, searchTimeout: .milliseconds(Int64(searchTimeout * 1000)),
            searchesPerAddress: searchesPerAddress,
            build: BuildInfo(version: Sightline.formats, labels: [
                ("backend", PostgresLocation.isPostgresURL(store.db) ? "postgresql" : "sqlite"),
                ("store_format", "\(CloudSchema.formatVersion)"),
                ("wire_version", "\(UploadFrame.version)"),
                ("journal_format", "\(JournalEvent.formatVersion)"),
                ("snapshot_version", "\(SnapshotFile.headerMagic.last ?? 0)"),
            ]))
        if let searchesInFlight { configuration.searchesInFlight = searchesInFlight }
        if let tlsCert, let tlsKey {
            do {
                configuration.tls = try CloudServer.tlsConfiguration(certificateFile: tlsCert, keyFile: tlsKey)
            } catch {
                Output.error("error: cannot read the TLS certificate \(tlsCert) or key \(tlsKey): \(error)")
                throw ExitStatus.invalidInput
            }
        }
        // Bootstrapped before the server is made, which takes the process's tracer.
        let tracing = try otlpTraces.map { try ServeCommand.tracing(to: $0, logger: logger) }
        let server = CloudServer(cloud: cloud, configuration: configuration, logger: logger)
        let host = self.host
        let threshold = cloud.threshold, agreement = cloud.agreement
        let scheme = tlsCert == nil ? "http" : "https"
        let json = logFormat == "json"
        let application = try server.application(services: tracing.map { [$0] } ?? []) { port in
            let url = "\(scheme)://\(host):\(port)"
            if json {
                ServeCommand.announce("listening", ["url": "\(url)", "threshold": .stringConvertible(threshold),
                                                "agreement": .stringConvertible(agreement)])
            } else {
                Output.error("listening on \(url) (threshold K = \(threshold), content agreement \(agreement))")
            }
        }
        let key = try keyOption.key()
        let snapshotting = Task {
            guard let every = snapshotEvery, let directory = snapshotDir else { return }
            server.snapshotStatus.schedule(every: every, into: directory)
            await PeriodicSnapshots(cloud: cloud, directory: directory, kept: snapshotsKept, key: key, logger: logger,
                                    status: server.snapshotStatus)
                .run(ticks: PeriodicSnapshots.ticks(every: every))
        }
        defer { snapshotting.cancel() }
        let adminHost = self.adminHost
        let administering = adminPort.map { adminPort in
            let admin = server.adminApplication(host: adminHost, port: adminPort) { port in
                if json {
                    ServeCommand.announce("admin listening", ["url": "http://\(adminHost):\(port)"])
                } else {
                    Output.error("admin listening on http://\(adminHost):\(port)")
                }
            }
            return Task { try await admin.run() }
        }
        defer { administering?.cancel() }
        try await application.runService()
    }
}

extension ServeCommand {
    /// Bootstraps the process's tracer with swift-otel: spans only (no logs
    /// or metrics), sent over OTLP/HTTP to `url` in batches. The returned
    /// service runs beside the server and sends what is left when it shuts
    /// down. swift-otel's `OTEL_*` environment variables override these
    /// settings (`OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json`, for one).
    static func tracing(to url: String, logger: Logger) throws -> any Service {
        var configuration = OTel.Configuration.default
        configuration.serviceName = "sightline-cloud"
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.enabled = true
        configuration.traces.otlpExporter.endpoint = url
        configuration.diagnosticLogger = .custom(logger)
        return try OTel.bootstrap(configuration: configuration)
    }

    /// A line a supervisor waits for (where the server listens), written as
    /// a JSON log line whatever `--log-level` holds back, as the text form
    /// always prints it.
    static func announce(_ message: Logger.Message, _ metadata: Logger.Metadata) {
        JSONLogHandler(label: "sightline.cloud").log(event: LogEvent(level: .notice, message: message, metadata: metadata,
                                                                    source: "sightline", file: #fileID, function: #function,
                                                                    line: #line))
    }
}
