import Crypto
import Foundation
import IndexModel
import Synchronization
import SyncWire

/// The keyed hashes a cloud derives with its secret (`cloud_meta.voter_secret`),
/// the same in every backend: the key a hash is filed under, a device's
/// pseudonym for a hash, and an offer's content digest. Without the secret
/// none of them tells which URL was voted for, which device voted, or what
/// content a device offered (`docs/CLOUD.md`, "The fold").
///
/// All three start from one HMAC keyed with the secret when the store opens,
/// copied for each message; keys are remembered (up to `keyMemoLimit`, then
/// the memo starts again), since a cloud files the same popular hashes over
/// and over. Safe to share between threads.
package final class CloudSecrets: Sendable {
    /// The 32 secret bytes, as `cloud_meta` keeps them.
    package let secret: [UInt8]
    private let initial: KeyedMAC
    private let keyMemo = Mutex<[KeyMemoEntry: [UInt8]]>([:])
    private static let keyMemoLimit = 1 << 16

    /// A keyed HMAC that is only ever copied, never changed: safe to share
    /// between threads, though swift-crypto does not mark it Sendable.
    private struct KeyedMAC: @unchecked Sendable {
        let mac: HMAC<SHA256>
    }

    private struct KeyMemoEntry: Hashable {
        let app: AppID
        let hash: PublicHash
    }

    package init(secret: [UInt8]) {
        self.secret = secret
        initial = KeyedMAC(mac: HMAC(key: SymmetricKey(data: secret)))
    }

    /// The keyed hash the projections file `hash` of `app` under:
    /// HMAC-SHA256(secret, `string` "hash" ‖ `string` app ‖ hash). Below K
    /// this is all the projections hold of a hash.
    package func key(app: AppID, hash: PublicHash) -> [UInt8] {
        let entry = KeyMemoEntry(app: app, hash: hash)
        if let known = keyMemo.withLock({ $0[entry] }) { return known }
        var writer = BinaryWriter()
        writer.string("hash")
        writer.string(app.rawValue)
        writer.raw(hash.bytes)
        var mac = initial.mac
        mac.update(data: writer.bytes)
        let key = Array(mac.finalize())
        keyMemo.withLock { memo in
            if memo.count >= CloudSecrets.keyMemoLimit { memo.removeAll(keepingCapacity: true) }
            memo[entry] = key
        }
        return key
    }

    /// The cloud's pseudonym for `device` voting on `hash`: HMAC-SHA256(secret,
    /// `string` device ‖ hash) cut to 16 bytes. Votes are counted under it, so
    /// the projections never name a device, and one device counts once per hash.
    package func voter(device: DeviceID, hash: PublicHash) -> [UInt8] {
        var writer = BinaryWriter()
        writer.string(device.rawValue)
        writer.raw(hash.bytes)
        var mac = initial.mac
        mac.update(data: writer.bytes)
        return Array(Array(mac.finalize()).prefix(16))
    }

    /// The keyed digest an offer of `content` for a hash of `app` is kept
    /// under: HMAC-SHA256(secret, `string` "content" ‖ `string` app ‖ the
    /// content's encoding) cut to 16 bytes, equal exactly when the content's
    /// bytes are.
    package func contentDigest(app: AppID, content: PublicContent) -> [UInt8] {
        var writer = BinaryWriter()
        writer.string("content")
        writer.string(app.rawValue)
        content.encode(to: &writer)
        var mac = initial.mac
        mac.update(data: writer.bytes)
        return Array(Array(mac.finalize()).prefix(16))
    }
}
