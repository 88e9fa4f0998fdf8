import CloudCore
import CloudSQLite
import Crypto
import DeviceStore
import IndexModel
import SyncWire
import Testing

/// `frame`'s bytes announcing `version`, signed again with `key` as a device
/// of that version would sign them.
private func asVersion(_ version: UInt8, _ frame: UploadFrame, key: [UInt8]) -> [UInt8] {
    var header = frame.header
    header[4] = version
    return header + Array(HMAC<SHA256>.authenticationCode(for: header, using: SymmetricKey(data: key))) + frame.payload
}

/// A cloud is upgraded before its devices: it reads the frames of the
/// version before (7, which has no frame dictionaries) and answers each in
/// its own version.
@Suite struct OlderVersionTests {
    @Test(arguments: Backend.allCases)
    func aVersion7FrameIsTakenAndAnsweredInVersion7(backend: Backend) throws {
        let harness = try SyncHarness(backend: backend)
        let store = try harness.addDevice()
        try vote([store])
        let key = try #require(try store.deviceKey())
        let frame = try #require(try store.pendingFrame(now: harnessStart))
        let bytes = asVersion(7, frame, key: key)
        #expect(try UploadFrame.parse(bytes).version == 7)
        let result = harness.deliver(bytes)
        #expect(result.outcome == .accepted(messages: 2))
        #expect(result.reply[4] == 7)
        let reply = try CloudReply.decode(result.reply, device: store.deviceID, key: key)
        let parsed = try UploadFrame.parse(bytes)
        #expect(reply.version == 7 && reply.isAuthentic && reply.isAnswer(to: parsed))
        #expect(harness.deliver(bytes).outcome == .duplicate)
        #expect(harness.cloud.frameDictionaries.heldBytes == 0, "a version 7 device never names a dictionary")
        #expect(try harness.cloud.entry(app: app, hash: recipeHash())?.popularity.engaged == 1)
    }

    @Test(arguments: Backend.allCases)
    func aVersion7FrameNamingADictionaryIsMalformedAndAnsweredInVersion7(backend: Backend) throws {
        let harness = try SyncHarness(backend: backend)
        let (store, key, records) = try votedThenEngaged(harness)
        let dictionary = try FrameDictionary.empty.following(FramePayload.encode(records.map(\.encoded)))
        let based = UploadFrame(app: app, device: store.deviceID, records: records, key: key, dictionary: dictionary)
        #expect(based.base != nil)
        let result = harness.deliver(asVersion(7, based, key: key))
        guard case .rejected(let error) = result.outcome else {
            Issue.record("a version 7 frame naming a dictionary was taken: \(result.outcome)")
            return
        }
        #expect(error.code == .malformed && error.message.contains("unknown frame flags 2"), "\(error)")
        #expect(result.reply[4] == 7)
        #expect(try harness.cloud.stats().logRows == 1)
    }

    @Test func aFrameOfAVersionTheCloudDoesNotReadIsMalformedSayingWhichItReads() throws {
        let harness = try SyncHarness()
        let store = try harness.addDevice()
        try vote([store])
        let key = try #require(try store.deviceKey())
        let frame = try #require(try store.pendingFrame(now: harnessStart))
        for version: UInt8 in [6, 9] {
            let result = harness.deliver(asVersion(version, frame, key: key))
            guard case .rejected(let error) = result.outcome else {
                Issue.record("a version \(version) frame was taken: \(result.outcome)")
                continue
            }
            #expect(error.code == .malformed && error.message.contains("version \(version) is not supported")
                    && error.message.contains("versions 7 to 8"), "\(error)")
            #expect(result.reply[4] == UploadFrame.version, "a reply to a version no one reads is in the newest")
        }
    }
}
