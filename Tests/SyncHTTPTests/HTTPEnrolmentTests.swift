import Foundation
import IndexModel
import DeviceStore
import ServerTestSupport
import SyncHTTP
import Testing

@Suite struct HTTPEnrolmentTests {
    /// The answer to an enrolment is lost; the device asks again with its
    /// proof and gets the same key, while anyone else asking for its name
    /// is refused.
    @Test func aDeviceWhoseEnrolmentAnswerWasLostGetsTheSameKeyAgain() async throws {
        let server = try await RunningServer.start()
        defer { Task { await server.stop() } }
        let (app, secret) = (RunningServer.app, RunningServer.secret)
        let store = try DeviceStore(at: .memory, options: StoreOptions(random: SeededRandom(seed: 21)))
        let name = store.deviceID
        let lost = try await HTTPEnrolment.enrol(baseURL: server.url, app: app, device: name, secret: secret, proof: store.enrolmentProof)
        let again = try await HTTPEnrolment.enrol(baseURL: server.url, app: app, device: name, secret: secret, proof: store.enrolmentProof)
        #expect(again == lost)
        try store.setDeviceKey(again)
        let thief = try DeviceStore(at: .memory, options: StoreOptions(random: SeededRandom(seed: 22)))
        await #expect(throws: HTTPEnrolment.Failure.self) {
            try await HTTPEnrolment.enrol(baseURL: server.url, app: app, device: name, secret: secret, proof: thief.enrolmentProof)
        }
        #expect(try server.cloud.stats().devices == 1)
    }

    /// A cloud that refuses an enrolment says why: the failure carries the
    /// HTTP status and the cloud's own message, which `sightline sync`
    /// prints.
    @Test func aRefusedEnrolmentCarriesTheStatusAndTheCloudsMessage() async throws {
        let server = try await RunningServer.start()
        defer { Task { await server.stop() } }
        do {
            _ = try await HTTPEnrolment.enrol(baseURL: server.url, app: RunningServer.app, device: DeviceID("phone-1"),
                                              secret: "not-the-apps-enrolment-secret")
            Issue.record("a wrong secret was issued a key")
        } catch let failure as HTTPEnrolment.Failure {
            #expect(failure.status == 403)
            #expect(failure.description.hasPrefix("enrolment refused (403): ") && !failure.description.hasSuffix("no message"),
                    "\(failure)")
        }
        #expect(try server.cloud.stats().devices == 0)
    }

    /// An answer the device cannot read as the cloud's (a proxy's HTML
    /// page), or a key that is not 32 bytes, is a failure with the status,
    /// never a key.
    @Test func anAnswerThatIsNotTheCloudsOrAKeyOfTheWrongLengthIsAFailure() async throws {
        let short = Data(repeating: 5, count: 16).base64EncodedString()
        let stub = try await StubCloud.start { path in
            path.hasPrefix("/proxy") ? (.badGateway, Array("<html>bad gateway</html>".utf8))
                                     : (.ok, Array(#"{"key":"\#(short)"}"#.utf8))
        }
        defer { Task { await stub.stop() } }
        for (base, status) in [(stub.url + "/proxy", UInt(502)), (stub.url, 200)] {
            do {
                let key = try await HTTPEnrolment.enrol(baseURL: base, app: AppID("com.example.app"), device: DeviceID("phone"), secret: "a-secret")
                Issue.record("\(base) issued the key \(key)")
            } catch let failure as HTTPEnrolment.Failure {
                #expect(failure.status == status, "\(failure)")
            }
        }
    }
}
