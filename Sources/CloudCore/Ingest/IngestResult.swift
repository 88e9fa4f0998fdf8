import Foundation
import IndexModel
import SyncWire

/// What one `ingest` did.
public struct IngestResult: Sendable {
    /// What became of the frame.
    public enum Outcome: Hashable, Sendable {
        /// New messages were appended to the cloud log and folded.
        case accepted(messages: Int)
        /// Every message was already held: the frame was acknowledged again.
        case duplicate
        case rejected(WireError)
    }

    /// The reply to send back, signed when the device is known.
    public let reply: [UInt8]
    public let outcome: Outcome
    /// The sending device, once the frame could be read.
    public let device: DeviceID?
}

/// A frame whose structure was read and whose signature is its enrolled
/// device's: what `CloudStore.authenticate` hands back for `ingest`.
public struct AuthenticatedFrame: Sendable {
    public let frame: UploadFrame
    /// The app the device enrolled for, which the frame names.
    public let app: AppID
    /// The device's key, which signs the reply.
    package let key: [UInt8]

    package init(frame: UploadFrame, app: AppID, key: [UInt8]) {
        self.frame = frame
        self.app = app
        self.key = key
    }

    /// The sending device's name in its app, proven by its signature.
    public var device: DeviceID { frame.device }
}

/// An authenticated frame inflated and decoded (`CloudStore.open(_:)`), to
/// be ingested (`CloudStore.ingest(_ opened:)`).
public struct OpenedFrame: Sendable {
    /// The frame as the cloud log keeps it: a payload deflated against a
    /// dictionary is stored instead (`UploadFrame.asLogged`).
    public let authenticated: AuthenticatedFrame
    public let messages: [OutboxMessage]
    /// The payload inflated.
    package let plain: [UInt8]
    /// What the frame was deflated against: empty when it was deflated alone.
    package let dictionary: FrameDictionary
    /// Whether that dictionary was made again from the device's log rows,
    /// this process not holding it (`FrameDictionaries`).
    public let recoveredDictionary: Bool
}

/// What `CloudStore.authenticate` found: a frame to ingest, or the refusal to send.
public enum FrameAuthentication: Sendable {
    case authenticated(AuthenticatedFrame)
    /// The frame is malformed, its device unknown or its signature wrong;
    /// nothing of it was stored.
    case refused(IngestResult)

    /// Reads a frame's structure and limits, finds its enrolled device's key
    /// with `key` (nil: not enrolled) and checks the signature, in constant
    /// time, before any inflating, as every backend does.
    package static func of(_ bytes: [UInt8], key: (AppID, DeviceID) throws -> [UInt8]?) -> FrameAuthentication {
        let frame: UploadFrame
        do {
            frame = try UploadFrame.parse(bytes)
        } catch {
            return .refused(.rejecting(error, device: nil, frame: nil, key: nil, version: UploadFrame.announcedVersion(in: bytes)))
        }
        guard !CrawlerRule.isReserved(frame.device) else {
            // The cloud's own streams are written by the cloud alone, so no
            // key is looked up, whatever an older store enrolled.
            return .refused(.rejecting(WireError(.unknownDevice, "device \(frame.device) is the cloud's own and sends no frames"),
                                       device: frame.device, frame: frame, key: nil))
        }
        let deviceKey: [UInt8]?
        do {
            deviceKey = try key(frame.app, frame.device)
        } catch {
            return .refused(.rejecting(WireError(.unavailable, "the cloud cannot read its device registry"), device: frame.device,
                                       frame: frame, key: nil))
        }
        guard let deviceKey else {
            return .refused(.rejecting(WireError(.unknownDevice, "device \(frame.device) is not enrolled for app \(frame.app)"),
                                       device: frame.device, frame: frame, key: nil))
        }
        guard frame.isSigned(by: deviceKey) else {
            // Unsigned: the cloud never signs a reply to a frame whose own
            // signature failed, or anyone could collect signed replies.
            return .refused(.rejecting(WireError(.badSignature, "the frame is not signed with the key of device \(frame.device)"),
                                       device: frame.device, frame: frame, key: nil))
        }
        return .authenticated(AuthenticatedFrame(frame: frame, app: frame.app, key: deviceKey))
    }
}
