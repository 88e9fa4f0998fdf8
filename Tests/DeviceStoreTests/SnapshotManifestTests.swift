@testable import DeviceStore
import IndexModel
import Testing

/// A snapshot's manifest is outside bytes: each field is checked where it is read.
@Suite struct SnapshotManifestTests {
    private func manifest(contentSHA256: String) -> JSONObject {
        ["kind": .string("device"), "device": .string("d1"), "app": .string("app"), "epoch": .integer(1), "headSeq": .integer(3),
         "headHash": .string("00"), "outboxHead": .string("1:0"), "acknowledged": .string("1:0"), "durable": .string("1:0"),
         "createdAt": .string("2026-11-25T00:00:00Z"), "contentBytes": .integer(10), "contentSHA256": .string(contentSHA256)]
    }

    @Test func aContentDigestThatIsNotASHA256InHexadecimalIsRefusedByName() throws {
        let sound = String(repeating: "ab", count: 32)
        #expect(try DeviceSnapshotManifest(manifest(contentSHA256: sound)).contentDigest == [UInt8](repeating: 0xAB, count: 32))
        for bad in ["", "abc", String(repeating: "zz", count: 32), String(repeating: "ab", count: 31), String(repeating: "ab", count: 33)] {
            let error = #expect(throws: DeviceStoreError.self) { try DeviceSnapshotManifest(manifest(contentSHA256: bad)) }
            #expect(error?.message.contains("contentSHA256 is not a SHA-256") == true, "\(bad): \(error?.message ?? "")")
        }
    }
}
