import Crypto
import IndexModel

/// Who may register an app and enrol a device, the same for every backend
/// (`docs/CLOUD.md`, "Apps and devices"): names of 1 to 256 bytes on one
/// line without control characters (`TextRule.name`), a device's not beginning with `~` (the cloud's own, `CrawlerRule`),
/// an enrolment secret of at least 16 bytes (only its SHA-256 is kept), a
/// device quota of 1 to `largestDeviceQuota`, a proof of 16 to 64 bytes, and
/// the decision for a name already enrolled.
package enum EnrolmentRule {
    package static let largestDeviceQuota = 100_000_000

    /// An enrolment request, checked: the SHA-256 of the secret offered, and
    /// of the proof, if any.
    package struct Request {
        package let app: AppID
        package let device: DeviceID
        package let offered: [UInt8]
        package let proofHash: [UInt8]?
    }

    /// Checks a registration of `app` and returns the SHA-256 kept of its secret.
    package static func secretHash(app: AppID, enrolmentSecret: String, maximumDevices: Int?) throws(CloudError) -> [UInt8] {
        try checkName(app.rawValue, "app")
        guard enrolmentSecret.utf8.count >= 16 else {
            throw CloudError(.invalidOption, "the enrolment secret of \(app) must be at least 16 bytes")
        }
        if let maximumDevices, !(1...largestDeviceQuota).contains(maximumDevices) {
            throw CloudError(.invalidOption, "the device quota of \(app) must be 1 to \(largestDeviceQuota)")
        }
        return Array(SHA256.hash(data: Array(enrolmentSecret.utf8)))
    }

    /// Checks an enrolment request before anything is read.
    package static func request(app: AppID, device: DeviceID, enrolmentSecret: String, proof: [UInt8]?) throws(CloudError) -> Request {
        try checkName(app.rawValue, "app")
        try checkName(device.rawValue, "device")
        guard !CrawlerRule.isReserved(device) else {
            throw CloudError(.invalidOption, "device names beginning with ~ are the cloud's own (\(CrawlerRule.device) records crawled pages)")
        }
        if let proof, !(16...64).contains(proof.count) {
            throw CloudError(.invalidOption, "an enrolment proof is 16 to 64 bytes, not \(proof.count)")
        }
        return Request(app: app, device: device, offered: Array(SHA256.hash(data: Array(enrolmentSecret.utf8))),
                       proofHash: proof.map { Array(SHA256.hash(data: $0)) })
    }

    /// What to answer `request`, given the app's registered secret hash
    /// (nil: no such app), the device the name already has (its key and
    /// proof hash), and the app's quota with a count of its devices: the
    /// existing key again (the same proof), nil for a new enrolment, or the
    /// refusal. The secret and proofs are compared in constant time.
    package static func decide(_ request: Request, registered: [UInt8]?, existing: (key: [UInt8], proofHash: [UInt8]?)?,
                               quota: Int64?, enrolled: () throws(CloudError) -> Int64) throws(CloudError) -> [UInt8]? {
        guard let registered, constantTimeEqual(registered, request.offered) else {
            throw CloudError(.enrolmentRefused, "enrolment refused: unknown app or wrong enrolment secret")
        }
        if let existing {
            guard let offered = request.proofHash, let stored = existing.proofHash, constantTimeEqual(stored, offered) else {
                throw CloudError(.alreadyEnrolled, "device \(request.device) is already enrolled; a restored device keeps its key")
            }
            return existing.key
        }
        if let quota, try enrolled() >= quota {
            throw CloudError(.enrolmentRefused, "enrolment refused: app \(request.app) has enrolled its quota of \(quota) devices")
        }
        return nil
    }

    /// A new device key: 32 bytes from `random`.
    package static func newKey(_ random: any RandomSource) -> [UInt8] {
        (0..<4).flatMap { _ in withUnsafeBytes(of: random.next().littleEndian) { Array($0) } }
    }

    /// Checks a name with `TextRule.name`: 1 to 256 bytes on one line, no
    /// NUL and no other control character.
    package static func checkName(_ name: String, _ what: String) throws(CloudError) {
        do {
            try TextRule.name.check(name)
        } catch {
            throw CloudError(.invalidOption, "the \(what) name \(error) (a name is 1 to 256 bytes on one line)")
        }
    }

    package static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
