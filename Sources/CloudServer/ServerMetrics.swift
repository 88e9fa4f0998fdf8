import Prometheus
import SyncWire

/// The server's event metrics, in a swift-prometheus registry, named and
/// measured as Prometheus users expect (`docs/CLOUD.md`, "Metrics"):
/// counters end in `_total`, durations are in seconds and sizes in bytes,
/// each histogram has buckets chosen for what it measures, and every family
/// has its `# HELP`.
///
/// Every series a label can take is made here, at zero, so that a counter
/// exists before its first event: `rate()` and `increase()` then see the
/// first event as an increase, and a dashboard shows a refusal that never
/// happened as 0 rather than as no data. Labels take only the values listed
/// here, so a hostile client cannot grow the registry.
///
/// The families are made through swift-prometheus's own API, not through
/// swift-metrics' `Counter(label:)`: swift-metrics has no help text, and
/// swift-prometheus refuses one family with two help texts. What is measured
/// when a scrape asks (the store, the process, snapshots) is `ScrapeMetrics`.
struct ServerMetrics: Sendable {
    let registry: PrometheusCollectorRegistry
    private let frames: Counter
    private let messages: Counter
    private let bytes: Counter
    private let duplicates: Counter
    private let recoveredDictionaries: Counter
    private let rejections: [WireError.Code: Counter]
    private let enrolments: Counter
    private let enrolmentRefusals: [String: Counter]
    private let searchRefusals: [String: Counter]
    private let snapshots: [String: Counter]
    private let purgedContent: Counter
    private let frameSizes: ValueHistogram
    private let frameMessages: ValueHistogram
    private let ingestDurations: [String: DurationHistogram]
    private let searchDuration: DurationHistogram
    private let requests: [RouteKey: [String: Counter]]
    private let requestDurations: [RouteKey: DurationHistogram]

    /// What becomes of a frame that was read whole and verified or refused.
    static let outcomes = ["accepted", "duplicate", "rejected"]
    /// Why an enrolment is refused: the request (`timeout`, `tooLarge`,
    /// `malformed`), the address (`rateLimited`), the store's answer
    /// (`enrolmentRefused`, `alreadyEnrolled`, `invalidOption`), or a store
    /// that could not answer (`unavailable`).
    static let enrolmentRefusalReasons = ["timeout", "tooLarge", "malformed", "rateLimited", "enrolmentRefused", "alreadyEnrolled",
                                          "invalidOption", "unavailable"]
    /// Why a public search is refused.
    static let searchRefusalReasons = ["rateLimited", "malformed", "invalidQuery", "busy", "queryTooExpensive", "unavailable"]
    static let snapshotOutcomes = ["written", "failed"]
    /// The classes of HTTP status a request is counted under.
    static let statusClasses = ["2xx", "3xx", "4xx", "5xx"]

    /// A route of one listener, as the access log and the request metrics name it.
    struct RouteKey: Hashable, Sendable {
        let listener: String
        let route: String
    }

    /// Every route each listener serves, as Hummingbird names the matched
    /// route, and `unmatched` for a path no route takes.
    static let routes: [RouteKey] = [
        "/healthz", "/v1/enrol", "/v1/sync", "/v1/apps/{app}/public", "/v1/apps/{app}/items/{hash}", unmatchedRoute,
    ].map { RouteKey(listener: "public", route: $0) } + [
        "/", "/healthz", "/metrics", "/v1/stats", unmatchedRoute,
    ].map { RouteKey(listener: "admin", route: $0) }
    static let unmatchedRoute = "unmatched"

