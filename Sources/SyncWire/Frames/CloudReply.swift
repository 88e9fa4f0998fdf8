import Crypto
import IndexModel

/// What went wrong with a frame, on either side of the wire.
public struct WireError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure: its byte on the wire, and what the uploader does
    /// about it (retry, rewind, or stop).
    public enum Code: UInt8, Hashable, Sendable, CaseIterable {
        /// The frame cannot be read: bad structure, bad payload, bad digest.
        case malformed = 1
        /// Beyond a `WireLimits` bound.
        case tooLarge = 2
        /// The signature is not the device key's (or the key is another app's).
        case badSignature = 3
        /// The frame does not start where the cloud expects; `Rejection.expected` says where.
        case gap = 4
        /// The frame reuses positions the cloud accepted with different content.
        case equivocation = 5
        /// The cloud has no such device (not enrolled, or another tenant's).
        case unknownDevice = 6
        /// The device sends faster than its rate limit; retry later.
        case rateLimited = 7
        /// The frame is well formed but says something the cloud refuses
        /// (content that does not match its hash, a device changing its token).
        case refused = 8
        /// The cloud could not store the frame right now (its database failed);
        /// nothing was kept. Retry later.
        case unavailable = 9
        /// The frame is deflated against a dictionary the cloud does not
        /// hold (it restarted, or let it go): nothing was kept; send the
        /// messages again in a frame deflated alone (`FrameDictionary`).
        case unknownBase = 10

        public var name: String {
            switch self {
            case .malformed: "malformed"
            case .tooLarge: "tooLarge"
            case .badSignature: "badSignature"
            case .gap: "gap"
            case .equivocation: "equivocation"
            case .unknownDevice: "unknownDevice"
            case .rateLimited: "rateLimited"
            case .refused: "refused"
            case .unavailable: "unavailable"
            case .unknownBase: "unknownBase"
            }
        }
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.name): \(message)" }
}

/// The cloud's answer to an accepted (or duplicate) frame, sent only after the
/// cloud's transaction committed.
public struct Ack: Hashable, Sendable {
    /// The cloud holds every message of the device up to here.
    public var acceptedThrough: OutboxPosition
    /// Up to here the cloud's copy is durable.
    public var durableThrough: OutboxPosition
    /// Up to here the cloud's last backup snapshot holds the device's messages.
    /// A device drops a message only when it is both durable and backed up, so
    /// that after a cloud restore it can send again what the snapshot lacked.
    public var backedUpThrough: OutboxPosition
    /// Public hashes whose content the cloud asks this device for.
    public var contentRequests: [PublicHash]
    /// How the device's app reports popularity, as the cloud has it now.
    public var popularity: PopularityMode
    /// The answer to the last reindex ask of the frame acknowledged, when it
    /// had one.
    public var reindex: CloudReindex?

    public init(acceptedThrough: OutboxPosition, durableThrough: OutboxPosition,
                backedUpThrough: OutboxPosition = .nothing, contentRequests: [PublicHash] = [],
                popularity: PopularityMode = .exact, reindex: CloudReindex? = nil) {
        self.acceptedThrough = acceptedThrough
        self.durableThrough = durableThrough
        self.backedUpThrough = backedUpThrough
        self.contentRequests = contentRequests
        self.popularity = popularity
        self.reindex = reindex
    }

    /// Through where the device may drop its messages: durable and backed up.
    public var droppableThrough: OutboxPosition { min(durableThrough, backedUpThrough) }
}

/// The cloud's answer to a reindex ask (`OutboxMessage.reindexAsk`): the
/// public hashes that the device's messages it holds after `after`, up to
/// `through`, in the device's epochs before the ask's, voted for or withdrew.
/// The device states its vote for each again; with `more`, it asks again
/// after `through`.
public struct CloudReindex: Hashable, Sendable {
    public var after: OutboxPosition
    public var through: OutboxPosition
    /// In ascending order, without repeats, at most `WireLimits.maximumRequests`.
    public var hashes: [PublicHash]
    public var more: Bool

    public init(after: OutboxPosition, through: OutboxPosition, hashes: [PublicHash], more: Bool) {
        self.after = after
        self.through = through
        self.hashes = hashes
        self.more = more
    }

    /// Writes the request, or a 0 byte for none.
    static func encode(_ request: CloudReindex?, to writer: inout BinaryWriter) {
        guard let request else {
            writer.byte(0)
            return
        }
        writer.byte(1)
        writer.position(request.after)
        writer.position(request.through)
        writer.uvarint(UInt64(request.hashes.count))
        for hash in request.hashes { writer.raw(hash.bytes) }
        writer.byte(request.more ? 1 : 0)
    }

