import ByteCoding
import Crypto
import IndexModel

/// A batch of outbox messages on its way to the cloud: a header naming who sent
/// what range, the messages deflated, and an HMAC-SHA256 signature under the
/// device's key over the header (which holds the payload's SHA-256). The bytes
/// are specified in `Journal/FORMAT.md` ("Sync frames").
///
/// A receiver checks, in this order and before any inflating: structure and
/// header limits (`parse`), the signature (`isSigned(by:)`), and only then
/// inflates with the output capped and checks the digest (`messages()`).
public struct UploadFrame: Hashable, Sendable {
    public var app: AppID
    public var device: DeviceID
    public var epoch: Epoch
    public var firstSeq: OutboxSeq
    public var lastSeq: OutboxSeq
    public var count: Int
    /// The position the sender takes the cloud to hold through, right before
    /// this frame: `epoch:firstSeq-1` inside an epoch. On the first frame of
    /// an epoch it is where the previous one ended, and the cloud begins the
    /// new epoch only when it holds that much (`docs/SYNC.md`, "Epochs").
    public var follows: OutboxPosition
    /// The version of the frame's encoding: `version` for a frame built
    /// here; a cloud also reads frames of `oldestVersion` on, and answers
    /// each in its own version.
    public var version: UInt8 = UploadFrame.version
    /// A probe asks whether the cloud still holds these messages and never
    /// adds any: the answer is an ack of what is held, or a gap.
    public var isProbe: Bool
    public var codec: Codec
    public var uncompressedLength: Int
    /// SHA-256 of the uncompressed payload.
    public var digest: [UInt8]
    /// The name (`FrameDictionary.digest`, 8 bytes) of the dictionary the
    /// payload is deflated against; nil when it is deflated alone (or stored).
    public var base: [UInt8]?
    /// The payload as carried (compressed when `codec` is deflate).
    public var payload: [UInt8]
    public var signature: [UInt8]
    /// The encoded header: the bytes the signature covers.
    public private(set) var header: [UInt8]

    /// How the payload is carried: as is, or raw deflate (what devices send).
    public enum Codec: UInt8, Hashable, Sendable {
        case stored = 0
        case deflate = 1
    }

    public static let magic: [UInt8] = Array("SLSY".utf8)
    /// Version 2 added `follows` and `isProbe`; version 3 `Rejection.ended`;
    /// version 4 the signature of the answered frame in every reply; version
    /// 5 the report message and the popularity mode in every ack; version 6
    /// the reindex ask and the reindex request in an ack; version 7
    /// the withheld content answer; version 8 the frame dictionary (`base`)
    /// and `WireError.Code.unknownBase`.
    public static let version: UInt8 = 8
    /// The oldest version a cloud still reads, so that it can be upgraded
    /// before its devices: version 7 frames are version 8's without a
    /// dictionary, and the replies to them are the same but for the version.
    public static let oldestVersion: UInt8 = 7

    /// The header's flags byte: which of these the frame is.
    package enum Flags {
        static let probe: UInt8 = 1
        static let based: UInt8 = 2
        /// The version that added `based`: older frames may only be probes.
        package static let firstBasedVersion: UInt8 = 8
        static func allowed(in version: UInt8) -> UInt8 { version < firstBasedVersion ? probe : probe | based }
    }

    enum FrameType: UInt8 {
        case upload = 1, ack = 2, rejection = 3
    }

    public var first: OutboxPosition { OutboxPosition(epoch: epoch, seq: firstSeq) }
    public var last: OutboxPosition { OutboxPosition(epoch: epoch, seq: lastSeq) }

    /// Builds and signs the frame for `records`, which must be consecutive
    /// positions of one epoch. `follows` defaults to the position before the
    /// first record inside its epoch, or to nothing for an epoch's first. A
    /// payload that would deflate past `WireLimits.maximumCompressionRatio`
    /// is stored instead, whatever `codec` asks. A deflated payload is
    /// deflated against `dictionary` unless it is empty.
    public init(app: AppID, device: DeviceID, records: [OutboxRecord], key: [UInt8], follows: OutboxPosition? = nil,
                isProbe: Bool = false, codec: Codec = .deflate, level: Int32 = 6, dictionary: FrameDictionary = .empty) {
        self.init(app: app, device: device, records: records, plain: FramePayload.encode(records.map(\.encoded)), key: key,
                  follows: follows, isProbe: isProbe, codec: codec, level: level, dictionary: dictionary)
    }

