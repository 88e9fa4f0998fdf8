import AsyncHTTPClient
import CloudCore
@testable import CloudServer
import CloudSQLite
import DeviceStore
import Foundation
import Glibc
import GRDB
import IndexModel
import NIOCore
import NIOHTTP1
import ScratchDirectory
import ServerTestSupport
import SyncHTTP
import SyncWire
import Testing

private let app = RunningServer.app
private let secret = RunningServer.secret
private let recipeURL = PublicRecipe.url

private func object(_ text: String) throws -> JSONObject {
    guard case .object(let object) = try JSONReader.parse(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
        throw TransportError("not a JSON object: \(text)")
    }
    return object
}

/// A response as "status error", e.g. "413 tooLarge".
private func outcome(_ response: (status: UInt, body: String)) throws -> String {
    guard case .string(let code)? = try object(response.body)["error"] else { return "\(response.status)" }
    return "\(response.status) \(code)"
}

@Suite(.serialized) struct CloudServerTests {
    @Test func devicesSyncOverHTTPAndThePublicIndexFollows() async throws {
        let server = try await RunningServer.start(threshold: 2)
        defer { Task { await server.stop() } }
        var stores: [DeviceStore] = []
        for seed: UInt64 in 1...3 { stores.append(try await server.enrolledDevice(seed: seed)) }
        for store in stores { try PublicRecipe.engage(store) }
        for _ in 0..<2 {
            for store in stores {
                let report = try await SyncClient(store: store, transport: HTTPTransport(baseURL: server.url)).run()
                #expect(report.failure == nil)
            }
        }
        let search = try await server.request("/v1/apps/\(app)/public?q=potat")
        #expect(search.status == 200)
        guard case .array(let results)? = try object(search.body)["results"], case .object(let first)? = results.first else {
            Issue.record("no results: \(search.body)")
            return
        }
        #expect(first["title"] == .string("Baked Potato Chips"))
        #expect(first["devices"] == .integer(3) && first["engaged"] == .integer(3) && first["shown"] == .integer(3))
        let stats = try object(try await server.admin("/v1/stats").body)
        #expect(stats["publicItems"] == .integer(1) && stats["devices"] == .integer(3))
        let metrics = try await server.admin("/metrics")
        #expect(metrics.body.contains("sightline_messages_accepted_total"))
        #expect(try await server.request("/healthz").status == 200)
        #expect(try await server.admin("/healthz").status == 200)
    }

    /// Stats count devices, hashes and votes below K: an oracle for who
    /// voted for what. They, and the metrics, are served only on the
    /// operator's listener; the public one does not have them, and answers
    /// the same for an item below K as for one that does not exist.
    @Test func thePublicListenerRevealsNothingBelowTheThreshold() async throws {
        let server = try await RunningServer.start(threshold: 3)
        defer { Task { await server.stop() } }
        let store = try await server.enrolledDevice(seed: 31)
        try PublicRecipe.engage(store)
        _ = try await SyncClient(store: store, transport: HTTPTransport(baseURL: server.url)).run()
        #expect(try server.cloud.stats().hashes == 1)
        for path in ["/v1/stats", "/metrics"] {
            #expect(try await server.request(path).status == 404, "\(path) on the public listener")
        }
        let voted = PublicHash.of(app: app, activityType: "com.yummly/browseRecipe", identity: "url:" + recipeURL)
        let unknown = PublicHash.of(app: app, activityType: "com.yummly/browseRecipe", identity: "url:https://nobody.example")
        #expect(try server.cloud.entry(app: app, hash: voted)?.liveVotes == 1, "the item exists below K")
        let below = try await server.request("/v1/apps/\(app)/items/\(voted.hex)")
        let absent = try await server.request("/v1/apps/\(app)/items/\(unknown.hex)")
        #expect(below.status == 404 && below == absent)
        let search = try await server.request("/v1/apps/\(app)/public?q=potato")
        #expect(search.status == 200 && search.body == "{\"results\":[]}\n")
    }

    @Test func aFramePostedTwiceIsAcknowledgedTwiceAndCountedOnce() async throws {
        let server = try await RunningServer.start()
        defer { Task { await server.stop() } }
        let store = try await server.enrolledDevice(seed: 1)
        try PublicRecipe.engage(store)
        let frame = try #require(try store.pendingFrame(now: store.now))
        let first = try await server.request("/v1/sync", body: frame.encoded)
        let second = try await server.request("/v1/sync", body: frame.encoded)
        #expect(first.status == 200 && second.status == 200)
        #expect(try server.cloud.stats().logRows == 1 && server.cloud.stats().messages == 3)
    }