    static let ingestDuration = "sightline_ingest_duration_seconds"
    static let searchDuration = "sightline_search_duration_seconds"
    static let frameSize = "sightline_frame_size_bytes"
    static let messagesPerFrame = "sightline_frame_messages"
    static let requestDuration = "sightline_http_request_duration_seconds"

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        func counter(_ name: String, _ help: String, _ labels: [(String, String)] = []) -> Counter {
            registry.makeCounter(descriptor: ServerMetrics.descriptor(name, help), labels: labels)
        }
        func seconds(_ values: [Double]) -> [Duration] {
            values.map { Duration.nanoseconds(Int64($0 * 1e9)) }
        }
        frames = counter("sightline_frames_accepted_total", "Frames ingested.")
        messages = counter("sightline_messages_accepted_total", "Messages in the frames ingested.")
        bytes = counter("sightline_frame_bytes_accepted_total", "Bytes of the frames ingested, as sent (compressed).")
        duplicates = counter("sightline_frames_duplicate_total", "Frames acknowledged again because the cloud held every message.")
        recoveredDictionaries = counter("sightline_frame_dictionaries_recovered_total",
                                        "Frames whose dictionary this process did not hold and made again from the device's log rows.")
        let rejectionHelp = "Frames refused, by the wire error the device was sent."
        rejections = Dictionary(uniqueKeysWithValues: WireError.Code.allCases.map { code in
            (code, counter("sightline_frames_rejected_total", rejectionHelp, [("reason", code.name)]))
        })
        enrolments = counter("sightline_enrolments_accepted_total", "Devices enrolled, or given their key again for the same proof.")
        let enrolmentHelp = "Enrolments refused, by reason."
        enrolmentRefusals = Dictionary(uniqueKeysWithValues: ServerMetrics.enrolmentRefusalReasons.map { reason in
            (reason, counter("sightline_enrolments_refused_total", enrolmentHelp, [("reason", reason)]))
        })
        let searchHelp = "Public searches refused, by reason."
        searchRefusals = Dictionary(uniqueKeysWithValues: ServerMetrics.searchRefusalReasons.map { reason in
            (reason, counter("sightline_searches_refused_total", searchHelp, [("reason", reason)]))
        })
        let snapshotHelp = "Periodic backup snapshots, by whether they were written."
        snapshots = Dictionary(uniqueKeysWithValues: ServerMetrics.snapshotOutcomes.map { outcome in
            (outcome, counter("sightline_snapshots_total", snapshotHelp, [("outcome", outcome)]))
        })
        purgedContent = counter("sightline_withdrawn_content_purged_total",
                                "Content messages of hashes below K taken out of the log once a backup no longer needed them.")
        frameSizes = registry.makeValueHistogram(
            descriptor: ServerMetrics.descriptor(ServerMetrics.frameSize, "Sync request bodies read whole, whatever became of them."),
            buckets: [256, 1024, 4096, 16384, 65536, 262_144, 1_048_576, 4_194_304])
        frameMessages = registry.makeValueHistogram(
            descriptor: ServerMetrics.descriptor(ServerMetrics.messagesPerFrame, "Messages per accepted frame."),
            buckets: [1, 10, 50, 100, 250, 500, 1000, 2000, 5000, 10000])
        let ingestHelp = "Time from a frame's whole body to its reply (verify, inflate, ingest), by what became of the frame."
        let ingestBuckets = seconds([0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10])
        ingestDurations = Dictionary(uniqueKeysWithValues: ServerMetrics.outcomes.map { outcome in
            (outcome, registry.makeDurationHistogram(descriptor: ServerMetrics.descriptor(ServerMetrics.ingestDuration, ingestHelp),
                                                     labels: [("outcome", outcome)], buckets: ingestBuckets))
        })
        searchDuration = registry.makeDurationHistogram(
            descriptor: ServerMetrics.descriptor(ServerMetrics.searchDuration, "Time from a public search's request to its results."),
            buckets: seconds([0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1]))
        let requestHelp = "HTTP requests answered, by listener, matched route and class of status."
        requests = Dictionary(uniqueKeysWithValues: ServerMetrics.routes.map { key in
            (key, Dictionary(uniqueKeysWithValues: ServerMetrics.statusClasses.map { status in
                (status, counter("sightline_http_requests_total", requestHelp,
                                 [("listener", key.listener), ("route", key.route), ("status_class", status)]))
            }))
        })
        let durationHelp = "Time from a request's head to its response's head, by listener and matched route."
        let requestBuckets = seconds([0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30])
        requestDurations = Dictionary(uniqueKeysWithValues: ServerMetrics.routes.map { key in
            (key, registry.makeDurationHistogram(descriptor: ServerMetrics.descriptor(ServerMetrics.requestDuration, durationHelp),
                                                 labels: [("listener", key.listener), ("route", key.route)], buckets: requestBuckets))
        })
    }

    /// A family's name and help, for swift-prometheus (whose unit is part of the name here).
    static func descriptor(_ name: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }

    /// A sync body read whole, whatever becomes of it.
    func received(bytes count: Int) {
        frameSizes.record(Double(count))
    }

    func accepted(frames count: Int, messages: Int, bytes: Int) {
        frames.increment(by: Int64(count))
        self.messages.increment(by: Int64(messages))
        self.bytes.increment(by: Int64(bytes))
        frameMessages.record(Double(messages))
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
        rejections[code]?.increment()
    }

    /// How long a frame took from its whole body to its reply (verifying,
    /// inflating and ingesting it), by what became of it.
    func ingested(_ outcome: String, in duration: Duration) {
        ingestDurations[outcome]?.record(duration)
    }

    /// How long a public search took, from its request to its results.
    func searched(in duration: Duration) {
        searchDuration.record(duration)
    }

    func enrolled() {
        enrolments.increment()
    }

    /// `reason` is one of `enrolmentRefusalReasons`; another is counted as `unavailable`.
    func enrolmentRefused(_ reason: String) {
        (enrolmentRefusals[reason] ?? enrolmentRefusals["unavailable"])?.increment()
    }

    /// `reason` is one of `searchRefusalReasons`; another is counted as `unavailable`.
    func searchRefused(_ reason: String) {
        (searchRefusals[reason] ?? searchRefusals["unavailable"])?.increment()
    }

    func snapshot(written: Bool) {
        snapshots[written ? "written" : "failed"]?.increment()
    }

    func purged(contentMessages count: Int) {
        purgedContent.increment(by: Int64(count))
    }

    /// A request answered: counted by its status's class and timed, under
    /// its route, or under `unmatched` for a route not listed.
    func answered(listener: String, route: String, status: Int, in duration: Duration) {
        let known = RouteKey(listener: listener, route: route)
        let key = requests[known] == nil ? RouteKey(listener: listener, route: ServerMetrics.unmatchedRoute) : known
        let statusClass = "\(min(max(status / 100, 2), 5))xx"
        requests[key]?[statusClass]?.increment()
        requestDurations[key]?.record(duration)
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