    /// The frame of `records` whose payload `plain` is
    /// (`FramePayload.encode` of their encodings), made by the caller.
    init(app: AppID, device: DeviceID, records: [OutboxRecord], plain: [UInt8], key: [UInt8], follows: OutboxPosition?,
         isProbe: Bool, codec: Codec, level: Int32, dictionary: FrameDictionary) {
        precondition(!records.isEmpty, "a frame carries at least one message")
        let first = records[0].position
        let epoch = first.epoch
        for (previous, record) in zip(records, records.dropFirst()) {
            precondition(record.position == previous.position.nextInEpoch,
                         "frame records must be consecutive in one epoch")
        }
        self.app = app
        self.device = device
        self.epoch = epoch
        firstSeq = first.seq
        lastSeq = records[records.count - 1].position.seq
        count = records.count
        self.follows = follows ?? (first.seq > .first ? first.previousInEpoch : nil) ?? .nothing
        precondition(self.follows < OutboxPosition(epoch: epoch, seq: firstSeq), "a frame follows a position before its first")
        self.isProbe = isProbe
        uncompressedLength = plain.count
        digest = Array(SHA256.hash(data: plain))
        (self.codec, payload, base) = UploadFrame.carried(plain, codec: codec, level: level, dictionary: dictionary)
        header = []
        signature = []
        header = encodeHeader()
        signature = Array(HMAC<SHA256>.authenticationCode(for: header, using: SymmetricKey(data: key)))
    }

    /// How `plain` is carried: deflated against `dictionary` unless it is
    /// empty. A frame names the dictionary whenever it has one, even when
    /// its hashes are all new, because device and cloud make the next
    /// dictionary from the named one (or from none). A payload that
    /// deflates past the ratio every receiver holds a deflated payload to (a
    /// deflate bomb's bound) goes stored: deflated, an honest but
    /// repetitive frame would be refused for good.
    private static func carried(_ plain: [UInt8], codec: Codec, level: Int32,
                                dictionary: FrameDictionary) -> (Codec, [UInt8], base: [UInt8]?) {
        guard codec == .deflate else { return (.stored, plain, nil) }
        let deflated = Deflate.compress(plain, level: level, dictionary: dictionary.bytes)
        guard plain.count <= deflated.count * WireLimits.maximumCompressionRatio + 1024 else { return (.stored, plain, nil) }
        return (.deflate, deflated, dictionary.isEmpty ? nil : dictionary.digest)
    }

    /// The frame as the cloud log keeps it: a payload deflated against a
    /// dictionary replaced by `plain` (this frame's `plainPayload`) stored,
    /// so that a log row never needs another to be read, and ingest does
    /// not deflate it a second time. The header and signature stay the ones
    /// the device sent: the reply names that signature.
    public func asLogged(_ plain: [UInt8]) -> UploadFrame {
        guard base != nil else { return self }
        var frame = self
        (frame.codec, frame.payload, frame.base) = (.stored, plain, nil)
        return frame
    }

    private func encodeHeader() -> [UInt8] {
        var writer = BinaryWriter(capacity: 128)
        writer.raw(UploadFrame.magic)
        writer.byte(version)
        writer.byte(FrameType.upload.rawValue)
        writer.string(app.rawValue)
        writer.string(device.rawValue)
        writer.uvarint(epoch.rawValue)
        writer.uvarint(firstSeq.rawValue)
        writer.uvarint(lastSeq.rawValue)
        writer.uvarint(UInt64(count))
        writer.position(follows)
        writer.byte((isProbe ? Flags.probe : 0) | (base == nil ? 0 : Flags.based))
        writer.byte(codec.rawValue)
        writer.uvarint(UInt64(uncompressedLength))
        writer.raw(digest)
        if let base { writer.raw(base) }
        writer.uvarint(UInt64(payload.count))
        return writer.bytes
    }

