import CoreMetrics
import Prometheus
import SyncWire

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
