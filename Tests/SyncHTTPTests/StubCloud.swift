import Hummingbird
import Logging
import NIOCore
import Synchronization

/// A stand-in for the cloud on a loopback port, for answers a real server
/// never gives (a 5xx with a text body, an oversized reply, a key of the
/// wrong length, no answer in time): every request gets what `answer` says
/// for its path, after `delay`, and the stub records each request's path.
struct StubCloud: Sendable {
    let url: String
    private let paths: RequestedPaths
    private let task: Task<Void, any Error>

    /// The paths requested so far, in order.
    var requestedPaths: [String] { paths.all }

    /// A stub that answers each request with `answer`'s status and body
    /// after `delay`. With `stallAfter`, it sends the head and that many
    /// bytes of the body, then nothing more until the client goes, as a
    /// hostile cloud that drips its answer would.
    static func start(delay: Duration = .zero, stallAfter: Int? = nil,
                      answer: @escaping @Sendable (_ path: String) -> (status: HTTPResponse.Status, body: [UInt8])) async throws -> StubCloud {
        let paths = RequestedPaths()
        let responder = CallbackResponder<BasicRequestContext> { request, _ in
            paths.append(request.uri.path)
            _ = try await request.body.collect(upTo: 1 << 24)
            if delay > .zero { try await Task.sleep(for: delay) }
            let (status, body) = answer(request.uri.path)
            guard let stallAfter else { return Response(status: status, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body))) }
            return Response(status: status, body: ResponseBody(contentLength: body.count) { writer in
                try await writer.write(ByteBuffer(bytes: body.prefix(stallAfter)))
                // Nothing more: a stream nobody yields to ends only when
                // the task is cancelled (the stub stopping).
                for await _ in AsyncStream<Int> { _ in } {}
                try await writer.finish(nil)
            })
        }
        var logger = Logger(label: "sightline.stub-cloud")
        logger.logLevel = .critical
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let application = Application(responder: responder,
                                      configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: "stub-cloud"),
                                      onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) },
                                      logger: logger)
        let task = Task { try await application.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw StubCloudError() }
        return StubCloud(url: "http://127.0.0.1:\(port)", paths: paths, task: task)
    }

    /// Stops the listener.
    func stop() async {
        task.cancel()
        _ = try? await task.value
    }
}

/// The stub's listener did not start.
struct StubCloudError: Error {}

/// The paths a stub was asked for, shared with its responder.
final class RequestedPaths: Sendable {
    private let paths = Mutex<[String]>([])

    func append(_ path: String) {
        paths.withLock { $0.append(path) }
    }

    var all: [String] { paths.withLock { $0 } }
}
