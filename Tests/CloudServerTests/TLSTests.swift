import AsyncHTTPClient
import CloudIndex
import Crypto
import DeviceStore
import Foundation
import IndexModel
import Logging
import NIOSSL
import ScratchDirectory
import SyncHTTP
import SyncWire
import Testing
import X509
@testable import CloudServer

/// A certificate authority made for one test, and a server certificate for
/// `localhost` it signed, as PEM files in `directory`.
private struct TestPKI {
    let caFile: String
    let certificateFile: String
    let keyFile: String

    init(in directory: URL) throws {
        let now = Date()
        let caKey = P256.Signing.PrivateKey()
        let caName = try DistinguishedName { CommonName("Sightline test CA") }
        let ca = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: Certificate.PublicKey(caKey.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 3600, issuer: caName, subject: caName,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true))
            },
            issuerPrivateKey: Certificate.PrivateKey(caKey))
        let serverKey = P256.Signing.PrivateKey()
        let server = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: Certificate.PublicKey(serverKey.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 3600, issuer: caName,
            subject: try DistinguishedName { CommonName("localhost") },
            extensions: try Certificate.Extensions {
                SubjectAlternativeNames([.dnsName("localhost")])
                try ExtendedKeyUsage([.serverAuth])
            },
            issuerPrivateKey: Certificate.PrivateKey(caKey))
        caFile = directory.appendingPathComponent("ca.pem").path
        certificateFile = directory.appendingPathComponent("server.pem").path
        keyFile = directory.appendingPathComponent("server-key.pem").path
        try ca.serializeAsPEM().pemString.write(toFile: caFile, atomically: true, encoding: .utf8)
        try server.serializeAsPEM().pemString.write(toFile: certificateFile, atomically: true, encoding: .utf8)
        try serverKey.pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
    }
}

@Suite struct TLSTests {
    /// `cloud serve --tls-cert --tls-key` and `sync --ca-file`: a device
    /// enrols and syncs over HTTPS on loopback, trusting only the test's CA;
    /// a client that does not trust it gets no answer at all.
    @Test func aDeviceEnrolsAndSyncsOverTLSTrustingTheOperatorsCA() async throws {
        let directory = try ScratchDirectory.make("sightline-tls")
        let pki = try TestPKI(in: directory)
        let cloud = try CloudIndex(at: .memory, options: CloudOptions(random: SeededRandom(seed: 6), threshold: 1))
        let secret = "an-enrolment-secret-for-tls-tests"
        try cloud.registerApp(StoreOptions.defaultApp, enrolmentSecret: secret)
        var configuration = CloudServerConfiguration(port: 0)
        configuration.tls = try CloudServer.tlsConfiguration(certificateFile: pki.certificateFile, keyFile: pki.keyFile)
        var logger = Logger(label: "sightline.cloud.test")
        logger.logLevel = .critical
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let application = try CloudServer(cloud: cloud, configuration: configuration, logger: logger).application { port in
            continuation.yield(port)
        }
        let task = Task { try await application.run() }
        defer { task.cancel() }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())
        let url = "https://localhost:\(port)"

        let client = try CloudClients.trusting(caFile: pki.caFile)
        let store = try DeviceStore(at: .memory, options: StoreOptions(random: SeededRandom(seed: 61)))
        let key = try await HTTPEnrolment.enrol(baseURL: url, app: store.app, device: store.deviceID, secret: secret,
                                                proof: store.enrolmentProof, timeout: .seconds(10), client: client)
        try store.setDeviceKey(key)
        try store.record(UserActivity(activityType: "com.example/read", title: "Over TLS", webpageURL: "https://example.com/tls",
                                      eligibleForSearch: true, eligibleForPublicIndexing: true))
        try store.recordEngaged(ref: "https://example.com/tls")
        let report = try await SyncClient(store: store, transport: HTTPTransport(baseURL: url, timeout: .seconds(10), client: client)).run()
        #expect(report.failure == nil && report.messagesAcknowledged > 0, "\(report)")
        #expect(try cloud.stats().messages == Int64(report.messagesAcknowledged))
        try await client.shutdown()

        // The system's trust store does not know the test CA: no request gets through.
        await #expect(throws: (any Error).self) {
            _ = try await HTTPClient.shared.execute(HTTPClientRequest(url: url + "/healthz"), timeout: .seconds(2))
        }
        // Nor does plain HTTP to the TLS port.
        await #expect(throws: (any Error).self) {
            let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/healthz"),
                                                               timeout: .seconds(2))
            _ = try await response.body.collect(upTo: 1024)
            if response.status != .ok { throw TransportError("answered \(response.status)") }
        }
    }
}
