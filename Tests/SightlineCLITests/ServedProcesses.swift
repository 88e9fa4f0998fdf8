import CloudPostgres
import Foundation
import IndexModel
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A `sightline` process run in the background, its output going to files in
/// the test's directory, so that many can run at once and each wait has a
/// deadline.
final class Child {
    let process: Process
    let arguments: [String]
    let stdout: URL
    let stderr: URL

    /// Starts `sightline arguments` with `environment` added to ours.
    init(_ arguments: [String], environment: [String: String] = [:], in directory: URL) throws {
        let name = "child-\(UUID().uuidString)"
        stdout = directory.appendingPathComponent("\(name).out")
        stderr = directory.appendingPathComponent("\(name).err")
        _ = FileManager.default.createFile(atPath: stdout.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderr.path, contents: nil)
        self.arguments = arguments
        process = Process()
        process.executableURL = CLIRunner.binary
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: stdout)
        process.standardError = try FileHandle(forWritingTo: stderr)
        try process.run()
    }

    var errorText: String { String(decoding: FileManager.default.contents(atPath: stderr.path) ?? Data(), as: UTF8.self) }

    /// Polls stderr until `pattern` matches, and returns the match's first
    /// capture (or the whole match); throws when the process exits first or
    /// nothing matches within `timeout`, killing it then.
    func waitForError(_ pattern: Regex<(Substring, Substring)>, timeout: Duration = .seconds(20)) throws -> String {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let match = errorText.firstMatch(of: pattern) { return String(match.output.1) }
            guard process.isRunning else {
                throw ServeFailure("sightline \(arguments.first ?? "") exited with status \(process.terminationStatus): \(errorText)")
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        crash()
        throw ServeFailure("sightline \(arguments.first ?? "") printed nothing matching within \(timeout): \(errorText)")
    }
    var outputText: String { String(decoding: FileManager.default.contents(atPath: stdout.path) ?? Data(), as: UTF8.self) }

    /// Waits for the process to exit. Past `timeout` it is killed and the
    /// test fails, so that no test waits for ever.
    @discardableResult
    func wait(timeout: Duration = .seconds(60), sourceLocation: SourceLocation = #_sourceLocation) -> CLIRunner.Result {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.01) }
        if process.isRunning {
            Issue.record("sightline \(arguments.joined(separator: " ")) still ran after \(timeout): killed",
                         sourceLocation: sourceLocation)
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        return CLIRunner.Result(status: process.terminationStatus, stdout: outputText, stderr: errorText)
    }

    /// Asks the process to stop (SIGTERM) and waits up to 20 seconds before killing it.
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = ContinuousClock.now + .seconds(20)
        while process.isRunning && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.01) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Kills the process at once (SIGKILL), as a crash or the OOM killer would.
    func crash() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Runs `sightline arguments` to its end (at most `timeout`).
    static func run(_ arguments: [String], environment: [String: String] = [:], in directory: URL,
                    timeout: Duration = .seconds(60), sourceLocation: SourceLocation = #_sourceLocation) throws -> CLIRunner.Result {
        try Child(arguments, environment: environment, in: directory).wait(timeout: timeout, sourceLocation: sourceLocation)
    }

    /// Runs `sightline arguments --json` and parses what it prints.
    static func json(_ arguments: [String], environment: [String: String] = [:], in directory: URL,
                     sourceLocation: SourceLocation = #_sourceLocation) throws -> JSONValue {
        let result = try run(arguments, environment: environment, in: directory, sourceLocation: sourceLocation)
        #expect(result.status == 0, "sightline \(arguments.joined(separator: " ")): \(result.stderr)", sourceLocation: sourceLocation)
        return try JSONReader.parse(result.stdout)
    }
}

/// `sightline cloud serve` on a store (a SQLite file or a PostgreSQL URL),
/// started in the background; `url` is where it listens.
struct ServeProcess {
    let child: Child
    let url: String

    /// Starts `cloud serve` with the app `com.example.app` registered with
    /// `secret`, and waits (at most 20 seconds) for it to print its URL.
    static func start(db: String, threshold: Int, secret: URL, environment: [String: String] = [:], in directory: URL,
                      extra: [String] = []) throws -> ServeProcess {
        try starting(db: db, threshold: threshold, secret: secret, environment: environment, in: directory, extra: extra)
            .listening()
    }

    /// A server launched but not yet listening, so that several start at once.
    struct Starting {
        let child: Child

        func listening() throws -> ServeProcess {
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline {
                let text = child.errorText
                if let range = text.range(of: #"(?m)^listening on http://127\.0\.0\.1:\d+"#, options: .regularExpression) {
                    return ServeProcess(child: child, url: String(text[range].dropFirst("listening on ".count)))
                }
                guard child.process.isRunning else {
                    throw ServeFailure("cloud serve exited with status \(child.process.terminationStatus): \(text)")
                }
                Thread.sleep(forTimeInterval: 0.02)
            }
            child.crash()
            throw ServeFailure("cloud serve did not print its URL within 20 seconds: \(child.errorText)")
        }
    }

    static func starting(db: String, threshold: Int, secret: URL, environment: [String: String] = [:], in directory: URL,
                         extra: [String] = []) throws -> Starting {
        Starting(child: try Child(["cloud", "serve", "--db", db, "--port", "0", "--threshold", String(threshold),
                                   "--app", "com.example.app", "--enrolment-secret-file", secret.path,
                                   "--log-level", "warning"] + extra,
                                  environment: environment, in: directory))
    }
}

struct ServeFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// How many sessions of `pool`'s database wait for a lock.
func lockWaiters(_ pool: PostgresPool) throws -> Int {
    try pool.withSession { session in
        Int(try session.query("""
            SELECT count(*)::int8 FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND state = 'active'
            """)[0][0].int64)
    }
}
