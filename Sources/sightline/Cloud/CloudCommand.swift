import ArgumentParser
import CloudCore
import CloudPostgres
import CloudServer
import CloudSQLite
import Crypto
import Foundation
import Hummingbird
import IndexModel
import IndexQuery
import Logging
import NIOPosix
import OTel
import ServiceLifecycle
import SyncWire

struct CloudCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cloud",
        abstract: "Run the cloud aggregator and inspect its store.",
        subcommands: [ServeCommand.self, CloudStatsCommand.self, CloudSearchCommand.self, RebuildCommand.self, CloudPurgeCommand.self,
                      CloudSnapshotCommand.self, CloudRestoreCommand.self, CrawlCommand.self]
    )
}

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
            searchesPerAddress: searchesPerAddress)
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
                ServeCommand.announce("listening", ["url": "\(url)", "threshold": "\(threshold)", "agreement": "\(agreement)"])
            } else {
                Output.error("listening on \(url) (threshold K = \(threshold), content agreement \(agreement))")
            }
        }
        let key = try keyOption.key().map { $0.withUnsafeBytes { Array($0) } }
        let snapshots = snapshotEvery.flatMap { every in
            snapshotDir.map { PeriodicSnapshots(cloud: cloud, directory: $0, every: every, kept: snapshotsKept, key: key, logger: logger) }
        }
        let snapshotting = Task { await snapshots?.run() }
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

/// `cloud serve --snapshot-every`: a backup snapshot of the cloud store every
/// few seconds, keeping the newest few. Each one moves the devices' backed-up
/// watermark, which is what lets them drop outbox messages.
struct PeriodicSnapshots: Sendable {
    let cloud: any CloudStore
    let directory: String
    let every: Int
    let kept: Int
    /// Seals each snapshot (they hold every device key); nil only when the
    /// operator asked for plaintext snapshots.
    let key: [UInt8]?
    let logger: Logger

    func run() async {
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(every))
            if Task.isCancelled { return }
            let name = "cloud-\(cloud.now.millisecondsSince1970).snap"
            let path = (directory as NSString).appendingPathComponent(name)
            // A snapshot copies and deflates the whole store: on NIO's
            // blocking pool, beside ingest, not on Swift's cooperative pool.
            let written = try? await NIOThreadPool.singleton.runIfActive { [cloud, key] in
                Result { () throws(CloudError) in try cloud.snapshot(to: path, key: key.map { SymmetricKey(data: $0) }) }
            }
            switch written {
            case .success(let manifest)?:
                logger.info("snapshot written", metadata: ["file": "\(name)", "logRows": "\(manifest.logRows)"])
                // What this backup made durable below K goes from the log.
                let purged = try? await NIOThreadPool.singleton.runIfActive { [cloud] in
                    Result { () throws(CloudError) in try cloud.purgeWithdrawnContent(dryRun: false) }
                }
                switch purged {
                case .success(let report)? where report.contentMessages > 0:
                    logger.info("withdrawn content purged", metadata: ["messages": "\(report.contentMessages)",
                                                                       "rows": "\(report.rows.count)"])
                case .failure(let error)?:
                    logger.error("purge failed", metadata: ["reason": "\(error.message)"])
                default:
                    break
                }
            case .failure(let error)?:
                logger.error("snapshot failed", metadata: ["reason": "\(error.message)"])
                continue
            case nil:
                return
            }
            let snapshots = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
                .filter { $0.hasPrefix("cloud-") && $0.hasSuffix(".snap") }
                .sorted { (Int64($0.dropFirst(6).dropLast(5)) ?? 0) < (Int64($1.dropFirst(6).dropLast(5)) ?? 0) }
            for old in snapshots.dropLast(kept) {
                try? FileManager.default.removeItem(atPath: (directory as NSString).appendingPathComponent(old))
            }
        }
    }
}

struct CloudStatsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "stats", abstract: "Totals of a cloud store.")

    @OptionGroup var store: CloudStoreOption
    @OptionGroup var output: JSONOption

    func run() throws {
        let cloud = try store.open(readOnly: true)
        let stats: CloudStats
        do {
            stats = try cloud.stats()
        } catch {
            Output.error("error: \(error.commandLineMessage)")
            throw ExitStatus.storeUnavailable
        }
        if output.json {
            Output.json(stats.jsonValue)
            return
        }
        Output.table([
            ["threshold K", String(stats.threshold)],
            ["content agreement", String(stats.agreement)],
            ["apps", String(stats.apps)],
            ["devices", String(stats.devices)],
            ["cloud log rows", String(stats.logRows)],
            ["messages", String(stats.messages)],
            ["hashes counted", String(stats.hashes)],
            ["public items", String(stats.publicItems)],
            ["content wanted", String(stats.wanted)],
            ["crawled pages", String(stats.pages)],
            ["private reports", String(stats.reports)],
        ] + stats.privateApps.sorted { $0.key.rawValue < $1.key.rawValue }.map { app, settings in
            ["popularity of \(app)", ServeCommand.describe(.ldp(settings))]
        } + [
            ["equivocations", String(stats.equivocations)],
        ])
    }
}

