import AsyncHTTPClient
import CloudCore
import CloudServer
import CloudSQLite
import Crypto
import DeviceStore
import Foundation
import IndexModel
import ScratchDirectory
import ServerTestSupport
import SyncHTTP
import SyncWire
import Testing
import X509

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

@Suite struct CloudClientsTests {
    /// `cloud serve --tls-cert --tls-key` and `sync --ca-file`: a device
    /// enrols and syncs over HTTPS on loopback, trusting only the test's CA;
    /// a client that does not trust it gets no answer at all.
    @Test func aDeviceEnrolsAndSyncsOverTLSTrustingTheOperatorsCA() async throws {
        let pki = try TestPKI(in: try ScratchDirectory.make("sightline-tls"))
        var configuration = CloudServerConfiguration(port: 0)
        configuration.tls = try CloudServer.tlsConfiguration(certificateFile: pki.certificateFile, keyFile: pki.keyFile)
        let server = try await RunningServer.start(threshold: 1, configuration: configuration)
        defer { Task { await server.stop() } }

        let client = try CloudClients.trusting(caFile: pki.caFile)
        // Shut down on every path: a client let go without it stops the
        // whole test process (AsyncHTTPClient's debug check), hiding the
        // error that ended the test.
        do {
            let store = try DeviceStore(at: .memory, options: StoreOptions(random: SeededRandom(seed: 61)))
            let key = try await HTTPEnrolment.enrol(baseURL: server.url, app: store.app, device: store.deviceID,
                                                    secret: RunningServer.secret, proof: store.enrolmentProof, timeout: .seconds(30),
                                                    client: client)
            try store.setDeviceKey(key)
            try store.record(UserActivity(activityType: "com.example/read", title: "Over TLS", webpageURL: "https://example.com/tls",
                                          eligibleForSearch: true, eligibleForPublicIndexing: true))
            try store.recordEngaged(ref: "https://example.com/tls")
            let transport = HTTPTransport(baseURL: server.url, timeout: .seconds(30), client: client)
            let report = try await SyncClient(store: store, transport: transport).run()
            #expect(report.failure == nil && report.messagesAcknowledged > 0, "\(report)")
            #expect(try server.cloud.stats().messages == Int64(report.messagesAcknowledged))
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()

        // The system's trust store does not know the test CA: no request gets through.
        await #expect(throws: (any Error).self) {
            _ = try await HTTPClient.shared.execute(HTTPClientRequest(url: server.url + "/healthz"), timeout: .seconds(2))
        }
        // Nor does plain HTTP to the TLS port.
        await #expect(throws: (any Error).self) {
            let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/healthz"),
                                                               timeout: .seconds(2))
            _ = try await response.body.collect(upTo: 1024)
            if response.status != .ok { throw TransportError("answered \(response.status)") }
        }
    }

    /// A CA file that holds no certificate (empty, or a key where the
    /// certificate should be) is refused when the client is made, so
    /// `sync --ca-file` stops before it sends anything rather than trusting
    /// nothing and failing every request.
    @Test func aCAFileWithoutACertificateIsRefusedWhenTheClientIsMade() throws {
        let directory = try ScratchDirectory.make("sightline-ca")
        let empty = directory.appendingPathComponent("empty.pem").path
        try "".write(toFile: empty, atomically: true, encoding: .utf8)
        let keyOnly = directory.appendingPathComponent("key.pem").path
        try P256.Signing.PrivateKey().pemRepresentation.write(toFile: keyOnly, atomically: true, encoding: .utf8)
        for file in [empty, keyOnly] {
            #expect(throws: (any Error).self, "\(file)") {
                let client = try CloudClients.trusting(caFile: file)
                try client.syncShutdown()
            }
        }
    }
}
