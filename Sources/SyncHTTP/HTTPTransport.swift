import AsyncHTTPClient
import Foundation
import IndexModel
import NIOCore
import NIOSSL
import SyncWire

/// HTTP clients for talking to a cloud.
public enum CloudClients {
    /// An exchange that did not end within its timeout.
    public struct ExchangeTimeout: Error, CustomStringConvertible {
        public let timeout: TimeAmount
        public var description: String {
            "the exchange did not end within \(Double(timeout.nanoseconds) / 1e9) s (the answer's head and whole body)"
        }
    }

    /// Sends `request` and reads the answer's status and body, at most
    /// `limit` bytes, all within `timeout`: past it the request is cancelled
    /// and `ExchangeTimeout` thrown, however the cloud paces its bytes.
    static func exchange(_ request: HTTPClientRequest, client: HTTPClient, timeout: TimeAmount,
                         upTo limit: Int) async throws -> (status: UInt, body: [UInt8]) {
        let deadline = NIODeadline.now() + timeout
        return try await withThrowingTaskGroup(of: (status: UInt, body: [UInt8])?.self) { group in
            group.addTask {
                let response = try await client.execute(request, deadline: deadline)
                let buffer = try await response.body.collect(upTo: limit)
                return (response.status.code, buffer.getBytes(at: buffer.readerIndex, length: buffer.readableBytes) ?? [])
            }
            group.addTask {
                try await Task.sleep(nanoseconds: UInt64(max(timeout.nanoseconds, 0)))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let answer = first else { throw ExchangeTimeout(timeout: timeout) }
            return answer
        }
    }

    /// A client that, for https:// URLs, trusts the certificates in the PEM
    /// file `caFile` (and only them), as a device trusts its operator's CA.
    /// The caller shuts it down.
    public static func trusting(caFile: String) throws -> HTTPClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        let roots = try NIOSSLCertificate.fromPEMFile(caFile)
        guard !roots.isEmpty else { throw TransportError("\(caFile) holds no PEM certificate") }
        tls.trustRoots = .certificates(roots)
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(tlsConfiguration: tls))
    }
}

/// The sync transport over HTTP: POST /v1/sync with the frame as the body.
///
/// - 200: the body is the cloud's reply (an ack).
/// - 4xx: the JSON body's `reply` is the cloud's signed rejection, handed to the
///   uploader like any reply (a gap rewinds, a permanent refusal stops).
/// - Anything else (5xx, a 4xx without a reply, a timeout, a refused
///   connection): the outcome is unknown, so it throws and the uploader resends
///   the same frame after a backoff. AsyncHTTPClient retries a refused
///   connection until `timeout`, so an unreachable cloud costs that long per attempt.
///
/// `timeout` bounds each exchange as a whole: connecting, sending the frame,
/// the answer's head and its whole body. A cloud that answers at once and
/// then sends its body a byte a second is cut off when it is up, and a body
/// longer than `maximumBodyBytes` is refused as it arrives.
public struct HTTPTransport: Transport {
    public let baseURL: String
    public let timeout: TimeAmount
    private let client: HTTPClient

    /// The longest answer body read: a reply carries at most
    /// `WireLimits.maximumRequests` content requests and as many reindex
    /// hashes (under 700 KB), and a refusal's JSON body carries one in base64.
    public static let maximumBodyBytes = 2 * 1024 * 1024

    public init(baseURL: String, timeout: TimeAmount = .seconds(30), client: HTTPClient = .shared) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.timeout = timeout
        self.client = client
    }

    public func exchange(_ frame: [UInt8]) async throws(TransportError) -> [UInt8] {
        var request = HTTPClientRequest(url: baseURL + "/v1/sync")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/octet-stream")
        request.body = .bytes(ByteBuffer(bytes: frame))
        let answer: (status: UInt, body: [UInt8])
        do {
            answer = try await CloudClients.exchange(request, client: client, timeout: timeout, upTo: HTTPTransport.maximumBodyBytes)
        } catch {
            throw TransportError("POST \(baseURL)/v1/sync failed: \(error)")
        }
        if answer.status == 200 { return answer.body }
        if (400..<500).contains(answer.status), let reply = HTTPTransport.reply(in: answer.body) { return reply }
        throw TransportError("""
            POST \(baseURL)/v1/sync answered \(answer.status): \(TextRule.printable(String(decoding: answer.body.prefix(300), as: UTF8.self)))
            """)
    }

    /// The signed reply inside a JSON error body, if there is one.
    static func reply(in body: [UInt8]) -> [UInt8]? {
        guard case .object(let object)? = try? JSONReader.parse(body),
              case .string(let encoded)? = object["reply"], let data = Data(base64Encoded: encoded) else { return nil }
        return [UInt8](data)
    }
}

/// Enrols a device with the cloud: POST /v1/enrol.
public enum HTTPEnrolment {
    /// The cloud answered but issued no key: its HTTP status and why, in the
    /// cloud's own message when its JSON body carried one. A cloud that cannot
    /// be reached throws AsyncHTTPClient's error instead.
    public struct Failure: Error, CustomStringConvertible {
        public let status: UInt
        public let message: String
        public var description: String { message }
    }

    /// The device key the cloud issued. The exchange as a whole (the answer's
    /// head and body) must end within `timeout`; a cloud that cannot be
    /// reached fails when it is up (AsyncHTTPClient retries a refused
    /// connection until then).
    /// `proof` (`DeviceStore.enrolmentProof`) lets the same device ask again
    /// and get the same key when an answer was lost.
    public static func enrol(baseURL: String, app: AppID, device: DeviceID, secret: String, proof: [UInt8]? = nil,
                             timeout: TimeAmount = .seconds(30), client: HTTPClient = .shared) async throws -> [UInt8] {
        let base = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        var request = HTTPClientRequest(url: base + "/v1/enrol")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        var object: JSONObject = ["app": .string(app.rawValue), "device": .string(device.rawValue), "secret": .string(secret)]
        if let proof { object["proof"] = .string(Data(proof).base64EncodedString()) }
        let json = JSONWriter.compact(.object(object))
        request.body = .bytes(ByteBuffer(string: json))
        let answer = try await CloudClients.exchange(request, client: client, timeout: timeout, upTo: 64 * 1024)
        guard case .object(let object)? = try? JSONReader.parse(answer.body) else {
            throw Failure(status: answer.status, message: "enrolment answered \(answer.status) without a JSON body")
        }
        guard answer.status == 200, case .string(let encoded)? = object["key"],
              let key = Data(base64Encoded: encoded), key.count == 32 else {
            let message: String
            if case .string(let text)? = object["message"] { message = TextRule.printable(text, limit: 300) } else { message = "no message" }
            throw Failure(status: answer.status, message: "enrolment refused (\(answer.status)): \(message)")
        }
        return [UInt8](key)
    }
}