struct CloudSearchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "search",
        abstract: "Search an app's public index, ranked by relevance, popularity and engagement."
    )

    @OptionGroup var store: CloudStoreOption
    @OptionGroup var output: JSONOption
    @OptionGroup var budget: QueryBudgetOption

    @Option(name: .long, help: ArgumentHelp("The app whose public index to search.", valueName: "name"))
    var app: AppID

    @Option(name: .long, help: "The most results to return.")
    var limit: Int = 20

    @Option(name: .long, help: ArgumentHelp(
        "Keep only items this Core Spotlight query matches (docs/QUERY.md), e.g. 'engaged >= 10 && title == \"pot*\"cd'.",
        valueName: "query"))
    var query: String?

    @Flag(name: .long, help: "Explain each result's score (the words' fields, popularity, engagement) and how it became public (K, live votes, content agreement).")
    var explain = false

    @Argument(help: ArgumentHelp("What to search for (empty: the whole public index).", valueName: "text"))
    var text: String = ""

    func validate() throws {
        guard (1...1000).contains(limit) else { throw ValidationError("--limit must be between 1 and 1000") }
    }

    func run() throws {
        let expression = try query.map(QueryCommand.parse)
        let cloud = try store.open(readOnly: true)
        let filter = expression.map { CompiledQuery($0, now: cloud.now) }
        let results: [PublicResult]
        do {
            results = try cloud.search(app: app, text: text, filter: filter, limit: limit, explain: explain, budget: budget.make())
        } catch {
            Output.error("error: \(error.commandLineMessage)")
            throw error.code == .queryTooExpensive ? ExitStatus.invalidInput : ExitStatus.storeUnavailable
        }
        if output.json {
            Output.json(.object(["results": .array(results.map(\.jsonValue))]))
            return
        }
        if results.isEmpty {
            Output.line("no results")
            return
        }
        var rows = [["#", "score", "title", "devices", "engaged", "shown", "url"]]
        for (rank, result) in results.enumerated() {
            let entry = result.entry
            rows.append([String(rank + 1), String(format: "%.4g", result.score), entry.shownTitle ?? "-",
                         String(entry.voters),
                         entry.estimatedEngaged.map { "≈" + String(format: "%.0f", $0) } ?? String(entry.popularity.engaged),
                         String(entry.popularity.shown),
                         entry.content?.webpageURL ?? "-"])
        }
        Output.table(rows)
        for (rank, result) in results.enumerated() {
            guard let page = result.entry.page else { continue }
            var parts = ["from its crawled page"]
            if let deepLink = page.deepLink { parts.append("deep link \(deepLink)") }
            if let rating = page.rating {
                parts.append("rated \(String(format: "%g", rating))" + (page.ratingCount.map { " by \($0)" } ?? ""))
            }
            if let price = page.price { parts.append("price \(price)") }
            if let image = page.image { parts.append("image \(image)") }
            Output.line("#\(rank + 1): " + TextRule.printable(parts.joined(separator: "; "), limit: 8_192))
        }
        guard explain else { return }
        for (rank, result) in results.enumerated() {
            guard let explanation = result.explanation else { continue }
            let number = { (value: Double) in String(format: "%.4g", value) }
            Output.line("")
            Output.line("#\(rank + 1) \(TextRule.printable(result.entry.shownTitle ?? "-", limit: 4_096)): score \(number(explanation.score)) = relevance "
                        + "\(number(explanation.relevance)) × popularity \(number(explanation.popularityFactor)) × engagement "
                        + number(explanation.engagementFactor))
            for word in explanation.words {
                let typed = word.isPrefix ? "\"\(word.typed)…\"" : "\"\(word.typed)\""
                Output.line("  \(TextRule.printable(typed, limit: 1_024)) matched \"\(TextRule.printable(word.matched, limit: 1_024))\" in the \(word.field): \(number(word.weight))")
            }
            let engaged = explanation.estimatedEngaged.map {
                "engaged an estimated \(number($0)) times (private reports; below 0 counts as 0)"
            } ?? "engaged \(explanation.engaged) times"
            Output.line("  popularity: \(engaged), 1 + ln(1 + engaged); engagement: shown \(explanation.shown) "
                        + "times, 0.5 + (engaged + 1) / (shown + 2)")
            Output.line("  public: \(explanation.liveVotes) live votes of K = \(explanation.threshold); "
                        + (explanation.contentSource == "page"
                           ? "content from its crawled page, named by a live voter's offer"
                           : "content from devices, \(explanation.agreement) identical offers needed"))
        }
    }
}