    /// The frame as sent: header, signature, payload.
    public var encoded: [UInt8] {
        header + signature + payload
    }

    /// The version an upload frame's first bytes announce, when it is one a
    /// cloud reads: what a reply to a frame that cannot be read is written
    /// in, so that an older device can still read why.
    public static func announcedVersion(in bytes: [UInt8]) -> UInt8? {
        guard bytes.count > 5, Array(bytes[0..<4]) == magic, (oldestVersion...version).contains(bytes[4]) else { return nil }
        return bytes[4]
    }

    /// The sending device's name, read from the start of the header without
    /// reading the rest (for a rate limit in front of `parse`); nil when the
    /// bytes do not start like an upload frame.
    public static func deviceName(in bytes: [UInt8]) -> DeviceID? {
        var reader = BinaryReader(bytes)
        guard (try? FrameHeader.readPrologue(&reader, expecting: .upload)) != nil,
              (try? FrameHeader.identifier(&reader, "app")) != nil else { return nil }
        return (try? FrameHeader.identifier(&reader, "device")).map(DeviceID.init)
    }

    /// Reads a frame's structure and checks every header bound; neither the
    /// signature nor the payload is examined yet.
    public static func parse(_ bytes: [UInt8]) throws(WireError) -> UploadFrame {
        guard bytes.count <= WireLimits.maximumFrameBytes else {
            throw WireError(.tooLarge, "the frame is \(bytes.count) bytes; at most \(WireLimits.maximumFrameBytes) are accepted")
        }
        var reader = BinaryReader(bytes)
        do {
            let version = try FrameHeader.readPrologue(&reader, expecting: .upload)
            let app = AppID(try FrameHeader.identifier(&reader, "app"))
            let device = DeviceID(try FrameHeader.identifier(&reader, "device"))
            let epoch = Epoch(try FrameHeader.position(&reader, "epoch"))
            let firstSeq = OutboxSeq(try FrameHeader.position(&reader, "first seq"))
            let lastSeq = OutboxSeq(try FrameHeader.position(&reader, "last seq"))
            let countAt = reader.offset
            let count = try reader.uvarint()
            guard epoch >= .first, let beforeFirst = firstSeq.previous, lastSeq >= firstSeq else {
                throw WireError(.malformed, "the frame's range \(epoch):\(firstSeq)...\(lastSeq) is not a range of outbox positions")
            }
            let span = firstSeq.count(through: lastSeq)
            guard count == UInt64(span) else {
                throw WireError(.malformed, "the frame counts \(count) messages but spans \(span) seqs (at byte \(countAt))")
            }
            guard count <= UInt64(WireLimits.maximumMessages) else {
                throw WireError(.tooLarge, "the frame carries \(count) messages; at most \(WireLimits.maximumMessages) are accepted")
            }
            let followsAt = reader.offset
            let follows = try FrameHeader.outboxPosition(&reader, "follows")
            let inside = OutboxPosition(epoch: epoch, seq: beforeFirst)
            guard firstSeq == .first ? follows <= inside : follows == inside else {
                throw WireError(.malformed, """
                    the frame starts at \(epoch):\(firstSeq) but says it follows \(follows) (at byte \(followsAt)); \
                    it must follow \(firstSeq == .first ? "a position before it" : inside.description)
                    """)
            }
            let flagsAt = reader.offset
            let flags = try reader.byte()
            guard flags & ~Flags.allowed(in: version) == 0 else {
                throw WireError(.malformed, "unknown frame flags \(flags) at byte \(flagsAt)")
            }
            let codecAt = reader.offset
            guard let codec = Codec(rawValue: try reader.byte()) else {
                throw WireError(.malformed, "unknown codec at byte \(codecAt)")
            }
            if flags & Flags.based != 0, codec != .deflate {
                throw WireError(.malformed, "the frame names a dictionary (flags at byte \(flagsAt)) but its payload is not deflated")
            }
            let uncompressed = try reader.uvarint()
            guard uncompressed <= UInt64(WireLimits.maximumPayloadBytes) else {
                throw WireError(.tooLarge, "the payload inflates to \(uncompressed) bytes; at most \(WireLimits.maximumPayloadBytes) are accepted")
            }
            let digest = try reader.fixedBytes(32, "payload digest")
            let base = flags & Flags.based != 0 ? try reader.fixedBytes(FrameDictionary.digestBytes, "dictionary name") : nil
            let payloadLength = try reader.uvarint()
            let headerEnd = reader.offset
            let signature = try reader.fixedBytes(32, "signature")
            guard payloadLength == UInt64(reader.remaining) else {
                throw WireError(.malformed, "the header announces a \(payloadLength)-byte payload but \(reader.remaining) bytes follow")
            }
            if codec == .stored, payloadLength != uncompressed {
                throw WireError(.malformed, "a stored payload of \(payloadLength) bytes announced as \(uncompressed)")
            }
            if codec == .deflate, uncompressed > payloadLength * UInt64(WireLimits.maximumCompressionRatio) + 1024 {
                throw WireError(.tooLarge, "the payload claims a compression ratio above \(WireLimits.maximumCompressionRatio):1")
            }
            var frame = UploadFrame(app: app, device: device, epoch: epoch, firstSeq: firstSeq, lastSeq: lastSeq,
                                    count: Int(count), follows: follows, isProbe: flags & Flags.probe != 0, codec: codec,
                                    uncompressedLength: Int(uncompressed), digest: digest, base: base,
                                    payload: Array(bytes[reader.offset...]), signature: signature)
            frame.header = Array(bytes[..<headerEnd])
            frame.version = version
            return frame
        } catch let error as CodecError {
            throw WireError(.malformed, "the frame is malformed: \(error)")
        } catch let error as WireError {
            throw error
        } catch {
            throw WireError(.malformed, "the frame is malformed: \(error)")
        }
    }