    @Test func badBodiesGetA4xxWithAJSONErrorAndChangeNothing() async throws {
        let server = try await RunningServer.start()
        defer { Task { await server.stop() } }
        let store = try await server.enrolledDevice(seed: 1)
        try PublicRecipe.engage(store)
        let records = try store.pendingOutbox(after: .start, limit: 10)

        let oversize = try await server.request("/v1/sync", body: [UInt8](repeating: 7, count: WireLimits.maximumFrameBytes + 1))
        #expect(try outcome(oversize) == "413 tooLarge")

        let garbage = try await server.request("/v1/sync", body: Array("not a frame".utf8))
        #expect(try outcome(garbage) == "400 malformed")

        let forged = UploadFrame(app: app, device: store.deviceID, records: records, key: [UInt8](repeating: 9, count: 32))
        let forgedReply = try await server.request("/v1/sync", body: forged.encoded)
        #expect(try outcome(forgedReply) == "401 badSignature")

        let enrolAgain = try await server.request("/v1/enrol", body: Array("""
            {"app":"\(app)","device":"\(store.deviceID.rawValue)","secret":"\(secret)"}
            """.utf8))
        #expect(enrolAgain.status == 409)
        let badJSON = try await server.request("/v1/enrol", body: Array("{\"app\":1}".utf8))
        #expect(badJSON.status == 400)
        let badProof = try await server.request("/v1/enrol", body: Array("""
            {"app":"\(app)","device":"x","secret":"\(secret)","proof":"AAAA"}
            """.utf8))
        #expect(badProof.status == 400)
        let wrongSecret = try await server.request("/v1/enrol", body: Array("""
            {"app":"\(app)","device":"other","secret":"wrong-secret-but-long-enough"}
            """.utf8))
        #expect(wrongSecret.status == 403)
        let badHash = try await server.request("/v1/apps/\(app)/items/xyz")
        #expect(badHash.status == 400)
        let badQuery = try await server.request("/v1/apps/\(app)/public?query=title%20%3D%3D")
        #expect(try outcome(badQuery) == "400 invalidQuery")
        #expect(try server.cloud.stats().logRows == 0)
    }

    /// A route's path with a method it does not declare is 405 with an
    /// `Allow` header; a path no route has is 404; query parameters that are
    /// not what the API says (repeated, not an integer) are 400.
    @Test func undeclaredMethodsAre405AndOddParametersAre400() async throws {
        let server = try await RunningServer.start()
        defer { Task { await server.stop() } }
        for (method, path, allow) in [(HTTPMethod.PUT, "/v1/sync", "POST"), (.GET, "/v1/enrol", "POST"),
                                      (.DELETE, "/v1/apps/a/public", "GET"), (.POST, "/v1/apps/a/items/00", "GET"),
                                      (.TRACE, "/healthz", "GET")] {
            var request = HTTPClientRequest(url: server.url + path)
            request.method = method
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
            #expect(response.status == .methodNotAllowed && response.headers["Allow"] == [allow], "\(method) \(path)")
        }
        let admin = try await HTTPClient.shared.execute({ var r = HTTPClientRequest(url: server.adminURL + "/metrics"); r.method = .POST; return r }(),
                                                        timeout: .seconds(10))
        #expect(admin.status == .methodNotAllowed)
        #expect(try await server.request("/v1/nothing").status == 404)
        for query in ["limit=null", "limit=5&limit=6", "q=a&q=b", "limit=0", "limit=1001"] {
            #expect(try await server.request("/v1/apps/\(app)/public?\(query)").status == 400, "\(query)")
        }
        #expect(try await server.request("/v1/apps/\(app)/public?limit=5&q=a").status == 200)
    }

