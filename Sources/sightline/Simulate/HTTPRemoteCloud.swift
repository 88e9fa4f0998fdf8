import Dispatch
import Foundation
import IndexModel
import NIOCore
import Simulation
import SyncHTTP
import SyncWire

/// `simulate --cloud URL`: the simulator's remote cloud over HTTP, through the
/// same `HTTPTransport` and enrolment the `sync` command uses. The simulator
/// is synchronous (one thread, virtual time), so each call waits for its
/// answer; the command runs on the main thread, outside the concurrency pool
/// the HTTP client's tasks need.
struct HTTPRemoteCloud: RemoteCloud {
    let location: String
    let storePath: String
    let enrolmentSecret: String
    private let transport: HTTPTransport

    init(url: String, storePath: String, enrolmentSecret: String) {
        location = url
        self.storePath = storePath
        self.enrolmentSecret = enrolmentSecret
        transport = HTTPTransport(baseURL: url, timeout: .seconds(10))
    }

    func enrol(app: AppID, device: DeviceID) throws -> [UInt8] {
        let (location, secret) = (self.location, enrolmentSecret)
        return try HTTPRemoteCloud.wait {
            try await HTTPEnrolment.enrol(baseURL: location, app: app, device: device, secret: secret, timeout: .seconds(10))
        }
    }

    func exchange(_ frame: [UInt8]) -> [UInt8]? {
        let transport = self.transport
        return try? HTTPRemoteCloud.wait { try await transport.exchange(frame) }
    }

    /// Runs `body` on the concurrency pool and waits for it on this thread.
    private static func wait<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let outcome = Outcome<T>()
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            do { outcome.set(.success(try await body())) } catch { outcome.set(.failure(error)) }
            done.signal()
        }
        done.wait()
        return try outcome.get()
    }

    private final class Outcome<T: Sendable>: @unchecked Sendable {
        private var result: Result<T, any Error>?
        private let lock = NSLock()

        func set(_ value: Result<T, any Error>) { lock.withLock { result = value } }
        func get() throws -> T { try lock.withLock { result! }.get() }
    }
}
