import Foundation
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
        let late = UploadFrame(app: RunningServer.app, device: store.deviceID.rawValue, records: Array(records.dropFirst()), key: key)
        let reply = try await HTTPTransport(baseURL: server.url).exchange(late.encoded)
        let decoded = try CloudReply.decode(reply, device: store.deviceID.rawValue, key: key)
        #expect(decoded.isAuthentic)
        #expect(decoded.reply == .rejection(Rejection(WireError(.gap, "epoch 1 is new here and must start at seq 1; the cloud holds nothing of this device"),
                                                      expected: OutboxPosition(epoch: 0, seq: 1))))
    }
}