    /// Ingest blocks on SQLite; it runs on NIO's blocking pool, so frames
    /// waiting for a store another process holds locked do not keep the
    /// server from answering anything else.
    @Test func framesWaitingOnALockedStoreDoNotStallOtherRequests() async throws {
        let path = try ScratchDirectory.make("sightline-stall").appendingPathComponent("cloud.sqlite").path
        let server = try await RunningServer.start(location: .file(path))
        defer { Task { await server.stop() } }
        let store = try await server.enrolledDevice(seed: 41)
        try PublicRecipe.engage(store)
        let frame = try #require(try store.pendingFrame(now: store.now))

        // Another connection holds the write lock from a thread of its own:
        // a slow transaction, as long as the test wants.
        let holder = try DatabaseQueue(path: path)
        let locked = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let released = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            try? holder.inDatabase { db in
                try db.execute(sql: "BEGIN IMMEDIATE")
                locked.signal()
                release.wait()
                try db.execute(sql: "COMMIT")
            }
            released.signal()
        }
        locked.wait()
        let syncs = (0..<16).map { _ in Task { try await server.request("/v1/sync", body: frame.encoded).status } }
        // Wait until the server has read a frame's body, after which its
        // ingest waits for the lock: the frame-size histogram counts it.
        let deadline = ContinuousClock.now + .seconds(30)
        func framesRead() async throws -> Int {
            let metrics = try await server.admin("/metrics").body
            let line = metrics.split(separator: "\n").first { $0.hasPrefix("sightline_frame_size_bytes_count") }
            return line.flatMap { $0.split(separator: " ").last.flatMap { Int($0) } } ?? 0
        }
        while try await framesRead() == 0 {
            guard ContinuousClock.now < deadline else {
                Issue.record("no frame reached the server within 30 s")
                break
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        // A client of its own: the shared one's connections to the server
        // are all busy with the waiting frames. The health check must answer
        // while the lock is still held (frames wait up to the store's 10 s
        // busy timeout); with ingest on the cooperative pool it waited for
        // the lock. Other tests share this process's pool, hence no tighter
        // bound.
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        let answer = try? await client.execute(HTTPClientRequest(url: server.url + "/healthz"), timeout: .seconds(8))
        try await client.shutdown()
        #expect(answer?.status == .ok, "the health check waited for the locked store")
        release.signal()
        released.wait()
        for sync in syncs {
            // 503 `unavailable` when the lock outlived the busy timeout.
            #expect([200, 503].contains(try await sync.value))
        }
    }

    /// A client that sends its body a byte at a time, never idle long
    /// enough for the idle timeout, is answered 408 once the client timeout
    /// is up, and its connection is closed.
    @Test func aBodyThatTricklesInIsCutOffAtTheClientTimeout() async throws {
        var configuration = CloudServerConfiguration(port: 0)
        configuration.clientTimeout = .milliseconds(500)
        let server = try await RunningServer.start(configuration: configuration)
        defer { Task { await server.stop() } }
        let port = try #require(URLComponents(string: server.url)?.port)
        let head = Array("POST /v1/sync HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n".utf8)
        let (open, answer) = try await Task.detached {
            try RawClient.trickle(port: port, head: head, every: .milliseconds(100), forAtMost: .seconds(5))
        }.value
        // Without the deadline the client trickles for all of its 5 s.
        #expect(open < .seconds(4), "the server kept a trickling client for \(open)")
        // The 408 is written before the close; a client whose next byte
        // meets the closed socket may lose it to the reset.
        #expect(answer.isEmpty || answer.hasPrefix("HTTP/1.1 408"), "\(answer)")
        #expect(try await server.request("/healthz").status == 200)
    }

    @Test func aDeviceOverItsRateLimitGets429() async throws {
        let server = try await RunningServer.start(configuration: CloudServerConfiguration(framesPerSecond: 0.001, burst: 1))
        defer { Task { await server.stop() } }
        let store = try await server.enrolledDevice(seed: 1)
        try PublicRecipe.engage(store)
        let frame = try #require(try store.pendingFrame(now: store.now))
        #expect(try await server.request("/v1/sync", body: frame.encoded).status == 200)
        let limited = try await server.request("/v1/sync", body: frame.encoded)
        #expect(try outcome(limited) == "429 rateLimited")
    }

    /// Junk that names a device is charged to the address that sent it, not
    /// to the device it names: however much flows, the victim's own signed
    /// frame goes through, and only the victim's proven frames use its budget.
    @Test func framesThatDoNotAuthenticateNeverUseTheNamedDevicesBudget() async throws {
        let server = try await RunningServer.start(configuration: CloudServerConfiguration(framesPerSecond: 0.001, burst: 1))
        defer { Task { await server.stop() } }
        let victim = try await server.enrolledDevice(seed: 1)
        try PublicRecipe.engage(victim)
        let records = try victim.pendingOutbox(after: .start, limit: 10)
        let forged = UploadFrame(app: app, device: victim.deviceID, records: records, key: [UInt8](repeating: 9, count: 32))
        for _ in 0..<20 {
            #expect(try outcome(try await server.request("/v1/sync", body: forged.encoded)) == "401 badSignature")
        }
        let frame = try #require(try victim.pendingFrame(now: victim.now))
        #expect(try await server.request("/v1/sync", body: frame.encoded).status == 200)
        #expect(try outcome(try await server.request("/v1/sync", body: frame.encoded)) == "429 rateLimited",
                "the victim's own second frame is what its budget of one pays for")
    }

