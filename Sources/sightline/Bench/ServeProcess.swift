import Foundation

/// A `sightline cloud serve` process this benchmark started from its own
/// binary, on a free loopback port: a server with its own process and
/// connection pool, as in production.
final class ServeProcess {
    let process: Process
    /// `http://127.0.0.1:PORT`.
    let url: String

    /// Starts `cloud serve` with `arguments` after `--db … --port 0`, writing
    /// its stderr to `log`, and waits (up to 30 s) for its "listening on"
    /// line. `environment` is added to this process's own (the password
    /// goes there, never on the command line).
    init(db: String, arguments: [String], environment: [String: String], log: URL) throws {
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process = Process()
        process.executableURL = ServeProcess.executable
        process.arguments = ["cloud", "serve", "--db", db, "--host", "127.0.0.1", "--port", "0"] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let text = String(decoding: FileManager.default.contents(atPath: log.path) ?? Data(), as: UTF8.self)
            if let range = text.range(of: #"(?m)^listening on http://127\.0\.0\.1:\d+"#, options: .regularExpression) {
                url = String(text[range].dropFirst("listening on ".count))
                return
            }
            guard process.isRunning else { break }
            Thread.sleep(forTimeInterval: 0.02)
        }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        let text = String(decoding: FileManager.default.contents(atPath: log.path) ?? Data(), as: UTF8.self)
        throw BenchError(message: "cloud serve did not start: \(text.suffix(2000))")
    }

    /// Stops the server (SIGTERM) and waits for it.
    func stop() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }

    deinit {
        stop()
    }

    /// This binary, as the kernel knows it (robust to a relative argv[0]).
    static var executable: URL {
        if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            return URL(fileURLWithPath: path)
        }
        return URL(fileURLWithPath: CommandLine.arguments[0])
    }
}
