import CloudCore
import IndexModel
import Testing

@Suite struct EnrolledKeysTests {
    private func stream(_ number: Int) -> DeviceStream {
        DeviceStream(app: AppID("com.example.app"), device: DeviceID("device-\(number)"))
    }

    /// A cloud remembers at most `limit` devices' keys: one more forgets
    /// them all (each is read again at its next frame), so memory does not
    /// grow with every device that ever sent a frame.
    @Test func oneDeviceMoreThanTheLimitForgetsTheOthersAndKeepsItself() {
        let keys = EnrolledKeys(limit: 3)
        for number in 0..<3 { keys.remember([UInt8(number)], of: stream(number)) }
        #expect(keys.count == 3 && keys.key(of: stream(1)) == [1])
        keys.remember([1], of: stream(1))
        #expect(keys.count == 3, "a device already held does not count again")
        keys.remember([9], of: stream(9))
        #expect(keys.count == 1 && keys.key(of: stream(9)) == [9] && keys.key(of: stream(0)) == nil)
        keys.forget(stream(9))
        #expect(keys.count == 0 && keys.key(of: stream(9)) == nil)
    }

    @Test func aHundredThousandDevicesLeaveAtMostTheLimitRemembered() {
        let keys = EnrolledKeys(limit: 1_000)
        for number in 0..<100_000 { keys.remember([UInt8(truncatingIfNeeded: number)], of: stream(number)) }
        #expect(keys.count <= 1_000 && keys.key(of: stream(99_999)) == [UInt8(truncatingIfNeeded: 99_999)])
    }
}