    private init(app: AppID, device: DeviceID, epoch: Epoch, firstSeq: OutboxSeq, lastSeq: OutboxSeq, count: Int,
                 follows: OutboxPosition, isProbe: Bool, codec: Codec,
                 uncompressedLength: Int, digest: [UInt8], base: [UInt8]?, payload: [UInt8], signature: [UInt8]) {
        self.app = app
        self.device = device
        self.epoch = epoch
        self.firstSeq = firstSeq
        self.lastSeq = lastSeq
        self.count = count
        self.follows = follows
        self.isProbe = isProbe
        self.codec = codec
        self.uncompressedLength = uncompressedLength
        self.digest = digest
        self.base = base
        self.payload = payload
        self.signature = signature
        header = []
    }

    /// Whether the signature is this device key's, compared in constant time.
    public func isSigned(by key: [UInt8]) -> Bool {
        HMAC<SHA256>.isValidAuthenticationCode(signature, authenticating: header, using: SymmetricKey(data: key))
    }

    /// Inflates the payload (never past the announced length), checks its digest
    /// and decodes exactly `count` messages. Call only after the signature checked.
    public func messages(dictionary: FrameDictionary = .empty) throws(WireError) -> [OutboxMessage] {
        try UploadFrame.messages(in: try plainPayload(dictionary: dictionary), count: count)
    }

    /// Exactly `count` messages decoded from a frame's `plainPayload`, each
    /// content message's text admitted by `PublicContent.textProblem`: a
    /// frame is where a device's text enters the cloud, so text that no
    /// store could keep exactly (a NUL) or that is no line (a control
    /// character in a type or URL) is refused here, naming the message.
    public static func messages(in plain: [UInt8], count: Int) throws(WireError) -> [OutboxMessage] {
        let messages: [OutboxMessage]
        do {
            messages = try FramePayload.decode(plain, count: count)
        } catch {
            throw WireError(.malformed, "the payload: \(error)")
        }
        for (index, message) in messages.enumerated() {
            if case .content(_, let content) = message, let problem = content.textProblem {
                throw WireError(.malformed, "the payload's message \(index + 1) is content whose \(problem)")
            }
        }
        return messages
    }