    /// An address that keeps sending what proves no device (bad frames,
    /// enrolments, public reads) runs out of its own budget, and is refused
    /// before its next frame is even read.
    @Test func anAddressThatSendsJunkIsLimitedOnEveryUnauthenticatedRoute() async throws {
        let server = try await RunningServer.start(configuration: CloudServerConfiguration(
            addressRequestsPerSecond: 0.001, addressBurst: 3))
        defer { Task { await server.stop() } }
        for _ in 0..<3 {
            #expect(try outcome(try await server.request("/v1/sync", body: Array("junk".utf8))) == "400 malformed")
        }
        #expect(try outcome(try await server.request("/v1/sync", body: Array("junk".utf8))) == "429 rateLimited")
        #expect(try outcome(try await server.request("/v1/apps/\(app)/public?q=x")) == "429 rateLimited")
        let enrol = try await server.request("/v1/enrol", body: Array("""
            {"app":"\(app)","device":"late","secret":"\(secret)"}
            """.utf8))
        #expect(try outcome(enrol) == "429 rateLimited")
        #expect(try server.cloud.stats().devices == 0 && server.cloud.stats().logRows == 0)
    }
}

@Suite struct RateLimiterTests {
    @Test func aBucketRefillsAtItsRateUpToItsBurst() {
        let limiter = RateLimiter<String>(rate: 10, burst: 2)
        let start = ContinuousClock.now
        #expect(limiter.allow("a", now: start) && limiter.allow("a", now: start))
        #expect(!limiter.allow("a", now: start) && limiter.isExhausted("a", now: start))
        #expect(limiter.allow("b", now: start), "each key has its own bucket")
        #expect(limiter.allow("a", now: start + .milliseconds(100)), "a tenth of a second at 10/s is one token")
        #expect(!limiter.isExhausted("a", now: start + .seconds(60)) && !limiter.isExhausted("never-seen", now: start))
    }

    /// A flood of new keys (spoofed device names, many addresses) never
    /// grows the limiter past its capacity, and the keys it keeps are the
    /// ones still short of tokens.
    @Test func theLimiterRemembersAtMostItsCapacity() {
        let limiter = RateLimiter<String>(rate: 0.001, burst: 1, capacity: 1_000)
        let start = ContinuousClock.now
        for index in 0..<50_000 {
            _ = limiter.allow("key-\(index)", now: start + .microseconds(index))
            #expect(limiter.count <= 1_000)
        }
        #expect(limiter.isExhausted("key-49999", now: start + .seconds(1)), "the newest keys are kept")
    }
}

/// A TCP client that writes bytes and reads until the server closes: what
/// a slow or broken HTTP client looks like to the server.
enum RawClient {
    struct Failure: Error {
        let step: String
    }

    /// Sends `head`, then one body byte every `interval` until the server
    /// closes the connection; returns how long it stayed open and what the
    /// server sent.
    static func trickle(port: Int, head: [UInt8], every interval: Duration,
                        forAtMost limit: Duration) throws -> (open: Duration, answer: String) {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw Failure(step: "socket") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw Failure(step: "connect") }
        let started = ContinuousClock.now
        guard head.withUnsafeBytes({ send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == head.count else {
            throw Failure(step: "send")
        }
        var buffer = [UInt8](repeating: 0, count: 4096)
        var received: [UInt8] = []
        while ContinuousClock.now - started < limit {
            Thread.sleep(forTimeInterval: Double(interval.components.attoseconds) / 1e18 + Double(interval.components.seconds))
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count > 0 { received += buffer[..<count] }
            if count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK) { break }
            var byte: UInt8 = 0x41
            if send(socket, &byte, 1, Int32(MSG_NOSIGNAL)) < 0 { break }
        }
        return (ContinuousClock.now - started, String(decoding: received, as: UTF8.self))
    }
}