struct RebuildCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rebuild",
        abstract: "Verify the cloud log, replay it into fresh projections, and check they equal the incremental state.",
        discussion: "Exit status 1 when the log does not verify or the rebuilt projections differ from the ones it replaced."
    )

    @OptionGroup var store: CloudStoreOption
    @OptionGroup var output: JSONOption

    func run() throws {
        let cloud = try store.open(readOnly: false)
        let verification: CloudLogVerification
        let before: String
        let after: String
        let elapsed: Duration
        do {
            verification = try cloud.verifyLog()
            before = try cloud.projectionDigest()
            var rebuilt = ""
            elapsed = try ContinuousClock().measure {
                try cloud.rebuildProjections()
                rebuilt = try cloud.projectionDigest()
            }
            after = rebuilt
        } catch let error as CloudError {
            Output.error("error: \(error.commandLineMessage)")
            throw ExitStatus.storeUnavailable
        }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        if output.json {
            Output.json(.object([
                "logRows": .integer(Int64(verification.verifiedRows)),
                "messages": .integer(Int64(verification.messages)),
                "logValid": .bool(verification.isValid),
                "problem": verification.firstProblem.map(JSONValue.string) ?? .null,
                "digestBefore": .string(before),
                "digestAfter": .string(after),
                "equal": .bool(before == after),
                "seconds": .double(seconds),
            ]))
        } else {
            Output.line("cloud log: \(verification.verifiedRows) rows, \(verification.messages) messages"
                        + (verification.firstProblem.map { ", first problem: \($0)" } ?? ", verified"))
            Output.line("projections rebuilt in \(String(format: "%.3f", seconds)) s; digest \(before == after ? "unchanged" : "CHANGED") (\(after))")
        }
        if !verification.isValid || before != after { throw ExitStatus.checkFailed }
    }
}

struct CloudPurgeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge",
        abstract: "Take the content of hashes below K out of the cloud log once a backup holds their withdrawal.",
        discussion: """
            Each content message of a hash with fewer than K live votes becomes its residue \
            (the hash and a keyed digest) once the cloud's last backup holds the row in which \
            the hash last fell below K. The log's chain still verifies and a rebuild folds the \
            same projections. `cloud snapshot` and a serving cloud's periodic snapshots \
            purge on their own; this command purges now, or with --dry-run \
            says what it would. docs/CLOUD.md, "Purging withdrawn content".
            """
    )

    @OptionGroup var store: CloudStoreOption
    @OptionGroup var output: JSONOption

    @Flag(name: .long, help: "Say what would be purged and change nothing.")
    var dryRun = false

    func run() throws {
        if !PostgresLocation.isPostgresURL(store.db), !FileManager.default.fileExists(atPath: store.db) {
            Output.error("error: no cloud store at \(store.db)")
            throw ExitStatus.storeUnavailable
        }
        let cloud = try store.open(readOnly: dryRun)
        let report: CloudPurgeReport
        do {
            report = try cloud.purgeWithdrawnContent(dryRun: dryRun)
        } catch {
            Output.error("error: \(error.commandLineMessage)")
            throw ExitStatus.storeUnavailable
        }
        if output.json {
            Output.json(.object([
                "dryRun": .bool(dryRun),
                "rows": .array(report.rows.map { .object(["app": .string($0.app.rawValue), "seq": .integer($0.seq)]) }),
                "contentMessages": .integer(Int64(report.contentMessages)),
                "hashes": .integer(Int64(report.hashes)),
                "bytes": .integer(Int64(report.bytes)),
                "waitingForBackup": .integer(Int64(report.waitingForBackup)),
            ]))
        } else {
            Output.line(CloudPurgeCommand.summary(report, dryRun: dryRun))
        }
    }

    /// One line on what a purge did or would do.
    static func summary(_ report: CloudPurgeReport, dryRun: Bool) -> String {
        var line = "\(dryRun ? "would purge" : "purged") \(report.contentMessages) content message(s) of \(report.hashes) hash(es) "
            + "below K from \(report.rows.count) cloud log row(s), \(report.bytes) bytes"
        if report.waitingForBackup > 0 {
            line += "; \(report.waitingForBackup) more wait for a backup to hold their withdrawal"
        }
        return line
    }
}

