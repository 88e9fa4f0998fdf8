import IndexModel

/// One cloud-visible message of a device's outbox. Vote, withdraw, signal,
/// content (or, for content a device has purged, a withheld answer), report
/// and reindex ask are everything a device ever tells the cloud; private
/// items and private activities produce none of them. `page` is the cloud's
/// own crawler's, and the cloud refuses it from any device; a purged
/// content message is what the cloud's log keeps of one, and no frame
/// carries it. The encoding is in `Journal/FORMAT.md` ("Outbox messages").
public enum OutboxMessage: Hashable, Sendable {
    /// The user engaged with a public activity: one vote for its hash.
    case vote(PublicHash, VoteToken)
    /// The voted activity was deleted, expired or became ineligible.
    case withdraw(PublicHash, VoteToken)
    /// Popularity counts for a hash this device has a live vote for, as deltas:
    /// views (the activity became current), times shown, engagements.
    case signal(PublicHash, Popularity)
    /// The public fields of a hash, sent because the cloud asked for them.
    case content(PublicHash, PublicContent)
    /// A web page the cloud's crawler read (`CrawledPage`), under
    /// `CrawledPage.hash(app:url:)`: only the crawler's stream carries it.
    case page(PublicHash, CrawledPage)
    /// A randomised report of one engagement, in place of a signal when the
    /// app's popularity is private (`PopularityMode.ldp`). It names no hash.
    case report(PrivateReport)
    /// A restored device asks which public hashes the messages the cloud
    /// holds of it after `after`, in its epochs before this message's, voted
    /// for or withdrew; the ack answers with a `CloudReindex`. It names no hash.
    case reindexAsk(after: OutboxPosition)
    /// What a purge of the cloud log leaves of a content message: its hash,
    /// and the keyed digest of the content's encoded bytes under the cloud's
    /// secret (as an offer is kept), so that a resent frame can still be
    /// compared with it. Only a purged log row holds it; no frame carries it.
    case contentPurged(PublicHash, digest: [UInt8])
    /// The answer to a content request whose activity a device has since
    /// purged from its journal (`DeviceStore.purge`): the device made it
    /// again from its journal in place of the content it once sent, which it
    /// no longer holds. The cloud takes it as no offer, and as the same
    /// message as a content message of the same hash at its position.
    case contentWithheld(PublicHash)

    /// The public hash the message is about; nil for a report, which names none.
    public var hash: PublicHash? {
        switch self {
        case .vote(let hash, _), .withdraw(let hash, _), .signal(let hash, _), .content(let hash, _), .page(let hash, _),
             .contentPurged(let hash, _), .contentWithheld(let hash): hash
        case .report, .reindexAsk: nil
        }
    }

    public var kindName: String {
        switch self {
        case .vote: "vote"
        case .withdraw: "withdraw"
        case .signal: "signal"
        case .content: "content"
        case .page: "page"
        case .report: "report"
        case .reindexAsk: "reindexAsk"
        case .contentPurged: "contentPurged"
        case .contentWithheld: "contentWithheld"
        }
    }
}

/// Popularity counts: views, times shown in results, engagements.
public struct Popularity: Hashable, Sendable {
    public var views: UInt64
    public var shown: UInt64
    public var engaged: UInt64

    public init(views: UInt64 = 0, shown: UInt64 = 0, engaged: UInt64 = 0) {
        self.views = views
        self.shown = shown
        self.engaged = engaged
    }

    public static func += (lhs: inout Popularity, rhs: Popularity) {
        lhs.views += rhs.views
        lhs.shown += rhs.shown
        lhs.engaged += rhs.engaged
    }
}

extension OutboxMessage {
    private enum Tag: UInt8 {
        case vote = 1, withdraw, signal, content, page, report, reindexAsk, contentPurged, contentWithheld
    }

    /// The length of a purged content message's keyed digest.
    public static let purgedDigestBytes = 16

    /// Whether a message of the tag has no hash after its tag: a report and
    /// a reindex ask.
    static func isHashless(_ tag: UInt8) -> Bool {
        tag == Tag.report.rawValue || tag == Tag.reindexAsk.rawValue
    }

    /// Whether `bytes` has the shape a frame payload takes a message in
    /// (`FramePayload.encode`): a known tag, then a hash unless the tag has
    /// none. The fields after them are checked where the message is decoded.
    public static func hasFrameShape(_ bytes: [UInt8]) -> Bool {
        guard let tag = bytes.first, Tag(rawValue: tag) != nil else { return false }
        return isHashless(tag) || bytes.count > PublicHash.byteCount
    }

