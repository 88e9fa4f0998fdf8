import Foundation
import IndexModel
import ScratchDirectory

/// Runs the built `sightline` binary, as a user would.
struct CLIRunner {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String

        var stdoutLines: [String] { stdout.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }
    }

    /// The binary beside the test bundle (`.build/<configuration>/sightline`).
    static let binary: URL = {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("sightline")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        // Fall back to the package's debug build folder.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/sightline")
    }()

    /// Runs `executable` (the `sightline` binary unless given) with `arguments`.
    static func run(_ arguments: [String], stdin: Data? = nil, executable: URL = binary) throws -> Result {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let input = Pipe()
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(stdin) }
        try input.fileHandleForWriting.close()
        // Read both pipes before waiting so a large output cannot block the child.
        let group = DispatchGroup()
        nonisolated(unsafe) var errData = Data()
        group.enter()
        DispatchQueue.global().async {
            errData = err.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                      stderr: String(decoding: errData, as: UTF8.self))
    }

    static func json(_ arguments: [String]) throws -> JSONValue {
        let result = try run(arguments)
        return try JSONReader.parse(result.stdout)
    }
}

/// A fresh directory under the system's temporary directory, removed when the tests end.
func temporaryDirectory() throws -> URL {
    try ScratchDirectory.make("sightline-cli")
}

func write(_ lines: [String], to url: URL) throws {
    try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: url)
}

extension JSONValue {
    subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    var integer: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    var array: [JSONValue]? {
        if case .array(let elements) = self { return elements }
        return nil
    }
}

/// Starts `cloud serve` on a free port; returns the process and its base URL.
func servedCloud(_ directory: URL, threshold: Int, extra: [String] = []) throws -> (process: Process, url: String, stderr: URL) {
    let secret = directory.appendingPathComponent("secret")
    try Data("a-secret-the-cli-test-enrols-with\n".utf8).write(to: secret)
    let log = directory.appendingPathComponent("serve.err")
    _ = FileManager.default.createFile(atPath: log.path, contents: nil)
    let process = Process()
    process.executableURL = CLIRunner.binary
    process.arguments = ["cloud", "serve", "--db", directory.appendingPathComponent("cloud.sqlite").path, "--port", "0",
                         "--threshold", String(threshold), "--app", "com.example.app",
                         "--enrolment-secret-file", secret.path, "--log-level", "warning"] + extra
    process.standardError = try FileHandle(forWritingTo: log)
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    for _ in 0..<200 {
        let text = String(decoding: FileManager.default.contents(atPath: log.path) ?? Data(), as: UTF8.self)
        // The public listener's line, not the admin one's.
        if let range = text.range(of: #"(?m)^listening on http://127\.0\.0\.1:\d+"#, options: .regularExpression) {
            return (process, String(text[range].dropFirst("listening on ".count)), log)
        }
        Thread.sleep(forTimeInterval: 0.05)
    }
    process.terminate()
    throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "cloud serve did not start"])
}
