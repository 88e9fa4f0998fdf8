import Foundation
import IndexModel
import Testing

/// `cloud serve --log-format json`: what a log pipeline reads of a real
/// server process.
@Suite struct LogFormatTests {
    @Test func cloudServeWritesEveryLogLineAsJSONWithTheRequestID() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let secret = directory.appendingPathComponent("secret")
        try Data("a-secret-the-cli-test-enrols-with\n".utf8).write(to: secret)
        let server = try Child(["cloud", "serve", "--db", directory.appendingPathComponent("cloud.sqlite").path, "--port", "0",
                                "--app", "com.example.app", "--enrolment-secret-file", secret.path,
                                "--log-level", "notice", "--log-format", "json"], in: directory)
        defer { server.stop() }
        func lines() -> [JSONObject] {
            server.errorText.split(separator: "\n").compactMap { line in
                guard case .object(let object)? = try? JSONReader.parse(String(line)) else { return nil }
                return object
            }
        }
        var url: String?
        for _ in 0..<400 where url == nil {
            url = lines().first { $0["message"] == .string("listening") }?["url"]?.stringValue
            if url == nil { Thread.sleep(forTimeInterval: 0.05) }
        }
        let base = try #require(url, "no listening line in \(server.errorText)")
        #expect(base.hasPrefix("http://127.0.0.1:"))

        // A device that enrols with the wrong secret is refused, and the server says so in a line of its request.
        let wrong = directory.appendingPathComponent("wrong")
        try Data("not-the-secret-of-this-app\n".utf8).write(to: wrong)
        let device = directory.appendingPathComponent("device.sqlite").path
        let operations = directory.appendingPathComponent("ops.jsonl")
        try Data(#"{"op":"index","index":"notes","items":[{"id":"n1","title":"a note"}]}"#.utf8).write(to: operations)
        #expect(try Child.run(["device", "apply", "--db", device, operations.path], in: directory).status == 0)
        let sync = try Child.run(["sync", "--db", device, "--cloud", base, "--enrolment-secret-file", wrong.path, "--attempts", "1"],
                             in: directory)
        #expect(sync.status != 0)
        var refused: JSONObject?
        for _ in 0..<100 where refused == nil {
            refused = lines().first { $0["message"] == .string("enrolment refused") }
            if refused == nil { Thread.sleep(forTimeInterval: 0.05) }
        }
        let line = try #require(refused, "no refusal in \(server.errorText)")
        #expect(line["level"] == .string("notice"))
        #expect(line["reason"] == .string("enrolmentRefused"))
        #expect((line["request"]?.stringValue ?? "").count >= 16)
        #expect(line["time"]?.stringValue.flatMap(ISO8601.parse) != nil)
        // Nothing on standard error is anything but a JSON line.
        let text = server.errorText
        #expect(text.split(separator: "\n").count == lines().count, "\(text)")
    }

    @Test func anUnknownLogFormatIsAUsageError() throws {
        let result = try CLIRunner.run(["cloud", "serve", "--db", "cloud.sqlite", "--log-format", "xml"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--log-format must be text or json (got \"xml\")"))
    }
}