    /// The bytes a device sends for its outbox message `encoded`: the
    /// message itself, or, for content whose text a frame may not carry
    /// (`PublicContent.textProblem`: a NUL that an older build let into an
    /// activity's title), a withheld answer for its hash. The cloud would
    /// refuse the frame, and the device would send it again for good; a
    /// withheld answer is what a device sends when it holds no content it
    /// can send (`docs/SYNC.md`, "What leaves a device"). Only content is
    /// decoded, so other messages cost one byte's look.
    public static func asSent(_ encoded: [UInt8]) -> [UInt8] {
        guard encoded.first == Tag.content.rawValue,
              case .content(let hash, let content)? = try? decode(encoded), content.textProblem != nil else { return encoded }
        return OutboxMessage.contentWithheld(hash).encoded
    }

    public func encode(to writer: inout BinaryWriter) {
        switch self {
        case .vote(let hash, let token), .withdraw(let hash, let token):
            writer.byte(isVote ? Tag.vote.rawValue : Tag.withdraw.rawValue)
            writer.raw(hash.bytes)
            writer.raw(token.bytes)
        case .signal(let hash, let counts):
            writer.byte(Tag.signal.rawValue)
            writer.raw(hash.bytes)
            writer.uvarint(counts.views)
            writer.uvarint(counts.shown)
            writer.uvarint(counts.engaged)
        case .content(let hash, let content):
            writer.byte(Tag.content.rawValue)
            writer.raw(hash.bytes)
            content.encode(to: &writer)
        case .page(let hash, let page):
            writer.byte(Tag.page.rawValue)
            writer.raw(hash.bytes)
            page.encode(to: &writer)
        case .report(let report):
            writer.byte(Tag.report.rawValue)
            report.encode(to: &writer)
        case .reindexAsk(let after):
            writer.byte(Tag.reindexAsk.rawValue)
            writer.position(after)
        case .contentPurged(let hash, let digest):
            writer.byte(Tag.contentPurged.rawValue)
            writer.raw(hash.bytes)
            writer.raw(digest)
        case .contentWithheld(let hash):
            writer.byte(Tag.contentWithheld.rawValue)
            writer.raw(hash.bytes)
        }
    }

    public var encoded: [UInt8] {
        var writer = BinaryWriter(capacity: 64)
        encode(to: &writer)
        return writer.bytes
    }

    private var isVote: Bool {
        if case .vote = self { return true }
        return false
    }

    /// Decodes one message at the reader's position. Every string is at most
    /// `WireLimits.maximumStringBytes`, a content message has at most
    /// `WireLimits.maximumKeywords` keywords, and every number of a report
    /// is within its sketch.
    public static func decode(from reader: inout BinaryReader) throws(CodecError) -> OutboxMessage {
        let start = reader.offset
        let tag = try reader.byte()
        guard Tag(rawValue: tag) != nil else {
            throw CodecError(.unknownKind, at: start, "unknown outbox message kind \(tag)")
        }
        if isHashless(tag) { return try decodeHashless(tag: tag, from: &reader) }
        let hash = PublicHash(unchecked: try reader.fixedBytes(PublicHash.byteCount, "public hash"))
        return try decodeBody(tag: tag, hash: hash, from: &reader)
    }

    /// A message without a hash, after its tag: a report, or a reindex ask
    /// whose position is at most `WireLimits.maximumPosition` in each part.
    static func decodeHashless(tag: UInt8, from reader: inout BinaryReader) throws(CodecError) -> OutboxMessage {
        guard tag != Tag.report.rawValue else { return .report(try PrivateReport.decode(from: &reader)) }
        func part(_ name: String) throws(CodecError) -> UInt64 {
            let at = reader.offset
            let value = try reader.uvarint()
            guard value <= WireLimits.maximumPosition else {
                throw CodecError(.limitExceeded, at: at, "a reindex ask's \(name) is \(value), above \(WireLimits.maximumPosition)")
            }
            return value
        }
        let epoch = Epoch(try part("epoch"))
        return .reindexAsk(after: OutboxPosition(epoch: epoch, seq: OutboxSeq(try part("seq"))))
    }