    /// The payload inflated (never past the announced length) and checked
    /// against its length and digest: the messages' encoding, every string
    /// in it as UTF-8. A frame with a `base` inflates only against the
    /// dictionary of that digest: given another, it throws `unknownBase`.
    public func plainPayload(dictionary: FrameDictionary = .empty) throws(WireError) -> [UInt8] {
        if let base, base != dictionary.digest {
            throw WireError(.unknownBase, "the frame is deflated against dictionary \(Hex.encode(base)), not against the one given")
        }
        let plain: [UInt8]
        switch codec {
        case .stored:
            plain = payload
        case .deflate:
            do {
                plain = try Deflate.decompress(payload, limit: uncompressedLength, dictionary: base == nil ? [] : dictionary.bytes)
            } catch .tooLarge {
                // The announced length is within the limits (`parse` checked), so
                // inflating stops there: this is a lie or corruption, not size.
                throw WireError(.malformed, "the payload inflates past its announced \(uncompressedLength) bytes")
            } catch {
                throw WireError(.malformed, "the payload does not inflate: \(error)")
            }
        }
        guard plain.count == uncompressedLength else {
            throw WireError(.malformed, "the payload inflates to \(plain.count) bytes, not the announced \(uncompressedLength)")
        }
        guard Array(SHA256.hash(data: plain)) == digest else {
            throw WireError(.malformed, "the payload does not match its digest")
        }
        return plain
    }
}

/// The prologue every frame starts with, and the identifier fields.
enum FrameHeader {
    /// Reads magic, version and type, and returns the version: one from
    /// `UploadFrame.oldestVersion` to `UploadFrame.version`.
    @discardableResult
    static func readPrologue(_ reader: inout BinaryReader, expecting type: UploadFrame.FrameType) throws -> UInt8 {
        let magic = try reader.fixedBytes(4, "magic")
        guard magic == UploadFrame.magic else {
            throw WireError(.malformed, "not a Sightline sync frame (the first bytes are not \"SLSY\")")
        }
        let version = try reader.byte()
        guard (UploadFrame.oldestVersion...UploadFrame.version).contains(version) else {
            throw WireError(.malformed, """
                sync frame version \(version) is not supported (this build reads versions \(UploadFrame.oldestVersion) to \(UploadFrame.version))
                """)
        }
        let typeByte = try reader.byte()
        guard typeByte == type.rawValue else {
            throw WireError(.malformed, "expected a frame of type \(type.rawValue), got \(typeByte)")
        }
        return version
    }


    /// An epoch or seq, refused above `WireLimits.maximumPosition` with the
    /// field's name and offset.
    static func position(_ reader: inout BinaryReader, _ field: String) throws -> UInt64 {
        let at = reader.offset
        let value = try reader.uvarint()
        guard value <= WireLimits.maximumPosition else {
            throw WireError(.malformed, "the \(field) at byte \(at) is \(value), above the largest position \(WireLimits.maximumPosition)")
        }
        return value
    }

    /// An outbox position, its epoch and then its seq, each checked as
    /// `position` checks it; `what` names the pair ("accepted": "accepted
    /// epoch" and "accepted seq").
    static func outboxPosition(_ reader: inout BinaryReader, _ what: String) throws -> OutboxPosition {
        OutboxPosition(epoch: Epoch(try position(&reader, "\(what) epoch")), seq: OutboxSeq(try position(&reader, "\(what) seq")))
    }

    /// An app or device name, checked with `TextRule.name` (1 to 256 bytes
    /// on one line, no NUL or other control character) as enrolment checks it.
    static func identifier(_ reader: inout BinaryReader, _ what: String) throws -> String {
        let at = reader.offset
        let text = try reader.string()
        do {
            try TextRule.name.check(text)
        } catch {
            throw WireError(.malformed, "the \(what) name (from byte \(at) of the frame) \(error)")
        }
        return text
    }
}

extension BinaryWriter {
    /// An outbox position as frames and replies carry it: the epoch, then
    /// the seq (`FrameHeader.outboxPosition` reads it back).
    mutating func position(_ position: OutboxPosition) {
        uvarint(position.epoch.rawValue)
        uvarint(position.seq.rawValue)
    }
}