struct CloudSnapshotCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "snapshot",
        abstract: "Write a backup snapshot of a cloud store while it keeps serving.",
        discussion: """
            The same container as device snapshots (Journal/FORMAT.md). Afterwards each \
            device's backed-up position is what the snapshot holds of it: acks carry it and \
            devices keep every message after it, so a restore of this snapshot is brought up \
            to date by the devices resending.
            """
    )

    @OptionGroup var store: CloudStoreOption
    @OptionGroup var keyOption: KeyFileOption
    @OptionGroup var output: JSONOption

    @Option(name: .long, help: ArgumentHelp("The snapshot file to write.", valueName: "path"))
    var out: String

    func run() throws {
        let key = try keyOption.key()
        let cloud = try store.open(readOnly: false)
        let manifest: CloudSnapshotManifest
        let purge: CloudPurgeReport
        do {
            manifest = try cloud.snapshot(to: out, key: key)
            // What this backup made durable below K goes from the log.
            purge = try cloud.purgeWithdrawnContent(dryRun: false)
        } catch {
            Output.error("error: \(error.commandLineMessage)")
            throw ExitStatus.storeUnavailable
        }
        if purge.contentMessages > 0 { Output.error(CloudPurgeCommand.summary(purge, dryRun: false)) }
        if output.json {
            Output.json(.object([
                "logRows": .integer(manifest.logRows), "logHeadHash": .string(manifest.logHeadHash),
                "devices": .integer(manifest.devices), "threshold": .integer(manifest.threshold),
                "createdAt": .string(manifest.createdAt.description), "contentBytes": .integer(manifest.contentBytes),
                "encrypted": .bool(manifest.encrypted),
            ]))
        } else {
            Output.line("snapshot \(out): \(manifest.logRows) cloud log rows, \(manifest.devices) devices, "
                        + "\(manifest.contentBytes) bytes" + (manifest.encrypted ? ", encrypted" : ""))
        }
    }
}

struct CloudRestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Restore a cloud store from a snapshot, verifying everything first.",
        discussion: """
            Checks the manifest, checksum and key, SQLite's integrity check, the cloud log's \
            chain and payloads against the manifest, and that the projections equal a replay \
            of the log, and only then replaces --db in one rename (an existing store needs \
            --force and is kept beside it). A postgres:// --db must hold no cloud store yet: \
            the rows are copied in one transaction, which commits only once the database's \
            own log and projections check out. A snapshot of either backend restores into \
            either. Devices then learn from gaps what the restored cloud lacks and send it \
            again. --to-time restores the cloud as it was at an instant: the checked snapshot's \
            log is cut on a frame boundary (each app keeps the rows it received by then) and \
            the projections are folded from what is kept. A bad snapshot exits 1 and leaves \
            --db as it was.
            """
    )

    @Option(name: .long, help: ArgumentHelp("The snapshot to restore.", valueName: "path"))
    var snapshot: String

    @OptionGroup var store: CloudStoreOption
    @OptionGroup var keyOption: KeyFileOption

    @Flag(name: .long, help: "Replace an existing store file (it is kept beside the restored one); a PostgreSQL database must be empty.")
    var force = false

    @Option(name: .long, help: ArgumentHelp(
        "Restore the cloud as it was at this ISO 8601 instant: each app's log keeps the frames received by then.", valueName: "instant"))
    var toTime: String?

    func validate() throws {
        if let toTime, ISO8601.parse(toTime) == nil {
            throw ValidationError("--to-time must be an ISO 8601 instant such as 2026-11-22T09:30:00Z (got \"\(toTime)\")")
        }
    }

    func run() throws {
        let key = try keyOption.key()
        let instant = toTime.flatMap(ISO8601.parse)
        do throws(CloudError) {
            let manifest: CloudSnapshotManifest
            var cut: CloudLogCut?
            if PostgresLocation.isPostgresURL(store.db) {
                let location = try store.postgres.settings.location(store.db)
                let password = try store.postgres.settings.password()
                manifest = try PostgresCloud.restore(snapshot: snapshot, to: location, password: password, key: key, through: instant)
                if let instant {
                    let restored = try PostgresCloud(at: location, password: password,
                                                     options: store.postgres.settings.options(store: CloudOptions(readOnly: true)))
                    defer { restored.close() }
                    let heads = try restored.logHeads()
                    let kept = Int(heads.reduce(0) { $0 + $1.rows })
                    cut = CloudLogCut(through: instant, heads: heads, rowsBefore: Int(manifest.logRows),
                                      rowsRemoved: Int(manifest.logRows) - kept)
                }
            } else {
                (manifest, cut) = try CloudIndex.restore(snapshot: snapshot, to: store.db, through: instant, force: force, key: key)
            }
            if let cut {
                Output.line("restored \(store.displayName) from \(snapshot) as at \(ISO8601.format(cut.through)): "
                            + "\(cut.rowsKept) of \(cut.rowsBefore) cloud log rows kept, \(manifest.devices) devices")
            } else {
                Output.line("restored \(store.displayName) from \(snapshot): \(manifest.logRows) cloud log rows, \(manifest.devices) devices")
            }
        } catch {
            Output.error("error: \(error.commandLineMessage)")
            throw [.snapshot, .keyRequired, .destinationExists].contains(error.code) ? ExitStatus.checkFailed : ExitStatus.storeUnavailable
        }
    }
}