    /// Reads what `encode` wrote, checking every field: positions within
    /// `WireLimits.maximumPosition`, `through` not before `after`, at most
    /// `WireLimits.maximumRequests` hashes in ascending order.
    static func decode(from reader: inout BinaryReader) throws -> CloudReindex? {
        let presentAt = reader.offset
        switch try reader.byte() {
        case 0: return nil
        case 1: break
        case let flag: throw WireError(.malformed, "the ack's reindex flag at byte \(presentAt) is \(flag), not 0 or 1")
        }
        let after = try FrameHeader.outboxPosition(&reader, "reindex after")
        let through = try FrameHeader.outboxPosition(&reader, "reindex through")
        guard through >= after else {
            throw WireError(.malformed, "the ack's reindex request reads from \(after) back to \(through)")
        }
        let countAt = reader.offset
        let count = try reader.uvarint()
        guard count <= UInt64(WireLimits.maximumRequests) else {
            throw WireError(.tooLarge, "the ack's reindex request at byte \(countAt) names \(count) hashes")
        }
        var hashes: [PublicHash] = []
        for _ in 0..<count {
            let at = reader.offset
            let hash = PublicHash(unchecked: try reader.fixedBytes(PublicHash.byteCount, "reindex hash"))
            if let last = hashes.last, !(last < hash) {
                throw WireError(.malformed, "the reindex hash at byte \(at) is not after the one before it")
            }
            hashes.append(hash)
        }
        let moreAt = reader.offset
        let more = try reader.byte()
        guard more <= 1 else { throw WireError(.malformed, "the reindex request's more flag at byte \(moreAt) is \(more), not 0 or 1") }
        return CloudReindex(after: after, through: through, hashes: hashes, more: more == 1)
    }
}

/// A refused frame: why, and for a gap the position the cloud expects next.
public struct Rejection: Hashable, Sendable {
    public var error: WireError
    /// For `.gap`: the first position the cloud would accept. For
    /// `.equivocation`: the position after the newest one the cloud holds of
    /// the device.
    public var expected: OutboxPosition?
    /// For a `.gap` refusing messages of an epoch the cloud has ended (it
    /// holds a later epoch of the device): the last position the cloud holds
    /// of the frame's epoch (seq 0: none of it). The device moves what comes
    /// after it to a new epoch above `expected`.
    public var ended: OutboxPosition?

    public init(_ error: WireError, expected: OutboxPosition? = nil, ended: OutboxPosition? = nil) {
        self.error = error
        self.expected = expected
        self.ended = ended
    }

    /// Whether resending cannot help: the device must stop and report.
    public var isPermanent: Bool {
        switch error.code {
        case .gap, .rateLimited, .unavailable: false
        default: true
        }
    }
}

/// A frame from the cloud to a device. Signed with the device's key when the
/// cloud knows it, so that nobody between can forge an ack (which would make the
/// device drop messages the cloud never got), and bound to the frame it
/// answers, so that nobody can replay an old ack for a newer frame.
public enum CloudReply: Hashable, Sendable {
    case ack(Ack)
    case rejection(Rejection)

    /// What a reply names in place of a frame the cloud could not read.
    public static let unreadFrame = [UInt8](repeating: 0, count: 32)

    /// The reply's bytes to `device` (nil: a frame too malformed to name
    /// one, and the reply names nobody), answering the frame whose signature
    /// is `frameSignature` (nil: a frame that could not be read), signed with
    /// `key` when given, in `version`: the answered frame's.
    public func encoded(device: DeviceID?, answering frameSignature: [UInt8]?, key: [UInt8]?,
                        version: UInt8 = UploadFrame.version) -> [UInt8] {
        let addressee = device?.rawValue ?? ""
        var writer = BinaryWriter(capacity: 128)
        writer.raw(UploadFrame.magic)
        writer.byte(version)
        let answers = frameSignature.flatMap { $0.count == 32 ? $0 : nil } ?? CloudReply.unreadFrame
        switch self {
        case .ack(let ack):
            writer.byte(UploadFrame.FrameType.ack.rawValue)
            writer.string(addressee)
            writer.raw(answers)
            writer.position(ack.acceptedThrough)
            writer.position(ack.durableThrough)
            writer.position(ack.backedUpThrough)
            writer.uvarint(UInt64(ack.contentRequests.count))
            for hash in ack.contentRequests { writer.raw(hash.bytes) }
            ack.popularity.encode(to: &writer)
            CloudReindex.encode(ack.reindex, to: &writer)
        case .rejection(let rejection):
            writer.byte(UploadFrame.FrameType.rejection.rawValue)
            writer.string(addressee)
            writer.raw(answers)
            writer.byte(rejection.error.code.rawValue)
            writer.position(rejection.expected ?? .nothing)
            // Epoch 0 (never a device's): no ended epoch.
            writer.position(rejection.ended ?? .nothing)
            var message = rejection.error.message
            while message.utf8.count > WireLimits.maximumStringBytes { message.removeLast() }
            writer.string(message)
        }
        if let key {
            let mac = HMAC<SHA256>.authenticationCode(for: writer.bytes, using: SymmetricKey(data: key))
            writer.byte(1)
            writer.raw(Array(mac))
        } else {
            writer.byte(0)
        }
        return writer.bytes
    }

