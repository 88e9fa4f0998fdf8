import Foundation
import Glibc
import IndexModel
import Testing

/// `cloud serve --otlp-traces URL`: a real server process exports its sync
/// spans with swift-otel to an OTLP/HTTP collector, here a few lines of
/// Python's http.server that keep every body posted to them.
@Suite struct TracingCLITests {
    static let collector = """
        import http.server, os, sys
        out = sys.argv[1]
        class Collector(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                name = os.path.join(out, "post-%d" % len(os.listdir(out)))
                with open(name + ".tmp", "wb") as f:
                    f.write(body)
                os.rename(name + ".tmp", name + "-" + self.path.strip("/").replace("/", "_"))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}")
            def log_message(self, *arguments):
                pass
        server = http.server.HTTPServer(("127.0.0.1", 0), Collector)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """

    @Test func cloudServeExportsEachSyncAsASpanWithItsStepsOverOTLP() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let posts = directory.appendingPathComponent("posts")
        try FileManager.default.createDirectory(at: posts, withIntermediateDirectories: true)
        let script = directory.appendingPathComponent("collector.py")
        try Data(Self.collector.utf8).write(to: script)
        let collector = Process()
        collector.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        collector.arguments = ["python3", script.path, posts.path]
        let port = Pipe()
        collector.standardOutput = port
        try collector.run()
        defer {
            // SIGKILL: the test runner's children inherit a signal mask that
            // holds back SIGTERM, which Python, unlike `sightline`, never undoes.
            kill(collector.processIdentifier, SIGKILL)
            collector.waitUntilExit()
        }
        let portLine = String(decoding: port.fileHandleForReading.availableData, as: UTF8.self)
        let collectorPort = try #require(Int(portLine.trimmingCharacters(in: .whitespacesAndNewlines)), "collector said \(portLine)")

        let secret = directory.appendingPathComponent("secret")
        try Data("a-secret-the-cli-test-enrols-with\n".utf8).write(to: secret)
        let server = try ServeProcess.start(db: directory.appendingPathComponent("cloud.sqlite").path, threshold: 2, secret: secret,
                                            environment: ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"], in: directory,
                                            extra: ["--otlp-traces", "http://127.0.0.1:\(collectorPort)/v1/traces"])
        let device = directory.appendingPathComponent("device.sqlite").path
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        #expect(try Child.run(["device", "apply", "--db", device, root.appendingPathComponent("docs/examples/recipes.jsonl").path],
                              in: directory).status == 0)
        let sync = try Child.run(["sync", "--db", device, "--cloud", server.url, "--enrolment-secret-file", secret.path, "--json"],
                                 in: directory)
        #expect(sync.status == 0, "\(sync.stderr)")
        let frames = try #require(try JSONReader.parse(sync.stdout)["frames"]?.integer)
        #expect(frames >= 1)
        // A graceful stop sends the spans still batched.
        server.child.stop()

        var spans: [JSONObject] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: posts.path) where name.hasSuffix("v1_traces") {
            let document = try JSONReader.parse(String(decoding: try Data(contentsOf: posts.appendingPathComponent(name)), as: UTF8.self))
            for resource in document["resourceSpans"]?.array ?? [] {
                #expect(resource["resource"]?["attributes"]?.array?.contains {
                    $0["key"] == .string("service.name") && $0["value"]?["stringValue"] == .string("sightline-cloud")
                } == true)
                for scope in resource["scopeSpans"]?.array ?? [] {
                    for case .object(let span) in scope["spans"]?.array ?? [] { spans.append(span) }
                }
            }
        }
        let roots = spans.filter { $0["name"] == .string("POST /v1/sync") }
        #expect(roots.count == Int(frames), "\(spans.map { $0["name"] })")
        for root in roots {
            let children = spans.filter { $0["parentSpanId"] == root["spanId"] && $0["traceId"] == root["traceId"] }
            #expect(Set(children.compactMap { $0["name"]?.stringValue }) == ["receive", "verify", "inflate", "ingest", "reply"])
        }
    }

    @Test func anOTLPURLMustBeHTTP() throws {
        let result = try CLIRunner.run(["cloud", "serve", "--db", "cloud.sqlite", "--otlp-traces", "collector:4318"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--otlp-traces must be an http:// or https:// URL"))
    }
}
