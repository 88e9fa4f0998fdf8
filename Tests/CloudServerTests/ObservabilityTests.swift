import CloudCore
@testable import CloudServer
import CloudSQLite
import DeviceStore
import Foundation
import IndexModel
import InMemoryTracing
import Logging
import ScratchDirectory
import ServerTestSupport
import Synchronization
import SyncHTTP
import SyncWire
import Testing
import Tracing

/// What an operator reads of a running cloud: `/metrics` after real
/// traffic, checked by value, and `--log-format json` lines tied to the
/// response's `x-request-id`.
@Suite(.serialized) struct ObservabilityTests {
    /// `/metrics` as a map from a sample's name with its labels (as
    /// written, e.g. `x_total{reason="malformed"}`) to its value.
    static func samples(_ text: String) throws -> [String: Double] {
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                throw TransportError("not a Prometheus sample: \(line)")
            }
            samples[String(line[..<space])] = value
        }
        return samples
    }

    @Test func metricsCountWhatASyncAndSearchesDidAndEveryRefusalByReason() async throws {
        let server = try await RunningServer.start(threshold: 2)
        defer { Task { await server.stop() } }
        var sent = SyncReport()
        for seed: UInt64 in 41...43 {
            let store = try await server.enrolledDevice(seed: seed)
            try PublicRecipe.engage(store)
            for _ in 0..<2 {
                let report = try await SyncClient(store: store, transport: HTTPTransport(baseURL: server.url)).run()
                #expect(report.failure == nil)
                sent.framesSent += report.framesSent + report.probes
                sent.messagesAcknowledged += report.messagesAcknowledged
            }
        }
        // Refusals: a body that is no frame, a search with a bad limit, an enrolment with the wrong secret.
        #expect(try await server.request("/v1/sync", body: Array("not a frame".utf8)).status == 400)
        #expect(try await server.request("/v1/apps/\(RunningServer.app)/public?q=potato&limit=0").status == 400)
        let refused = try await server.request("/v1/enrol", body: Array("""
            {"app":"\(RunningServer.app)","device":"intruder","secret":"not-the-secret"}
            """.utf8))
        #expect(refused.status == 403)
        for query in ["potato", "chips"] {
            #expect(try await server.request("/v1/apps/\(RunningServer.app)/public?q=\(query)").status == 200)
        }

        let metrics = try await server.admin("/metrics")
        #expect(metrics.status == 200)
        let samples = try Self.samples(metrics.body)
        let accepted = try #require(samples["sightline_frames_accepted_total"])
        let messages = try #require(samples["sightline_messages_accepted_total"])
        let duplicates = samples["sightline_frames_duplicate_total"] ?? 0
        // Every frame the devices sent was accepted or acknowledged again.
        #expect(accepted + duplicates == Double(sent.framesSent))
        #expect(accepted >= 3 && messages >= 3)
        // Messages per frame: one observation per accepted frame, summing to the messages.
        #expect(samples["sightline_frame_messages_count"] == accepted)
        #expect(samples["sightline_frame_messages_sum"] == messages)
        #expect(samples[#"sightline_frame_messages_bucket{le="+Inf"}"#] == accepted)
        // Frame sizes: every body read, the junk one included, summing to at least the accepted bytes.
        #expect(samples["sightline_frame_size_bytes_count"] == Double(sent.framesSent + 1))
        #expect((samples["sightline_frame_size_bytes_sum"] ?? 0) >= (samples["sightline_frame_bytes_accepted_total"] ?? .infinity))
        // Ingest latency by outcome, in seconds: as many as frames, each well under the client timeout.
        let ingested = try #require(samples[#"sightline_ingest_duration_seconds_count{outcome="accepted"}"#])
        #expect(ingested == accepted)
        #expect(samples[#"sightline_ingest_duration_seconds_count{outcome="rejected"}"#] == 1)
        let ingestSeconds = try #require(samples[#"sightline_ingest_duration_seconds_sum{outcome="accepted"}"#])
        #expect(ingestSeconds > 0 && ingestSeconds < 30 * ingested)
        // Buckets are cumulative and end with every observation.
        let buckets = samples.filter { $0.key.hasPrefix(#"sightline_ingest_duration_seconds_bucket{outcome="accepted""#) }
        #expect(buckets.values.allSatisfy { $0 <= ingested })
        #expect(buckets[#"sightline_ingest_duration_seconds_bucket{outcome="accepted",le="+Inf"}"#] == ingested)
        // Searches: the two answered are timed; the refused one is counted by reason.
        #expect(samples["sightline_search_duration_seconds_count"] == 2)
        #expect(samples[#"sightline_searches_refused_total{reason="malformed"}"#] == 1)
        // Refusals by reason.
        #expect(samples[#"sightline_frames_rejected_total{reason="malformed"}"#] == 1)
        #expect(samples[#"sightline_enrolments_refused_total{reason="enrolmentRefused"}"#] == 1)
    }

    /// A server started again on the same store holds no frame
    /// dictionary: it makes the one the device's next frame names from the
    /// log, counts it, and marks the frame's inflate step.
    @Test func aDictionaryRecoveredFromTheLogIsCountedAndMarkedOnItsSpan() async throws {
        let directory = try ScratchDirectory.make("sightline-recovered-dictionary")
        defer { try? FileManager.default.removeItem(at: directory) }
        let location = CloudLocation.file(directory.appendingPathComponent("cloud.sqlite").path)
        let first = try await RunningServer.start(location: location)
        let store = try await first.enrolledDevice(seed: 71)
        try PublicRecipe.engage(store)
        #expect(try await SyncClient(store: store, transport: HTTPTransport(baseURL: first.url)).run().failure == nil)
        await first.stop()

        let tracer = InMemoryTracer()
        let restarted = try await RunningServer.start(location: location, tracer: tracer)
        defer { Task { await restarted.stop() } }
        try store.recordEngaged(ref: PublicRecipe.url)
        let report = try await SyncClient(store: store, transport: HTTPTransport(baseURL: restarted.url)).run()
        #expect(report.failure == nil && report.framesSent == 1 && report.dictionaryResets == 0)
        let samples = try Self.samples(try await restarted.admin("/metrics").body)
        #expect(samples["sightline_frame_dictionaries_recovered_total"] == 1)
        #expect(samples[#"sightline_frames_rejected_total{reason="unknownBase"}"#] == 0)
        let inflate = tracer.finishedSpans.first { $0.operationName == "inflate" }
        #expect(inflate?.attributes["sightline.frame.dictionary_recovered"]?.toSpanAttribute() == .bool(true))
    }

    @Test func thePublicSearchExplainsItsScoresWhenAsked() async throws {
        let server = try await RunningServer.start(threshold: 2)
        defer { Task { await server.stop() } }
        try await Self.publishRecipe(on: server, seeds: 61...62)
        let path = "/v1/apps/\(RunningServer.app)/public?q=potato"
        let plain = try await server.request(path)
        #expect(plain.status == 200 && !plain.body.contains("explanation"))
        let explained = try await server.request(path + "&explain=true")
        #expect(explained.status == 200)
        guard case .object(let document) = try JSONReader.parse(explained.body), case .array(let results)? = document["results"],
              case .object(let first)? = results.first, case .object(let explanation)? = first["explanation"],
              case .array(let words)? = explanation["words"], case .object(let word)? = words.first else {
            Issue.record("no explained result in \(explained.body)")
            return
        }
        #expect(explanation["threshold"] == .integer(2) && explanation["contentSource"] == .string("devices"))
        #expect(explanation["score"] == first["score"])
        #expect(word["field"] == .string("title") && word["matched"] == .string("potato"))
        let bad = try await server.request(path + "&explain=maybe")
        #expect(bad.status == 400 && bad.body.contains("explain is true or false"))
    }

    /// A public item whose web page was crawled shows the page over HTTP,
    /// in search results and by its hash, with its deep link; the crawl ran
    /// as `cloud crawl` does, on a connection of its own, while the server
    /// served the same store file.
    @Test func aPublicItemWithACrawledPageShowsThePageAndItsDeepLink() async throws {
        let path = try ScratchDirectory.make("sightline-crawl-http").appendingPathComponent("cloud.sqlite").path
        let server = try await RunningServer.start(threshold: 2, location: .file(path))
        defer { Task { await server.stop() } }
        try await Self.publishRecipe(on: server, seeds: 71...72)
        try CloudIndex(at: .file(path)).recordPages([CrawledPage(url: PublicRecipe.url, title: "Oven Potato Chips",
                                                                 deepLink: "yummly://recipe/983195", rating: 4.5, ratingCount: 20)],
                                                    app: RunningServer.app)
        let search = try await server.request("/v1/apps/\(RunningServer.app)/public?q=oven")
        guard case .object(let document) = try JSONReader.parse(search.body), case .array(let results)? = document["results"],
              case .object(let first)? = results.first, case .string(let hex)? = first["hash"] else {
            Issue.record("no result in \(search.body)")
            return
        }
        #expect(first["contentSource"] == .string("page") && first["deepLink"] == .string("yummly://recipe/983195"))
        #expect(first["rating"] == .double(4.5) && first["ratingCount"] == .integer(20))
        let item = try await server.request("/v1/apps/\(RunningServer.app)/items/\(hex)")
        guard case .object(let shown) = try JSONReader.parse(item.body) else { Issue.record("not an object: \(item.body)"); return }
        #expect(item.status == 200 && shown["title"] == .string("Oven Potato Chips") && shown["contentSource"] == .string("page"))
        // The server goes on folding after another connection wrote the store.
        try await Self.publishRecipe(on: server, seeds: 73...73)
        #expect(try server.cloud.projectionDigest() == server.cloud.rebuiltProjectionDigest())
    }

    /// Devices of `seeds` engage with the recipe and sync over HTTP: a
    /// round of votes that reaches K, and a round of the content K asks for.
    static func publishRecipe(on server: RunningServer, seeds: ClosedRange<UInt64>) async throws {
        var stores: [DeviceStore] = []
        for seed in seeds {
            stores.append(try await server.enrolledDevice(seed: seed))
            try PublicRecipe.engage(stores[stores.count - 1])
        }
        for _ in 0..<2 {
            for store in stores { _ = try await SyncClient(store: store, transport: HTTPTransport(baseURL: server.url)).run() }
        }
    }

    /// Log lines captured from a `JSONLogHandler`.
    final class Captured: Sendable {
        let lines = Mutex<[String]>([])

        var objects: [JSONObject] {
            lines.withLock { $0 }.compactMap { line in
                guard case .object(let object)? = try? JSONReader.parse(line) else { return nil }
                return object
            }
        }
    }

    @Test func jsonLogLinesCarryTheRequestIDTheResponseNames() async throws {
        let captured = Captured()
        let clock = ManualClock(ISO8601.parse("2026-11-25T10:00:00.125Z")!)
        var logger = Logger(label: "sightline.cloud") { label in
            JSONLogHandler(label: label, clock: clock, sink: JSONLogHandler.Sink { line in captured.lines.withLock { $0.append(line) } })
        }
        logger.logLevel = .notice
        let server = try await RunningServer.start(threshold: 2, logger: logger)
        defer { Task { await server.stop() } }
        let refused = try await server.exchange("/v1/enrol", body: Array("""
            {"app":"\(RunningServer.app)","device":"intruder","secret":"not-the-secret"}
            """.utf8))
        #expect(refused.status == 403)
        let requestID = try #require(refused.requestID)
        #expect(!requestID.isEmpty)
        // Every line is one JSON object ending the line.
        #expect(captured.lines.withLock { $0 }.allSatisfy { $0.hasSuffix("\n") && !$0.dropLast().contains("\n") })
        let line = try #require(captured.objects.first { $0["message"] == .string("enrolment refused") })
        #expect(line["request"] == .string(requestID))
        #expect(line["level"] == .string("notice"))
        #expect(line["label"] == .string("sightline.cloud"))
        #expect(line["time"] == .string("2026-11-25T10:00:00.125Z"))
        #expect(line["device"] == .string("intruder"))
        #expect(line["reason"] == .string("enrolmentRefused"))
        // Another request has another id.
        let other = try await server.exchange("/v1/enrol", body: Array("{}".utf8))
        #expect(other.requestID != nil && other.requestID != requestID)
        // A name refused for a line break is not written into the log.
        let forgedBody = #"{"app":"\#(RunningServer.app)","device":"x\nforged line","secret":"\#(RunningServer.secret)"}"#
        let forged = try await server.exchange("/v1/enrol", body: Array(forgedBody.utf8))
        #expect(forged.status == 400)
        let invalid = try #require(captured.objects.first { $0["request"] == forged.requestID.map(JSONValue.string) })
        #expect(invalid["reason"] == .string("invalidOption") && invalid["device"] == nil)
        #expect(captured.lines.withLock { $0 }.allSatisfy { !$0.contains("forged line") })
    }

    /// Each sync request is one server span, with a child per step in
    /// order; a frame that fails verification has no inflate or ingest.
    @Test func aSyncIsOneSpanWithAChildForEachStep() async throws {
        let tracer = InMemoryTracer()
        let server = try await RunningServer.start(threshold: 2, tracer: tracer)
        defer { Task { await server.stop() } }
        let store = try await server.enrolledDevice(seed: 51)
        try PublicRecipe.engage(store)
        let report = try await SyncClient(store: store, transport: HTTPTransport(baseURL: server.url)).run()
        #expect(report.failure == nil && report.framesSent >= 1)
        #expect(try await server.request("/v1/sync", body: Array("not a frame".utf8)).status == 400)

        let spans = tracer.finishedSpans
        let roots = spans.filter { $0.operationName == "POST /v1/sync" }
        #expect(roots.count == report.framesSent + report.probes + 1)
        #expect(roots.allSatisfy { $0.kind == .server && $0.parentSpanID == nil })
        for root in roots {
            let steps = spans.filter { $0.parentSpanID == root.spanID }
            #expect(steps.allSatisfy { $0.traceID == root.traceID && $0.kind == .internal })
            let names = steps.sorted { $0.startInstant.nanosecondsSinceEpoch < $1.startInstant.nanosecondsSinceEpoch }.map(\.operationName)
            switch root.attributes["sightline.outcome"]?.toSpanAttribute() {
            case .string("accepted"), .string("duplicate"):
                #expect(names == ["receive", "verify", "inflate", "ingest", "reply"])
                #expect(root.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(200))
                let inflate = steps.first { $0.operationName == "inflate" }
                #expect((inflate?.attributes["sightline.frame.messages"]?.toSpanAttribute()).map { if case .int64(let count) = $0 { count > 0 } else { false } } == true)
            case .string("malformed"):
                #expect(names == ["receive", "verify", "reply"])
                #expect(root.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(400))
            case let other:
                Issue.record("unexpected outcome \(String(describing: other))")
            }
        }
        #expect(roots.contains { $0.attributes["sightline.outcome"]?.toSpanAttribute() == .string("malformed") })
    }

    /// A number is a JSON number, a bool a JSON bool; text that reads as
    /// one, and a double JSON cannot hold, stay strings.
    @Test func numbersInMetadataAreJSONNumbers() {
        let captured = Captured()
        var handler = JSONLogHandler(label: "l", clock: ManualClock(Timestamp(millisecondsSince1970: 0)),
                                     sink: JSONLogHandler.Sink { line in captured.lines.withLock { $0.append(line) } })
        handler.metadata = ["count": .stringConvertible(192), "big": .stringConvertible(UInt64.max), "ms": .stringConvertible(1.5),
                            "nan": .stringConvertible(Double.nan), "ok": .stringConvertible(true), "text": "192"]
        handler.log(event: LogEvent(level: .info, message: "m", metadata: nil, source: "s", file: #fileID, function: #function, line: #line))
        let line = captured.objects.first
        #expect(line?["count"] == .integer(192) && line?["ms"] == .double(1.5) && line?["ok"] == .bool(true))
        #expect(line?["big"] == .string("18446744073709551615") && line?["nan"] == .string("nan") && line?["text"] == .string("192"))
    }

    @Test func metadataNamedLikeAMemberIsKeptApart() {
        let captured = Captured()
        var handler = JSONLogHandler(label: "l", clock: ManualClock(Timestamp(millisecondsSince1970: 0)),
                                     sink: JSONLogHandler.Sink { line in captured.lines.withLock { $0.append(line) } })
        handler.metadata = ["level": "mine", "nested": .dictionary(["b": "2", "a": .array(["x", .stringConvertible(3)])])]
        handler.log(event: LogEvent(level: .warning, message: "m", metadata: ["message": "also mine"], source: "s",
                                    file: #fileID, function: #function, line: #line))
        let line = captured.objects.first
        #expect(line?["level"] == .string("warning"))
        #expect(line?["message"] == .string("m"))
        #expect(line?["metadata.level"] == .string("mine"))
        #expect(line?["metadata.message"] == .string("also mine"))
        #expect(line?["nested"] == .object(["a": .array([.string("x"), .integer(3)]), "b": .string("2")]))
        #expect(line?["time"] == .string("1970-01-01T00:00:00Z"))
    }
}