    /// A reply as a device reads it: `key` is the device's key; an unsigned
    /// or wrongly signed reply comes back with `isAuthentic` false.
    public static func decode(_ bytes: [UInt8], device: DeviceID, key: [UInt8]) throws(WireError) -> ReceivedReply {
        var reader = BinaryReader(bytes)
        do {
            let magic = try reader.fixedBytes(4, "magic")
            guard magic == UploadFrame.magic else { throw WireError(.malformed, "not a Sightline sync reply") }
            let version = try reader.byte()
            guard (UploadFrame.oldestVersion...UploadFrame.version).contains(version) else {
                throw WireError(.malformed, "sync reply version \(version) is not supported")
            }
            let type = try reader.byte()
            // Empty in the answer to a frame the cloud could not read.
            let nameAt = reader.offset
            let replyDevice = DeviceID(try reader.string())
            do {
                try TextRule(.line, bytes: 0...TextRule.name.bytes.upperBound).check(replyDevice.rawValue)
            } catch {
                throw WireError(.malformed, "the reply's device name (from byte \(nameAt) of the reply) \(error)")
            }
            guard replyDevice == device else {
                throw WireError(.malformed, "the reply is addressed to device \(replyDevice), not \(device)")
            }
            let answers = try reader.fixedBytes(32, "answered frame's signature")
            let reply: CloudReply
            switch UploadFrame.FrameType(rawValue: type) {
            case .ack:
                let accepted = try FrameHeader.outboxPosition(&reader, "accepted")
                let durable = try FrameHeader.outboxPosition(&reader, "durable")
                let backedUp = try FrameHeader.outboxPosition(&reader, "backed-up")
                let count = try reader.uvarint()
                guard count <= UInt64(WireLimits.maximumRequests) else {
                    throw WireError(.tooLarge, "the ack requests \(count) hashes")
                }
                var requests: [PublicHash] = []
                for _ in 0..<count {
                    requests.append(PublicHash(unchecked: try reader.fixedBytes(PublicHash.byteCount, "requested hash")))
                }
                let popularity = try PopularityMode.decode(from: &reader)
                let reindex = try CloudReindex.decode(from: &reader)
                reply = .ack(Ack(acceptedThrough: accepted, durableThrough: durable, backedUpThrough: backedUp,
                                 contentRequests: requests, popularity: popularity, reindex: reindex))
            case .rejection:
                let codeAt = reader.offset
                guard let code = WireError.Code(rawValue: try reader.byte()) else {
                    throw WireError(.malformed, "unknown rejection code at byte \(codeAt)")
                }
                let expected = try FrameHeader.outboxPosition(&reader, "expected")
                let ended = try FrameHeader.outboxPosition(&reader, "ended")
                let message = try reader.string()
                reply = .rejection(Rejection(WireError(code, message), expected: code == .gap || code == .equivocation ? expected : nil,
                                             ended: code == .gap && ended.epoch > .beforeFirst ? ended : nil))
            default:
                throw WireError(.malformed, "reply type \(type) is neither an ack nor a rejection")
            }
            let signedEnd = reader.offset
            let signed = try reader.byte()
            guard signed <= 1 else { throw WireError(.malformed, "the reply's signed flag is \(signed), not 0 or 1") }
            var authentic = false
            if signed == 1 {
                let mac = try reader.fixedBytes(32, "signature")
                authentic = HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: bytes[..<signedEnd],
                                                                   using: SymmetricKey(data: key))
            }
            guard reader.isAtEnd else { throw WireError(.malformed, "\(reader.remaining) bytes follow the reply") }
            return ReceivedReply(reply: reply, answers: answers, isAuthentic: authentic, version: version)
        } catch let error as WireError {
            throw error
        } catch {
            throw WireError(.malformed, "the reply is malformed: \(error)")
        }
    }
}

/// A reply as the device read it.
public struct ReceivedReply: Hashable, Sendable {
    public var reply: CloudReply
    /// The signature of the frame the reply answers; `CloudReply.unreadFrame`
    /// when the cloud could not read the frame.
    public var answers: [UInt8]
    /// Whether the device's key signed the reply (the frame it answers included).
    public var isAuthentic: Bool
    /// The reply's version: the version of the frame it answers.
    public var version: UInt8 = UploadFrame.version

    /// Whether the reply answers `frame` (and no other frame of the device).
    public func isAnswer(to frame: UploadFrame) -> Bool {
        answers == frame.signature
    }
}
