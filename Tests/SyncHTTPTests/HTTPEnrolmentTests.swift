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
        let name = store.deviceID.rawValue
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
}
