import Foundation
import IndexModel
import NIOCore
import ServerTestSupport
import SyncHTTP
import SyncWire
import Testing

@Suite struct HTTPTransportTests {
    /// A refused frame comes back as a 4xx whose JSON body carries the
    /// cloud's signed rejection: the transport hands that reply to the
    /// uploader as it would an ack, so a gap rewinds it.
    @Test func theSignedRejectionInsideA4xxBodyIsReturnedAsTheReply() async throws {
        let server = try await RunningServer.start()
        defer { Task { await server.stop() } }
        let store = try await server.enrolledDevice(seed: 1)
        try PublicRecipe.engage(store)
        let key = try #require(try store.deviceKey())
        let records = try store.pendingOutbox(after: .start, limit: 10)
        let late = UploadFrame(app: RunningServer.app, device: store.deviceID, records: Array(records.dropFirst()), key: key)
        let reply = try await HTTPTransport(baseURL: server.url).exchange(late.encoded)
        let decoded = try CloudReply.decode(reply, device: store.deviceID, key: key)
        #expect(decoded.isAuthentic)
        #expect(decoded.reply == .rejection(Rejection(WireError(.gap, "epoch 1 is new here and must start at seq 1; the cloud holds nothing of this device"),
                                                      expected: OutboxPosition(epoch: Epoch(0), seq: OutboxSeq(1)))))
    }

    /// A status that carries no signed reply (a 5xx, a 4xx without one)
    /// leaves the outcome unknown: the transport throws, and the error says
    /// the status and the start of the body, so an operator can see why.
    @Test func aStatusWithoutASignedReplyThrowsNamingTheStatusAndTheBody() async throws {
        let stub = try await StubCloud.start { path in
            path == "/restoring/v1/sync" ? (.serviceUnavailable, Array("the cloud is restoring a backup".utf8))
                                         : (.notFound, Array(#"{"error":"notFound","message":"no such route"}"#.utf8))
        }
        defer { Task { await stub.stop() } }
        for (base, status, text) in [(stub.url + "/restoring", "503", "the cloud is restoring a backup"),
                                     (stub.url, "404", "no such route")] {
            do {
                let reply = try await HTTPTransport(baseURL: base).exchange([1, 2, 3])
                Issue.record("\(status) was taken as the reply \(reply)")
            } catch {
                let description = String(describing: error)
                #expect(description.contains("answered \(status)") && description.contains(text), "\(description)")
            }
        }
    }

    /// A reply is read up to `HTTPTransport.maximumBodyBytes` (2 MiB, more
    /// than the largest reply in base64): one that is longer is refused
    /// before it is held in memory whole, and one of exactly that is taken.
    @Test func aReplyLongerThanTheBodyLimitIsRefused() async throws {
        let limit = HTTPTransport.maximumBodyBytes
        let stub = try await StubCloud.start { path in
            (.ok, [UInt8](repeating: 7, count: path.hasPrefix("/long") ? limit + 1 : limit))
        }
        defer { Task { await stub.stop() } }
        // Two MiB each way, on a machine the whole suite keeps busy: the
        // limit is what this checks, so the exchange's timeout is generous.
        let timeout = TimeAmount.seconds(300)
        let taken = try await HTTPTransport(baseURL: stub.url, timeout: timeout).exchange([1])
        #expect(taken.count == limit)
        await #expect(throws: TransportError.self) {
            _ = try await HTTPTransport(baseURL: stub.url + "/long", timeout: timeout).exchange([1])
        }
    }

    /// A cloud URL given with or without a trailing slash reaches the same
    /// routes, `/v1/sync` and `/v1/enrol`, never `//v1/...`.
    @Test func aCloudURLWithATrailingSlashReachesTheSameRoutes() async throws {
        let key = Data(repeating: 5, count: 32).base64EncodedString()
        let stub = try await StubCloud.start { _ in (.ok, Array(#"{"key":"\#(key)"}"#.utf8)) }
        defer { Task { await stub.stop() } }
        for base in [stub.url, stub.url + "/"] {
            let transport = HTTPTransport(baseURL: base)
            #expect(transport.baseURL == stub.url)
            _ = try await transport.exchange([1])
            let issued = try await HTTPEnrolment.enrol(baseURL: base, app: AppID("com.example.app"), device: DeviceID("phone"), secret: "a-secret")
            #expect(issued == [UInt8](repeating: 5, count: 32))
        }
        #expect(stub.requestedPaths == ["/v1/sync", "/v1/enrol", "/v1/sync", "/v1/enrol"])
    }

    /// A cloud that takes the frame and does not answer within the timeout
    /// is a `TransportError`, so the uploader can back off and resend. The
    /// stub would answer 200 after a minute: a throw is the timeout firing.
    /// (No bound on the elapsed time: other tests share this process.)
    @Test func aCloudThatDoesNotAnswerInTimeIsATransportError() async throws {
        let stub = try await StubCloud.start(delay: .seconds(60)) { _ in (.ok, []) }
        defer { Task { await stub.stop() } }
        await #expect(throws: TransportError.self) {
            _ = try await HTTPTransport(baseURL: stub.url, timeout: .milliseconds(300)).exchange([1])
        }
    }

    /// A cloud that sends its answer's head at once and then stops partway
    /// through the body (or drips it) is cut off when the timeout is up:
    /// the timeout bounds the exchange as a whole, not only the head.
    @Test func aCloudThatStallsPartwayThroughItsBodyIsCutOffAtTheTimeout() async throws {
        let stub = try await StubCloud.start(stallAfter: 10) { _ in (.ok, [UInt8](repeating: 1, count: 4096)) }
        defer { Task { await stub.stop() } }
        do {
            let reply = try await HTTPTransport(baseURL: stub.url, timeout: .milliseconds(500)).exchange([1])
            Issue.record("a stalled body was taken as a reply of \(reply.count) bytes")
        } catch {
            // Either clock may fire first when the machine is busy: the
            // exchange's, or AsyncHTTPClient's own deadline for the head.
            let description = String(describing: error)
            #expect(description.contains("did not end within 0.5 s") || description.contains("deadlineExceeded"), "\(error)")
        }
        await #expect(throws: (any Error).self) {
            _ = try await HTTPEnrolment.enrol(baseURL: stub.url, app: AppID("com.example.app"), device: DeviceID("phone"),
                                              secret: "a-secret", timeout: .milliseconds(500))
        }
    }

    /// Nothing listens on the port: the connection is refused, retried until
    /// the timeout, and the transport throws a `TransportError` naming the URL.
    @Test func aRefusedConnectionIsATransportErrorNamingTheURL() async throws {
        do {
            _ = try await HTTPTransport(baseURL: "http://127.0.0.1:1", timeout: .seconds(1)).exchange([1])
            Issue.record("a frame was exchanged with nothing listening")
        } catch {
            #expect(String(describing: error).hasPrefix("POST http://127.0.0.1:1/v1/sync failed"), "\(error)")
        }
    }
}