    /// The fields after the tag and the hash, which a frame payload stores
    /// apart (`FramePayload`); not for a report, which has no hash.
    /// `purged` allows the residue of a purge (`contentPurged`), which only a
    /// purged cloud log row holds.
    static func decodeBody(tag tagByte: UInt8, hash: PublicHash, from reader: inout BinaryReader,
                           purged: Bool = false) throws(CodecError) -> OutboxMessage {
        guard let tag = Tag(rawValue: tagByte) else {
            throw CodecError(.unknownKind, at: reader.offset, "unknown outbox message kind \(tagByte)")
        }
        switch tag {
        case .vote, .withdraw:
            let token = VoteToken(unchecked: try reader.fixedBytes(VoteToken.byteCount, "vote token"))
            return tag == .vote ? .vote(hash, token) : .withdraw(hash, token)
        case .signal:
            func count(_ reader: inout BinaryReader, _ field: String) throws(CodecError) -> UInt64 {
                let at = reader.offset
                let value = try reader.uvarint()
                guard value <= WireLimits.maximumSignalCount else {
                    throw CodecError(.limitExceeded, at: at,
                                     "a signal's \(field) count is \(value), above \(WireLimits.maximumSignalCount)")
                }
                return value
            }
            let counts = Popularity(views: try count(&reader, "views"), shown: try count(&reader, "shown"),
                                    engaged: try count(&reader, "engaged"))
            return .signal(hash, counts)
        case .content:
            let activityType = try reader.wireString()
            let title = try reader.optionalWireString()
            let keywords = try reader.wireKeywords()
            let description = try reader.optionalWireString()
            let url = try reader.optionalWireString()
            return .content(hash, PublicContent(activityType: activityType, title: title, keywords: keywords,
                                                contentDescription: description, webpageURL: url))
        case .page:
            return .page(hash, try CrawledPage.decode(from: &reader))
        case .report, .reindexAsk:
            throw CodecError(.nonCanonical, at: reader.offset, "a \(tag == .report ? "report" : "reindex ask") carries no public hash")
        case .contentPurged:
            guard purged else {
                throw CodecError(.unknownKind, at: reader.offset - 1, "a purged content message is only in a purged cloud log row, never in a frame")
            }
            return .contentPurged(hash, digest: try reader.fixedBytes(purgedDigestBytes, "purged content digest"))
        case .contentWithheld:
            return .contentWithheld(hash)
        }
    }

    public static func decode(_ bytes: [UInt8]) throws(CodecError) -> OutboxMessage {
        try BinaryReader.whole(bytes, "the message") { (reader: inout BinaryReader) throws(CodecError) in try decode(from: &reader) }
    }
}

extension OutboxMessage {
    /// The message as `journal export` and the tools print it: kind, hex hash,
    /// and its fields.
    public var jsonValue: JSONValue {
        var object: JSONObject = ["kind": .string(kindName)]
        if let hash { object["hash"] = .string(hash.hex) }
        switch self {
        case .vote(_, let token), .withdraw(_, let token):
            object["token"] = .string(token.description)
        case .signal(_, let counts):
            object["views"] = .integer(Int64(clamping: counts.views))
            object["shown"] = .integer(Int64(clamping: counts.shown))
            object["engaged"] = .integer(Int64(clamping: counts.engaged))
        case .content(_, let content):
            content.addJSONFields(to: &object)
        case .page(_, let page):
            page.addJSONFields(to: &object)
        case .report(let report):
            object["epsilon"] = .string(PrivatePopularity.decimal(report.epsilonThousandths))
            object["hashes"] = .integer(Int64(report.hashes))
            object["buckets"] = .integer(Int64(report.buckets))
            object["function"] = .integer(Int64(report.function))
            object["row"] = .integer(Int64(report.row))
            object["positive"] = .bool(report.positive)
        case .reindexAsk(let after):
            object["after"] = .string(after.description)
        case .contentPurged(_, let digest):
            object["purgedContentDigest"] = .string(digest.map { $0 < 16 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined())
        case .contentWithheld:
            break
        }
        return .object(object)
    }
}

extension PublicContent {
    /// Adds the content's fields to `object` under the names every JSON
    /// output uses (a message in `journal export`, an entry in cloud search):
    /// type, title, keywords, description and url, absent ones as null.
    public func addJSONFields(to object: inout JSONObject) {
        object["type"] = .string(activityType)
        object["title"] = title.map(JSONValue.string) ?? .null
        object["keywords"] = .array(keywords.map(JSONValue.string))
        object["description"] = contentDescription.map(JSONValue.string) ?? .null
        object["url"] = webpageURL.map(JSONValue.string) ?? .null
    }
}
