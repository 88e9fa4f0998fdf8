// Fuzz target ingest: structure-aware. Each input is a short session against a
// fresh in-memory `CloudIndex` (K = 2) with three devices enrolled for one app
// and one for another, each holding the real key the cloud issued it. The
// input's first byte chooses each app's popularity mode (`setPopularity`:
// exact, or ldp with one of `privateSettings`). Its other bytes choose, step
// by step, what the devices send: frames of votes, withdrawals, signals and
// content (or raw message bodies) at positions the bytes choose, from the
// expected next seq to 2^64 − 1, signed with the device's key exactly as the
// uploader signs them; private reports (for the sketch the device's last ack
// announced, for another sketch, or fields written by hand in and out of
// their ranges); page messages, which only the cloud's crawler writes (well
// formed under `CrawledPage.hash(app:url:)`, hand-written, or a page's bytes
// changed); headers with a byte changed and signed again; frames signed with
// a wrong key, naming a foreign app, or naming the crawler's stream
// `~crawler` (`CrawlerRule`); replays of earlier frames; the clock moving on;
// the cloud changing an app's popularity mode. A frame may be deflated
// against the dictionary the cloud should hold for its device (the newest it
// made from the device's taken frames, `FrameDictionary`), against one it
// never made, or against the one a device that started again at its newest
// logged frame holds, which the cloud makes again from its log.
//
// Contracts, checked after every frame and at the end of the input:
// - a frame is accepted only from its enrolled device, signed with its key,
//   for its app; the in-memory store never fails (`unavailable`);
// - a frame a device could have built (positions, counts and a deflated
//   payload's compression ratio within the limits) is never `malformed` or
//   `tooLarge`;
// - a reply to an accepted frame is signed with the device's key, names
//   that frame, and carries the app's popularity mode as the cloud has it;
//   a reply to a frame whose signature failed is not signed;
// - an accepted frame sent again is a duplicate and changes nothing;
// - a frame within every limit, signed by its device, deflated against a
//   dictionary the cloud neither made for that device nor can make again
//   from the device's newest log rows is `unknownBase` and changes nothing;
//   against the newest one it made, or one its log makes, never; the cloud
//   recovers a dictionary exactly when a model of its log makes it;
// - a frame carrying a page message is never taken and changes nothing; a
//   frame naming `~crawler` (or any `~` name) is never taken, and is
//   `unknownDevice` when it is within every limit;
// - the cloud log verifies, the projections equal a rebuild from the log, the
//   log holds exactly the accepted frames and messages, and the held epochs
//   are what the accepted frames reached;
// - nothing a device sends records a page: `crawledPages(app:)` is empty for
//   both apps, and the log has no row of `~crawler` and no page message;
// - no count passes `PopularityRule.maximumCount` nor what the devices could
//   add in the days the session spanned; a public hash has K live votes, and
//   its content is content that K devices which voted for it sent;
// - each app's sketch holds exactly the reports a model of `ReportRule`
//   counts: with the app's mode at the end (a change folds the log again),
//   none for an exact app, and for an ldp app only those that fit its sketch,
//   at most `reportsPerDay` per device per day of cloud time, in the order
//   the frames were accepted; so `stats().reports` never passes devices ×
//   reportsPerDay × days used, and is 0 when both apps are exact; the
//   sketch reads back (`privateSketch`, `publicIndex`) with that many reports.
import CloudCore
import CloudSQLite
import Crypto
import DeviceStore
import Foundation
import IndexModel
import SyncWire

enum Target {
    static let app = Stores.app
    static let otherApp = AppID("org.example.other")
    static let threshold = 2
    /// How many devices that voted for a hash must have sent the content it
    /// shows: the cloud's agreement, K (`ContentRule`).
    static let agreeingSenders = threshold
    static let type = "com.example.read"

    static let contents: [PublicContent] = [
        PublicContent(activityType: type, title: "Paris", keywords: ["city"], contentDescription: nil,
                      webpageURL: "https://example.com/paris"),
        // The same URL, so the same hash, with a personalised title.
        PublicContent(activityType: type, title: "Paris, my trip", keywords: ["city"], contentDescription: nil,
                      webpageURL: "https://example.com/paris"),
        PublicContent(activityType: type, title: "Oslo", keywords: [], contentDescription: "a city", webpageURL: "https://example.com/oslo"),
        PublicContent(activityType: type, title: "Notes", keywords: ["a", "b"], contentDescription: nil, webpageURL: nil),
    ]
    static let hashes: [PublicHash] = contents.map { PublicHash.of(app: app, content: $0)! }
        + [PublicHash.of(app: app, activityType: type, identity: "url:https://example.com/never-sent")]

    /// URLs of pages: two that public content names (a page there would show
    /// instead of what devices agreed), one that none does, and an empty one,
    /// which no page message may carry.
    static let pageURLs = ["https://example.com/paris", "https://example.com/oslo", "https://example.com/page", ""]
    /// A page's strings; the last is past `WireLimits.maximumStringBytes`
    /// (2 bytes a character), so `CrawledPage.init` cuts it.
    static let pageStrings = ["A", "Ünïcode ✓", "", String(repeating: "é", count: WireLimits.maximumStringBytes / 2 + 1)]
    /// Ratings as a hand-written page message carries them: written as
    /// `String(Double)` writes a finite, non-negative number, or not.
    static let canonicalRatings = ["4.5", "0.0", "1000.0", "5e-324", "1.7976931348623157e+308", "1e+16"]
    static let otherRatings = ["4.50", "-0.0", "-1.0", "nan", "inf", "1e3", "0x1p3", " 4.5", "", "1e309", "+4.5", "4.5e0",
                               "04.5", "1e16", "0"]

    /// Settings of private popularity a session chooses from: 3 reports a
    /// day; the same sketch with 5 a day (its reports fit the first's); ε
    /// 1.001, 2 a day; another m; the smallest sketch, 1 a day; the largest
    /// sketch the cloud takes (2^22 cells), 5 a day. `popularityMode(_:)` maps a byte to a mode.
    static let privateSettings: [PrivatePopularity] = [
        (1_000, 3_000, 4, 8), (1_000, 5_000, 4, 8), (1_001, 3_000, 4, 8), (1_000, 3_000, 4, 16), (500, 500, 1, 2),
        (20_000, 100_000, 64, 65_536),
    ].map { try! PrivatePopularity(epsilonThousandths: $0.0, dailyBudgetThousandths: $0.1, hashes: $0.2, buckets: $0.3) }

    /// Bits 0–2 of `choice`: exact (0 and 1), or ldp with `privateSettings[choice - 2]`.
    static func popularityMode(_ choice: UInt8) -> PopularityMode {
        let index = Int(choice & 7)
        return index < 2 ? .exact : .ldp(privateSettings[index - 2])
    }

    /// The largest sketch whose reading this target checks: `CountMeanSketch`
    /// holds k × m doubles, 32 GiB for the largest settings.
    static let largestSketchRead = 1 << 16

    struct Device {
        let name: DeviceID
        let app: AppID
        let key: [UInt8]
        /// What the cloud accepted from the device: epoch → last seq.
        var held: [Epoch: OutboxSeq] = [:]
        /// The popularity mode the device's last ack announced (at first, the
        /// app's mode at the session's start): a device reports for its sketch.
        var popularity: PopularityMode = .exact
        /// The dictionaries the cloud made from the device's taken frames
        /// or recovered from its log, its two newest, oldest first
        /// (`FrameDictionaries`).
        var dictionaries: [FrameDictionary] = []
        /// The frames of the device the cloud logged: each accepted frame's
        /// position and uncompressed payload.
        var logged: [(epoch: UInt64, lastSeq: UInt64, plain: [UInt8])] = []

        /// The device's epoch and next seq, as the numbers the input's choices start from.
        var epoch: UInt64 { held.keys.max()?.rawValue ?? 1 }
        var next: UInt64 { (held[Epoch(epoch)]?.rawValue ?? 0) + 1 }
        var head: OutboxPosition { held.keys.max().map { OutboxPosition(epoch: $0, seq: held[$0] ?? .beforeFirst) } ?? .nothing }
    }

    /// Everything the session did that the end checks compare with.
    struct Session {
        var devices: [Device]
        var acceptedFrames = 0
        var acceptedMessages = 0
        /// Frames the cloud accepted or acknowledged again, to replay.
        var sent: [[UInt8]] = []
        /// hash → content → the devices that sent it in a frame the cloud took.
        var senders: [PublicHash: [PublicContent: Set<DeviceID>]] = [:]
        /// hash → the devices that voted for it in a frame the cloud took.
        var voters: [PublicHash: Set<DeviceID>] = [:]
        /// device → the hashes its votes and withdrawals named in frames the cloud took.
        var named: [DeviceID: Set<PublicHash>] = [:]
        var days: Set<Int64> = []
        /// Each app's popularity mode, as the session set it.
        var modes: [AppID: PopularityMode] = [:]
        /// The fresh reports of each accepted frame that carried any, in the
        /// order the cloud accepted them.
        var reports: [(app: AppID, device: DeviceID, day: Int64, reports: [PrivateReport])] = []
        /// Every dictionary the cloud made, by digest, to read the frames
        /// deflated against them.
        var dictionaries: [[UInt8]: FrameDictionary] = [:]

        /// The messages of a frame's bytes, as the cloud reads them.
        func messages(_ bytes: [UInt8]) -> [OutboxMessage]? {
            guard let frame = try? UploadFrame.parse(bytes) else { return nil }
            return try? frame.messages(dictionary: frame.base.flatMap { dictionaries[$0] } ?? .empty)
        }

        /// The dictionary of `digest` the cloud makes again from the newest
        /// log rows of device `index` (by epoch, then last seq), if they make it.
        /// It reads the newest `firstRecoveryRows`, then `recoveryRows` when
        /// those were as many and did not make it, each read as many rows as
        /// fit in `recoveryBytes`.
        func recoverable(_ digest: [UInt8], device index: Int) -> FrameDictionary? {
            let newest = devices[index].logged.sorted { ($0.epoch, $0.lastSeq) > ($1.epoch, $1.lastSeq) }
            func read(_ limit: Int) -> [[UInt8]] {
                var total = 0
                var payloads: [[UInt8]] = []
                for row in newest.prefix(limit) {
                    total += row.plain.count
                    guard total <= FrameDictionaries.recoveryBytes else { break }
                    payloads.append(row.plain)
                }
                return payloads
            }
            let first = read(FrameDictionaries.firstRecoveryRows)
            if let found = FrameDictionary.recover(digest: digest, fromNewestFirst: first) { return found }
            guard first.count == FrameDictionaries.firstRecoveryRows else { return nil }
            return FrameDictionary.recover(digest: digest, fromNewestFirst: read(FrameDictionaries.recoveryRows))
        }

        /// What the cloud holds once it took `bytes` (not a probe): the
        /// dictionary made from the frame's payload, as its device's newest.
        mutating func took(_ bytes: [UInt8]) {
            guard let frame = try? UploadFrame.parse(bytes), !frame.isProbe,
                  let index = devices.firstIndex(where: { $0.name == frame.device && $0.app == frame.app }) else { return }
            let base = frame.base.flatMap { dictionaries[$0] } ?? .empty
            guard let plain = try? frame.plainPayload(dictionary: base), let next = try? base.following(plain) else { return }
            dictionaries[next.digest] = next
            devices[index].dictionaries = Array((devices[index].dictionaries.filter { $0.digest != next.digest } + [next]).suffix(2))
        }
    }

    final class Clock: StoreClock, @unchecked Sendable {
        // One thread: libFuzzer runs inputs one at a time.
        var current = Stores.start
        func now() -> Timestamp { current }
    }

    /// SIGHTLINE_FUZZ_TRACE=1 prints each frame's outcome (for reading what an input does).
    static let trace = ProcessInfo.processInfo.environment["SIGHTLINE_FUZZ_TRACE"] != nil

    static func run(_ bytes: [UInt8]) {
        let started = ContinuousClock.now
        defer { if trace { note("timing: total \(ContinuousClock.now - started)") } }
        var input = FuzzInput(bytes)
        let clock = Clock()
        let cloud: CloudIndex
        var session: Session
        do {
            cloud = try CloudIndex(at: .memory, options: CloudOptions(clock: clock, random: SeededRandom(seed: 11), threshold: threshold))
            try cloud.registerApp(app, enrolmentSecret: Stores.enrolmentSecret)
            try cloud.registerApp(otherApp, enrolmentSecret: Stores.enrolmentSecret)
            let enrolled = [(DeviceID("phone-1"), app), (DeviceID("phone-2"), app), (DeviceID("phone-3"), app), (DeviceID("tablet-9"), otherApp)]
            session = Session(devices: try enrolled.map { name, app throws(CloudError) in
                Device(name: name, app: app, key: try cloud.enrol(app: app, device: name, enrolmentSecret: Stores.enrolmentSecret))
            })
            // The first byte: the app's mode (bits 0–2), and with bit 3 the
            // other app's, ldp with the first settings.
            let choice = input.byte()
            session.modes = [app: popularityMode(choice), otherApp: choice & 8 == 0 ? .exact : .ldp(privateSettings[0])]
            for app in [app, otherApp] { try cloud.setPopularity(session.modes[app] ?? .exact, app: app) }
            for index in session.devices.indices { session.devices[index].popularity = session.modes[session.devices[index].app] ?? .exact }
        } catch {
            fatalError("fuzz: cannot set up the cloud: \(error)")
        }
        let setUp = ContinuousClock.now
        var steps = 0
        while !input.isAtEnd && steps < 16 {
            steps += 1
            step(&input, cloud: cloud, clock: clock, session: &session)
        }
        let stepped = ContinuousClock.now
        checkCloud(cloud, session: session)
        if trace { note("timing: steps \(stepped - setUp), checks \(ContinuousClock.now - stepped)") }
    }

    static func step(_ input: inout FuzzInput, cloud: CloudIndex, clock: Clock, session: inout Session) {
        let action = input.byte()
        let index = input.below(session.devices.count)
        let device = session.devices[index]
        switch action % 16 {
        case 0..<8:
            // A frame the device builds and signs.
            guard let (frame, legal) = buildFrame(&input, device: device) else { return }
            deliver(frame.encoded, frame: frame, signedBy: device, legal: legal, cloud: cloud, clock: clock, session: &session, index: index)
        case 8, 9:
            // One byte of the header changed, signed again with the device's key.
            guard let (frame, _) = buildFrame(&input, device: device) else { return }
            var header = frame.header
            let at = input.below(max(1, header.count))
            header[at] = input.byte()
            let signature = Array(HMAC<SHA256>.authenticationCode(for: header, using: SymmetricKey(data: device.key)))
            deliver(header + signature + frame.payload, frame: nil, signedBy: device, legal: false, cloud: cloud, clock: clock,
                    session: &session, index: index)
        case 10:
            // Signed with a key that is not the named device's.
            let key = input.bytes(32)
            guard let (frame, _) = buildFrame(&input, device: device, key: key) else { return }
            let outcome = deliver(frame.encoded, frame: nil, signedBy: nil, legal: false, cloud: cloud, clock: clock,
                                  session: &session, index: index)
            contract(!outcome.isTaken, "a frame with a wrong key for \(device.name) was taken: \(outcome)")
        case 11 where action & 16 != 0:
            // A frame naming the cloud's own stream, as the crawler's would.
            sendAsCrawler(&input, device: device, cloud: cloud)
        case 11:
            // The device names an app it is not enrolled for.
            guard let (frame, _) = buildFrame(&input, device: device, app: device.app == app ? otherApp : app) else { return }
            let outcome = deliver(frame.encoded, frame: nil, signedBy: device, legal: false, cloud: cloud, clock: clock,
                                  session: &session, index: index)
            contract(!outcome.isTaken, "a frame of \(device.name) naming a foreign app was taken: \(outcome)")
        case 12, 13:
            // An earlier frame again: a retry, or a replay by someone who saw it.
            guard !session.sent.isEmpty else { return }
            let bytes = session.sent[input.below(session.sent.count)]
            let before = try? cloud.projectionDigest()
            let outcome = cloud.ingest(bytes).outcome
            contract(!outcome.isUnavailable, "the in-memory cloud failed on a replay: \(outcome)")
            if case .accepted = outcome {
                contract(false, "a replayed frame was accepted again")
            }
            if outcome == .duplicate {
                contract((try? cloud.projectionDigest()) == before, "a duplicate frame changed the projections")
                session.took(bytes)
            }
        case 14 where action & 16 != 0:
            // The cloud changes the device's app's popularity mode; devices
            // learn it from their next ack.
            let mode = popularityMode(input.byte())
            do {
                try cloud.setPopularity(mode, app: device.app)
                session.modes[device.app] = mode
                let kept = try cloud.popularity(app: device.app)
                contract(kept == mode, "the cloud keeps \(device.app)'s popularity as \(kept), not the \(mode) it was given")
            } catch {
                contract(false, "the in-memory cloud cannot set \(device.app)'s popularity to \(mode.name): \(error)")
            }
            if trace { note("popularity: \(device.app) \(mode)") }
        case 14:
            // Time passes: minutes, hours or days.
            let amount = Int64(input.uint16())
            let unit: Int64 = input.pick([60_000, 3_600_000, 86_400_000])
            clock.current = clock.current.adding(milliseconds: amount * unit)
        default:
            // Bytes that are not a frame, or a frame cut short.
            var junk: [UInt8] = []
            if input.byte() % 2 == 0, let (frame, _) = buildFrame(&input, device: device) {
                let length = input.below(frame.encoded.count + 1)
                junk = Array(frame.encoded.prefix(length))
            } else {
                let length = input.below(64)
                junk = UploadFrame.magic + [UploadFrame.version] + input.bytes(length)
            }
            let outcome = cloud.ingest(junk).outcome
            contract(!outcome.isTaken && !outcome.isUnavailable, "junk was taken: \(outcome)")
        }
    }

    /// A frame `device` builds, with positions, messages and flags the input
    /// chooses, and whether every number in it is within what a device may send.
    static func buildFrame(_ input: inout FuzzInput, device: Device, key: [UInt8]? = nil,
                           app frameApp: AppID? = nil, name: DeviceID? = nil) -> (UploadFrame, legal: Bool)? {
        let limit = WireLimits.maximumPosition
        let last = UInt64.max - 64
        var epoch: UInt64
        switch input.byte() % 16 {
        case 0..<8: epoch = device.epoch
        case 8, 9: epoch = device.epoch + 1
        case 10: epoch = 1
        case 11: epoch = limit
        case 12: epoch = limit + 1
        case 13: epoch = UInt64.max
        case 14: epoch = 1 << 63
        default: epoch = input.uint64()
        }
        epoch = min(epoch, last)
        var firstSeq: UInt64
        switch input.byte() % 16 {
        case 0..<8: firstSeq = epoch == device.epoch ? device.next : 1
        case 8: firstSeq = device.next + 1
        case 9: firstSeq = max(1, device.next - 1)
        case 10: firstSeq = 1
        case 11: firstSeq = 2
        case 12: firstSeq = limit
        case 13: firstSeq = limit + 1
        case 14: firstSeq = UInt64.max
        default: firstSeq = input.uint64()
        }
        firstSeq = min(firstSeq, last)
        let long = input.byte() % 16 == 0
        let count = 1 + (long ? input.below(40) : input.below(5))
        var legal = epoch >= 1 && firstSeq >= 1 && epoch <= limit && firstSeq + UInt64(count) - 1 <= limit
        let first = OutboxPosition(epoch: Epoch(epoch), seq: OutboxSeq(firstSeq))
        let follows: OutboxPosition
        switch input.byte() % 8 {
        case 0 where epoch != device.epoch || firstSeq == 1:
            follows = device.head
        case 1:
            let followsEpoch = input.uint64() & limit
            follows = OutboxPosition(epoch: Epoch(followsEpoch), seq: OutboxSeq(input.uint64() & limit))
        default:
            follows = firstSeq > 1 ? OutboxPosition(epoch: Epoch(epoch), seq: OutboxSeq(firstSeq - 1)) : .nothing
        }
        guard follows < first else { return nil }
        // What `UploadFrame.parse` allows: an epoch's first frame follows
        // any earlier position, a later one the seq before it.
        legal = legal && (firstSeq == 1 ? true : follows == OutboxPosition(epoch: Epoch(epoch), seq: OutboxSeq(firstSeq - 1)))
        var records: [OutboxRecord] = []
        for offset in 0..<count {
            let (encoded, withinLimits) = message(&input, device: device)
            legal = legal && withinLimits
            records.append(OutboxRecord(position: OutboxPosition(epoch: Epoch(epoch), seq: OutboxSeq(firstSeq + UInt64(offset))), encoded: encoded))
        }
        let flags = input.byte()
        let dictionary: FrameDictionary
        switch flags >> 4 {
        case 0..<6:
            dictionary = device.dictionaries.last ?? .empty
        case 6:
            // One the cloud never made: of a hash the input chooses.
            let hash = PublicHash(Array((input.bytes(32) + [UInt8](repeating: 0, count: 32)).prefix(32)))
                ?? hashes[0]
            let listed = OutboxRecord(position: first, message: .signal(hash, Popularity(views: 1)))
            dictionary = (try? FrameDictionary.empty.following(FramePayload.encode([listed.encoded]))) ?? .empty
        case 7:
            // A device that started its dictionary again at its newest
            // logged frame (a restart): the cloud holds another one, and
            // makes this one again from the log.
            let newest = device.logged.max { ($0.epoch, $0.lastSeq) < ($1.epoch, $1.lastSeq) }
            dictionary = newest.flatMap { try? FrameDictionary.empty.following($0.plain) } ?? .empty
        default:
            dictionary = .empty
        }
        let frame = UploadFrame(app: frameApp ?? device.app, device: name ?? device.name, records: records, key: key ?? device.key,
                                follows: follows, isProbe: flags & 7 == 0, codec: flags & 8 == 0 ? .deflate : .stored,
                                dictionary: dictionary)
        // And what it allows of a deflated payload: at most
        // `maximumCompressionRatio` inflated bytes per byte, and 1 KiB (a
        // page's long repeated strings may pass it).
        legal = legal && (frame.codec == .stored
                          || frame.uncompressedLength <= frame.payload.count * WireLimits.maximumCompressionRatio + 1024)
        return (frame, legal)
    }

    /// One message as the outbox stores it, and whether it is within the wire's limits.
    static func message(_ input: inout FuzzInput, device: Device) -> ([UInt8], Bool) {
        let choice = Int(input.byte())
        var hash = hashes[choice % hashes.count]
        if choice == 255, let any = PublicHash(Array((input.bytes(32) + [UInt8](repeating: 0, count: 32)).prefix(32))) {
            hash = any
        }
        let token = VoteToken([UInt8](repeating: UInt8(input.below(3)), count: VoteToken.byteCount))!
        switch input.byte() % 21 {
        case 20:
            // A reindex ask: after nothing, after a position the input
            // chooses, at the largest position, or past it (written by hand).
            var writer = BinaryWriter()
            writer.byte(OutboxMessage.reindexAsk(after: .nothing).encoded[0])
            let parts: [UInt64] = switch input.byte() % 4 {
            case 0: [0, 0]
            case 1: [UInt64(input.byte() % 4), UInt64(input.uint16())]
            case 2: [WireLimits.maximumPosition, WireLimits.maximumPosition]
            default: [WireLimits.maximumPosition + 1, UInt64.max]
            }
            for part in parts { writer.uvarint(part) }
            return (writer.bytes, parts.allSatisfy { $0 <= WireLimits.maximumPosition })
        case 0, 1, 8, 9:
            return (OutboxMessage.vote(hash, token).encoded, true)
        case 2, 10:
            return (OutboxMessage.withdraw(hash, token).encoded, true)
        case 3, 4, 11, 12:
            func count(_ input: inout FuzzInput) -> UInt64 {
                switch input.byte() % 8 {
                case 0: 0
                case 1: 1
                case 2: 7
                case 3: 1_000
                case 4: 1_001
                case 5: UInt64(input.uint16())
                case 6: WireLimits.maximumPosition
                default: UInt64.max
                }
            }
            let counts = Popularity(views: count(&input), shown: count(&input), engaged: count(&input))
            let within = max(counts.views, counts.shown, counts.engaged) <= WireLimits.maximumSignalCount
            return (OutboxMessage.signal(hash, counts).encoded, within)
        case 5, 6, 13:
            var content = contents[input.below(contents.count)]
            switch input.byte() % 8 {
            case 0: content.title = String(repeating: "t", count: WireLimits.maximumStringBytes + 1)
            case 1: content.keywords = Array(repeating: "k", count: WireLimits.maximumKeywords + 1)
            default: break
            }
            // Mostly the content's own hash; sometimes another one.
            let target = input.byte() % 4 == 0 ? hash : (PublicHash.of(app: app, content: content) ?? hash)
            return (OutboxMessage.content(target, content).encoded, content.fitsWireLimits)
        case 7:
            // A tag and a hash as the outbox stores them, then fields the input writes.
            let tagChoice = input.byte()
            let tag = tagChoice < 250 ? tagChoice % 5 + 1 : input.byte()
            let length = input.below(48)
            let body = input.bytes(length)
            let encoded = [tag] + hash.bytes + (body.isEmpty ? [0] : body)
            return (encoded, false)
        case 16, 17:
            // A report as a device makes it: mostly for the sketch its last
            // ack announced, sometimes (and in an exact app) for one of the
            // other settings, at a cell the input chooses.
            let choice = input.byte()
            let settings = choice % 4 != 0 ? device.popularity.privateSettings ?? privateSettings[Int(choice / 4) % privateSettings.count]
                : privateSettings[Int(choice / 4) % privateSettings.count]
            let function = Int(input.uint16()) % settings.hashes
            let row = Int(input.uint16()) % settings.buckets
            let report = PrivateReport(settings: settings, function: function, row: row, positive: choice & 128 != 0)
            return (OutboxMessage.report(report).encoded, true)
        case 18:
            return rawReport(&input)
        case 19:
            // A report's tag, then the input's bytes.
            return ([OutboxMessage.report(PrivateReport(settings: privateSettings[0], function: 0, row: 0, positive: true)).encoded[0]]
                    + input.bytes(input.below(24)), false)
        case 14:
            // A page as the crawler records it: mostly under its own hash in
            // the device's app, as `cloud crawl` writes it. A page message
            // is within the wire's limits when its URL is not empty.
            let crawled = page(&input)
            let target = input.byte() % 4 == 0 ? hash : CrawledPage.hash(app: device.app, url: crawled.url)
            return (OutboxMessage.page(target, crawled).encoded, !crawled.url.isEmpty)
        default:
            return rawPage(&input, hash: hash, device: device)
        }
    }

    /// A report's fields written by hand (`Journal/FORMAT.md`, "Outbox
    /// messages"): ε, k, m, the function, the row and the sign, each in or
    /// out of its range, sometimes with a byte after them. Whether they are
    /// all within is worked out here, not by the decoder.
    static func rawReport(_ input: inout FuzzInput) -> ([UInt8], Bool) {
        let epsilon: UInt64 = [1, 1_000, 1_001, 20_000, 20_001, 0][input.below(6)]
        let k: UInt64 = [1, 4, 65_536, 65_537, 0][input.below(5)]
        let m: UInt64 = [8, 2, 65_536, 16, 1, 3, 12, 131_072, 0][input.below(9)]
        func index(_ size: UInt64, _ input: inout FuzzInput) -> UInt64 {
            switch input.byte() % 6 {
            case 0: 0
            case 1: size &- 1
            case 2: size
            case 3: 65_535
            case 4: UInt64.max
            default: UInt64(input.uint16())
            }
        }
        let function = index(k, &input)
        let row = index(m, &input)
        let sign: UInt8 = [0, 1, 2, 255][input.below(4)]
        var writer = BinaryWriter()
        writer.byte(OutboxMessage.report(PrivateReport(settings: privateSettings[0], function: 0, row: 0, positive: true)).encoded[0])
        for value in [epsilon, k, m, function, row] { writer.uvarint(value) }
        writer.byte(sign)
        var within = (1...20_000).contains(epsilon) && (1...65_536).contains(k) && (2...65_536).contains(m) && m & (m - 1) == 0
            && function < k && row < m && sign <= 1
        if input.byte() % 8 == 0 {
            writer.byte(input.byte())
            within = false
        }
        return (writer.bytes, within)
    }

    /// A page `CrawledPage.init` makes from the input's choices (it cuts
    /// strings and keywords to the wire's limits and drops a rating that is
    /// not a finite, non-negative number).
    static func page(_ input: inout FuzzInput) -> CrawledPage {
        func text(_ input: inout FuzzInput) -> String { pageStrings[input.below(pageStrings.count)] }
        let url = pageURLs[input.below(pageURLs.count)]
        let present = input.byte()
        func field(_ bit: UInt8, _ input: inout FuzzInput) -> String? { present & bit == 0 ? nil : text(&input) }
        let title = field(1, &input)
        let description = field(2, &input)
        let keywordChoice = input.byte()
        let keywords = (0..<(keywordChoice == 255 ? WireLimits.maximumKeywords + 1 : Int(keywordChoice % 4))).map { _ in text(&input) }
        let image = field(4, &input)
        let deepLink = field(8, &input)
        let appStoreID = field(16, &input)
        let type = field(32, &input)
        let price = field(64, &input)
        let rating: Double?
        switch input.byte() % 12 {
        case 0: rating = nil
        case 1: rating = 4.5
        case 2: rating = 0
        case 3: rating = -0.0
        case 4: rating = Double.leastNonzeroMagnitude
        case 5: rating = Double.greatestFiniteMagnitude
        case 6: rating = 1e16
        case 7: rating = -1
        case 8: rating = Double.nan
        case 9: rating = Double.infinity
        default: rating = Double(bitPattern: input.uint64())
        }
        let ratingCount: Int64?
        switch input.byte() % 8 {
        case 0: ratingCount = nil
        case 1: ratingCount = 0
        case 2: ratingCount = 3
        case 3: ratingCount = CrawledPage.maximumRatingCount
        case 4: ratingCount = Int64.max
        case 5: ratingCount = -1
        default: ratingCount = Int64(bitPattern: input.uint64())
        }
        return CrawledPage(url: url, title: title, description: description, keywords: keywords, image: image, deepLink: deepLink,
                           appStoreID: appStoreID, type: type, rating: rating, ratingCount: ratingCount, price: price)
    }

    /// A page message's bytes that no `CrawledPage` wrote: a page's encoding
    /// with a byte changed, cut short or followed by a byte; fields written
    /// by hand, with strings, keyword counts, ratings and rating counts in
    /// and out of the limits (whether they are all within is worked out
    /// here, not by the decoder); or the input's bytes. Mostly under the hash
    /// of a page URL of the device's app.
    static func rawPage(_ input: inout FuzzInput, hash: PublicHash, device: Device) -> ([UInt8], Bool) {
        let tag: UInt8 = 5
        let url = pageURLs[input.below(pageURLs.count)]
        let target = input.byte() % 4 == 0 ? hash : CrawledPage.hash(app: device.app, url: url)
        var body: [UInt8]
        var within = false
        switch input.byte() % 4 {
        case 0:
            var encoded = page(&input).encoded
            let at = input.below(max(1, encoded.count))
            if at < encoded.count { encoded[at] = input.byte() }
            body = encoded
        case 1:
            let encoded = page(&input).encoded
            body = input.byte() % 2 == 0 ? Array(encoded.prefix(input.below(encoded.count + 1))) : encoded + [input.byte()]
        case 2:
            let strings = [url, "A", "", String(repeating: "x", count: WireLimits.maximumStringBytes),
                           String(repeating: "x", count: WireLimits.maximumStringBytes + 1)]
            var writer = BinaryWriter()
            let present = input.uint16()
            within = true
            func string(_ input: inout FuzzInput) -> String {
                let text = strings[input.below(strings.count)]
                within = within && text.utf8.count <= WireLimits.maximumStringBytes
                return text
            }
            func optional(_ bit: UInt16, _ input: inout FuzzInput) {
                writer.optional(present & bit == 0 ? nil : string(&input)) { $0.string($1) }
            }
            let first = input.byte() % 4 == 0 ? string(&input) : url
            within = within && !first.isEmpty
            writer.string(first)
            optional(1, &input)  // title
            optional(2, &input)  // description
            let keywords = [0, 1, 2, WireLimits.maximumKeywords, WireLimits.maximumKeywords + 1][input.below(5)]
            within = within && keywords <= WireLimits.maximumKeywords
            writer.uvarint(UInt64(keywords))
            for _ in 0..<keywords { writer.string("k") }
            optional(4, &input)  // image
            optional(8, &input)  // deep link
            optional(16, &input)  // App Store id
            optional(32, &input)  // type
            if present & 64 != 0 {
                let choice = input.byte()
                let rating: String
                if choice % 2 == 0 {
                    rating = canonicalRatings[Int(choice / 2) % canonicalRatings.count]
                } else {
                    rating = otherRatings[Int(choice / 2) % otherRatings.count]
                    within = false
                }
                writer.optional(rating) { $0.string($1) }
            } else {
                writer.optional(String?.none) { $0.string($1) }
            }
            if present & 128 != 0 {
                let count: UInt64 = [0, 3, UInt64(CrawledPage.maximumRatingCount), UInt64(CrawledPage.maximumRatingCount) + 1,
                                     UInt64.max][input.below(5)]
                within = within && count <= UInt64(CrawledPage.maximumRatingCount)
                writer.optional(count) { $0.uvarint($1) }
            } else {
                writer.optional(UInt64?.none) { $0.uvarint($1) }
            }
            optional(256, &input)  // price
            body = writer.bytes
        default:
            body = input.bytes(input.below(64))
            if body.isEmpty { body = [0] }
        }
        return ([tag] + target.bytes + body, within)
    }

    /// A frame naming the crawler's stream (or another name beginning with
    /// `~`), for the device's app, signed with the device's key, with the
    /// zero key `CloudStore.recordPages` signs its own frames with, or with
    /// the input's: the cloud writes those streams itself, so it refuses the
    /// frame before looking up a key and signs no reply.
    static func sendAsCrawler(_ input: inout FuzzInput, device: Device, cloud: CloudIndex) {
        let choice = input.byte()
        let name = choice % 8 == 7 ? DeviceID("~") : choice % 8 == 6 ? DeviceID("~" + device.name.rawValue) : CrawlerRule.device
        let key: [UInt8]
        switch input.byte() % 4 {
        case 0: key = [UInt8](repeating: 0, count: 32)
        case 1: key = input.bytes(32)
        default: key = device.key
        }
        guard let (frame, legal) = buildFrame(&input, device: device, key: key, name: name) else { return }
        let result = cloud.ingest(frame.encoded)
        let outcome = result.outcome
        if trace { note("ingest: \(device.name) as \(name) \(frame.first)...\(frame.last): \(outcome)") }
        contract(!outcome.isUnavailable, "the in-memory cloud failed on a frame of \(name): \(outcome)")
        contract(!outcome.isTaken, "a frame of \(device.name) naming \(name) was taken: \(outcome)")
        if case .rejected(let error) = outcome {
            contract(error.code == .unknownDevice || (!legal && (error.code == .malformed || error.code == .tooLarge)),
                     "a frame naming \(name) (\(legal ? "" : "not ")within every limit) was refused as \(error.code.name), not unknownDevice")
        }
        for signer in [key, device.key] {
            contract(isAuthentic(result.reply, device: name, key: signer) != true, "the cloud signed its reply to a frame naming \(name)")
        }
        do {
            let held = try cloud.heldEpochs(app: device.app, device: name)
            contract(held.isEmpty, "the cloud holds \(held) of \(name)")
        } catch {
            contract(false, "the in-memory cloud cannot be read: \(error)")
        }
    }

    /// Ingests `bytes` and checks what one frame may do. `frame` is the frame
    /// as built (nil when the bytes were changed after signing), `signedBy`
    /// the enrolled device whose key signed it.
    @discardableResult
    static func deliver(_ bytes: [UInt8], frame: UploadFrame?, signedBy signer: Device?, legal: Bool, cloud: CloudIndex,
                        clock: Clock, session: inout Session, index: Int) -> IngestResult.Outcome {
        // A dictionary the cloud does not hold for the frame's device, which
        // the device's newest log rows make: the cloud inflates against it.
        let parsed = try? UploadFrame.parse(bytes)
        let owner = parsed.flatMap { parsed in session.devices.firstIndex { $0.name == parsed.device && $0.app == parsed.app } }
        var recoverable: FrameDictionary?
        if let base = parsed?.base, let owner, !session.devices[owner].dictionaries.contains(where: { $0.digest == base }) {
            recoverable = session.recoverable(base, device: owner)
            if let recoverable { session.dictionaries[recoverable.digest] = recoverable }
        }
        let recoveriesBefore = cloud.frameDictionaries.recoveries
        let read = session.messages(bytes)
        let carriesPage = read?.contains { if case .page = $0 { true } else { false } } ?? false
        let before = carriesPage ? (try? cloud.projectionDigest()) : nil
        let result = cloud.ingest(bytes)
        let outcome = result.outcome
        let device = session.devices[index]
        if trace {
            let messages = (read ?? []).map { JSONWriter.compact($0.jsonValue) }
            note("ingest: \(device.name) \(frame.map { "\($0.first)...\($0.last) follows \($0.follows)" } ?? "changed"): \(outcome) \(messages)")
        }
        contract(!outcome.isUnavailable, "the in-memory cloud failed: \(outcome)")
        let recoveries = cloud.frameDictionaries.recoveries
        if trace && recoveries != recoveriesBefore { note("dictionary recovery: \(recoveries)") }
        if recoveries.recovered > recoveriesBefore.recovered {
            contract(recoverable != nil, "the cloud recovered a dictionary for \(device.name) that its newest log rows do not make")
            if let recoverable, let owner {
                let held = session.devices[owner].dictionaries.filter { $0.digest != recoverable.digest } + [recoverable]
                session.devices[owner].dictionaries = Array(held.suffix(2))
            }
        }
        if recoveries.unrecovered > recoveriesBefore.unrecovered {
            contract(recoverable == nil, "the cloud did not recover a dictionary for \(device.name) that its newest log rows make")
        }
        if carriesPage {
            // Only the cloud's crawler records pages: the fold refuses a page
            // message from a device, and a frame's positions held already
            // carry no page, so a resend of them with one is an equivocation.
            contract(!outcome.isTaken, "a frame of \(device.name) carrying a page message was taken: \(outcome)")
            contract((try? cloud.projectionDigest()) == before, "a frame of \(device.name) carrying a page message changed the projections")
            contract(((try? cloud.crawledPages(app: device.app)) ?? []).isEmpty, "a frame of \(device.name) recorded a page")
        }
        if legal, case .rejected(let error) = outcome {
            contract(error.code != .malformed && error.code != .tooLarge, "a frame within every limit was refused: \(error)")
        }
        if legal, let signer, let base = frame?.base {
            let held = signer.dictionaries.contains { $0.digest == base } || recoverable?.digest == base
            let unknown = if case .rejected(let error) = outcome { error.code == .unknownBase } else { false }
            contract(held ? !unknown : unknown, """
                a frame of \(device.name) deflated against a dictionary the cloud \(held ? "made" : "never made") for it was answered \(outcome)
                """)
        }
        if signer == nil {
            contract(isAuthentic(result.reply, device: device.name, key: device.key) != true,
                     "the cloud signed a reply to a frame whose signature failed")
        }
        guard outcome.isTaken else { return outcome }
        contract(signer?.name == device.name, "a frame not signed by \(device.name)'s key was taken")
        contract(isAuthentic(result.reply, device: device.name, key: device.key) == true,
                 "the reply to a taken frame is not signed with the device's key")
        // Every ack says the app's mode as the cloud has it; the device learns it.
        if case .ack(let ack)? = (try? CloudReply.decode(result.reply, device: device.name, key: device.key))?.reply {
            let mode = session.modes[device.app] ?? .exact
            contract(ack.popularity == mode, "the ack to \(device.name) says popularity \(ack.popularity), not \(mode)")
            session.devices[index].popularity = ack.popularity
            // A reindex answer names only what this device's own taken
            // frames voted for or withdrew, in order, at most a page.
            if let reindex = ack.reindex {
                let frame = try? UploadFrame.parse(bytes)
                contract(frame.map { !$0.isProbe } ?? true, "a probe's reindex ask was answered")
                contract(reindex.through >= reindex.after && reindex.hashes.count <= 256
                         && zip(reindex.hashes, reindex.hashes.dropFirst()).allSatisfy { $0 < $1 },
                         "the reindex answer to \(device.name) is out of order or longer than a page")
                let own = session.named[device.name] ?? []
                contract(reindex.hashes.allSatisfy(own.contains), "the reindex answer to \(device.name) names a hash it never voted for or withdrew")
            }
        } else {
            contract(false, "the reply to a taken frame of \(device.name) is not an ack")
        }
        if let taken = try? UploadFrame.parse(bytes) {
            contract(answersFrame(result.reply, device: device.name, key: device.key, frame: taken),
                     "the reply to a taken frame does not name that frame")
        }
        session.sent.append(bytes)
        session.took(bytes)
        session.days.insert(PopularityRule.day(milliseconds: clock.current.millisecondsSince1970))
        // The messages as the cloud read them (a header changed after
        // building may still be taken, with its own messages).
        if let messages = session.messages(bytes) {
            for message in messages {
                switch message {
                case .content(let hash, let content): session.senders[hash, default: [:]][content, default: []].insert(device.name)
                case .vote(let hash, _):
                    session.voters[hash, default: []].insert(device.name)
                    session.named[device.name, default: []].insert(hash)
                case .withdraw(let hash, _): session.named[device.name, default: []].insert(hash)
                case .signal, .page, .report, .reindexAsk, .contentPurged, .contentWithheld: break
                }
            }
        }
        if case .accepted(let count) = outcome, let parsed = try? UploadFrame.parse(bytes) {
            session.acceptedFrames += 1
            session.acceptedMessages += count
            session.devices[index].held[parsed.epoch] = parsed.lastSeq
            if !parsed.isProbe, let plain = try? parsed.plainPayload(dictionary: parsed.base.flatMap { session.dictionaries[$0] } ?? .empty) {
                session.devices[index].logged.append((epoch: parsed.epoch.rawValue, lastSeq: parsed.lastSeq.rawValue, plain: plain))
            }
            // The fresh messages are the frame's last `count`.
            let reports = (session.messages(bytes) ?? []).suffix(count).compactMap { if case .report(let report) = $0 { report } else { nil } }
            if !reports.isEmpty {
                session.reports.append((app: parsed.app, device: parsed.device,
                                        day: PopularityRule.day(milliseconds: clock.current.millisecondsSince1970), reports: reports))
            }
            // The same bytes again are a duplicate and change nothing.
            let before = try? cloud.projectionDigest()
            let again = cloud.ingest(bytes).outcome
            contract(again == .duplicate, "an accepted frame sent again is \(again), not a duplicate")
            contract((try? cloud.projectionDigest()) == before, "a duplicate frame changed the projections")
        }
        return outcome
    }

    /// Whether `reply` is signed with `key`; nil when it is not a reply to `device`.
    static func isAuthentic(_ reply: [UInt8], device: DeviceID, key: [UInt8]) -> Bool? {
        (try? CloudReply.decode(reply, device: device, key: key))?.isAuthentic
    }

    /// Whether `reply` answers `frame` (`docs/SYNC.md`: a reply is bound to its frame).
    static func answersFrame(_ reply: [UInt8], device: DeviceID, key: [UInt8], frame: UploadFrame) -> Bool {
        (try? CloudReply.decode(reply, device: device, key: key))?.isAnswer(to: frame) == true
    }

    static func checkCloud(_ cloud: CloudIndex, session: Session) {
        do {
            let verification = try cloud.verifyLog()
            contract(verification.isValid, "the cloud log does not verify: \(verification.firstProblem ?? "")")
            let (stored, rebuilt) = (try cloud.projectionDigest(), try cloud.rebuiltProjectionDigest())
            contract(stored == rebuilt, "the projections differ from a rebuild of the log")
            let stats = try cloud.stats()
            contract(stats.logRows == session.acceptedFrames && stats.messages == session.acceptedMessages,
                     "the log holds \(stats.logRows) frames and \(stats.messages) messages; \(session.acceptedFrames) and \(session.acceptedMessages) were accepted")
            for device in session.devices {
                let held = try cloud.heldEpochs(app: device.app, device: device.name)
                contract(held == device.held, "the cloud holds \(held) of \(device.name); its accepted frames reached \(device.held)")
            }
            // Nothing a device sends records a page or writes the crawler's stream.
            contract(stats.pages == 0, "devices' frames recorded \(stats.pages) pages")
            for app in [app, otherApp] {
                let pages = try cloud.crawledPages(app: app)
                contract(pages.isEmpty, "devices' frames recorded pages of \(app): \(pages.map(\.url))")
                let held = try cloud.heldEpochs(app: app, device: CrawlerRule.device)
                contract(held.isEmpty, "the cloud holds \(held) of \(CrawlerRule.device) in \(app)")
            }
            var reservedRows = 0
            var pageMessages = 0
            try cloud.scanLog { record in
                if CrawlerRule.isReserved(record.device) { reservedRows += 1 }
                pageMessages += record.messages.filter { if case .page = $0 { true } else { false } }.count
                return true
            }
            contract(reservedRows == 0 && pageMessages == 0,
                     "the log has \(reservedRows) rows of the cloud's own streams and \(pageMessages) page messages")
            let devices = UInt64(session.devices.count)
            let days = UInt64(max(1, session.days.count))
            for entry in try cloud.entries(app: app) + cloud.entries(app: otherApp) {
                let counts = entry.popularity
                let most = max(counts.views, counts.shown, counts.engaged)
                contract(most <= PopularityRule.maximumCount && most <= devices * days * PopularityRule.maximumPerDevicePerDay,
                         "a hash counts \(counts) from \(devices) devices in \(days) days")
                guard let content = entry.content else { continue }
                contract(entry.liveVotes >= threshold, "a hash with \(entry.liveVotes) live votes is public")
                let hash = PublicHash.of(app: entry.app, content: content)
                let senders = hash.flatMap { session.senders[$0]?[content] } ?? []
                let voters = hash.flatMap { session.voters[$0] } ?? []
                contract(senders.intersection(voters).count >= agreeingSenders,
                         "public content \(content) was sent by \(senders.sorted()), of whom \(senders.intersection(voters).count) voted for it")
            }
            var reports = 0
            for app in [app, otherApp] {
                let counted = try checkSketch(cloud, app: app, session: session, days: days)
                reports += counted
            }
            contract(stats.reports == reports, "stats() counts \(stats.reports) reports; the apps' sketches hold \(reports)")
            if session.modes.values.allSatisfy({ $0 == .exact }) {
                contract(stats.reports == 0, "\(stats.reports) reports were counted while both apps are exact")
            }
        } catch {
            contract(false, "the in-memory cloud cannot be read: \(error)")
        }
    }

    /// Checks `app`'s sketch against a model of `ReportRule` over the
    /// session's accepted reports, with the app's mode at the end; returns
    /// the reports it holds.
    static func checkSketch(_ cloud: CloudIndex, app: AppID, session: Session, days: UInt64) throws -> Int {
        let mode = session.modes[app] ?? .exact
        let kept = try cloud.popularity(app: app)
        contract(kept == mode, "the cloud says \(app)'s popularity is \(kept), not \(mode)")
        var expected: [Int64: SketchCell] = [:]
        if let settings = mode.privateSettings {
            // Per device: the day of its last counted report, and how many that day.
            var used: [DeviceID: (day: Int64, reports: Int)] = [:]
            for frame in session.reports where frame.app == app {
                var spent: (day: Int64, reports: Int) = used[frame.device].flatMap { $0.day == frame.day ? $0 : nil } ?? (frame.day, 0)
                for report in frame.reports where spent.reports < settings.reportsPerDay
                    && report.epsilonThousandths == settings.epsilonThousandths && report.hashes == settings.hashes
                    && report.buckets == settings.buckets {
                    let cell = Int64(report.function) * Int64(report.buckets) + Int64(report.row)
                    expected[cell, default: SketchCell()].reports += 1
                    expected[cell, default: SketchCell()].total += report.positive ? 1 : -1
                    spent.reports += 1
                }
                if spent.reports > 0 { used[frame.device] = spent }
            }
        }
        let cells = try cloud.sketchCells(app: app)
        let held = Dictionary(cells.map { ($0.cell, $0.counted) }, uniquingKeysWith: { first, _ in first })
        contract(held.count == cells.count && held == expected,
                 "the sketch of \(app) (\(mode.name)) holds \(cells.map { "\($0.cell): \($0.counted.reports)/\($0.counted.total)" }); the reports accepted make \(expected.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value.reports)/\($0.value.total)" })")
        let counted = cells.reduce(0) { $0 + Int($1.counted.reports) }
        if trace { note("sketch: \(app) \(mode.name): \(counted) reports in \(cells.count) cells") }
        let devices = UInt64(session.devices.filter { $0.app == app }.count)
        let perDay = UInt64(mode.privateSettings?.reportsPerDay ?? 0)
        contract(UInt64(counted) <= devices * perDay * days,
                 "\(app) counts \(counted) reports from \(devices) devices at \(perDay) a day in \(days) days")
        // The sketch reads back with its reports: a reading path, and
        // ranking's estimates, present exactly for an ldp app.
        if let settings = mode.privateSettings, settings.hashes * settings.buckets > largestSketchRead { return counted }
        let sketch = try cloud.privateSketch(app: app)
        contract((sketch == nil) == (mode == .exact) && (sketch?.reports ?? 0) == counted,
                 "\(app)'s sketch reads back with \(sketch.map { "\($0.reports)" } ?? "no") reports; it holds \(counted)")
        for entry in try cloud.publicIndex(app: app) {
            contract((entry.estimatedEngaged == nil) == (mode == .exact) && entry.estimatedEngaged.map(\.isFinite) != false,
                     "a public item of \(app) (\(mode.name)) is estimated at \(entry.estimatedEngaged.map { "\($0)" } ?? "nothing")")
        }
        return counted
    }

    /// A session of each kind of step: honest frames from three devices that
    /// make a hash public, a wrong key, a replay, a day passing, junk, a page
    /// from a device (well formed, and written by hand), a frame as `~crawler`;
    /// and, with an app in ldp mode, reports past the daily allowance, that do
    /// not fit, out of range, of the largest sketch, of the other app, across
    /// a change of mode or of the daily budget, and reports to an exact app.
    static func seeds() throws -> [(String, [UInt8])] {
        // An input is the popularity byte, then steps. A step is an action
        // byte and a device byte, then buildFrame's choices (epoch, seq,
        // count and its length, follows), each message's (hash, token, kind,
        // fields) and the flags.
        func frame(_ device: UInt8, _ message: [UInt8]) -> [UInt8] {
            [0, device, /* epoch, seq */ 0, 0, /* count */ 1, 0, /* follows */ 2] + message + [/* flags */ 1]
        }
        /// A frame of up to 40 messages (more than 5: a long one).
        func frame(_ device: UInt8, _ messages: [[UInt8]]) -> [UInt8] {
            let count: [UInt8] = messages.count > 5 ? [0, UInt8(messages.count - 1)] : [1, UInt8(messages.count - 1)]
            return [0, device, /* epoch, seq */ 0, 0] + count + [/* follows */ 2] + messages.joined() + [/* flags */ 1]
        }
        // The popularity byte: both apps exact; the app ldp with 3 reports a
        // day (4 × 8), and the other app too; the smallest sketch; the largest.
        let exact: UInt8 = 0, ldp: UInt8 = 2, bothLDP: UInt8 = 10, smallest: UInt8 = 6, largest: UInt8 = 7
        // A report for the sketch the device's last ack announced (in an
        // exact app, the first settings'), negative or positive, at the cell
        // the function and row choose (16-bit, modulo k and m).
        func report(positive: Bool = true, function: UInt16 = 1, row: UInt16 = 5) -> [UInt8] {
            [0, 0, 16, positive ? 129 : 1, UInt8(function & 0xff), UInt8(function >> 8), UInt8(row & 0xff), UInt8(row >> 8)]
        }
        // A report for another m (4 × 16): it fits no sketch of the seeds.
        let otherSketch: [UInt8] = [0, 0, 16, /* settings 3 */ 12, 1, 0, 9, 0]
        // Written by hand: ε 1, k 4, m 8, function 3, row 0, sign 1 (it fits);
        // then ε 20.001, out of range.
        let byHand: [UInt8] = [0, 0, 18, 1, 1, 0, /* k − 1 */ 1, /* 0 */ 0, /* sign 1 */ 1, /* no byte after */ 1]
        let outOfRange: [UInt8] = [0, 0, 18, 4, 1, 0, 1, 0, 1, 1]
        let changeMode: UInt8 = 30
        let oneDay: [UInt8] = [14, 0, /* one day */ 1, 0, 2]
        let vote: [UInt8] = [0, 0, 0]
        let content: [UInt8] = [0, 0, 5, /* which */ 0, /* as is */ 2, /* own hash */ 1]
        let signal: [UInt8] = [0, 0, 3, /* 7 each */ 2, 2, 2]
        // A page at the Paris URL with a title, a keyword, a deep link, a
        // price, rating 4.5 of 3, under its own hash.
        let page: [UInt8] = [0, 0, 14, /* url */ 0, /* title, deep link, price */ 73, /* title */ 0, /* one keyword */ 1, 0,
                             /* deep link */ 0, /* price */ 0, /* rating 4.5 */ 1, /* count 3 */ 2, /* own hash */ 1]
        // The same by hand, with the rating written "4.5", then "4.50".
        func handWritten(rating: UInt8) -> [UInt8] {
            [0, 0, 15, /* url */ 0, /* own hash */ 1, /* by hand */ 2, /* title, rating, count */ 193, 0, /* the url */ 1,
             /* title */ 1, /* one keyword */ 1, rating, /* count 3 */ 1]
        }
        let wrongKey = [10, 1] + [UInt8](repeating: 0x11, count: 32) + Array(frame(1, vote).dropFirst(2))
        let asCrawler = [/* as ~crawler */ 27, 0, /* name */ 0, /* zero key */ 0] + Array(frame(0, page).dropFirst(2))
        let reports = [report(), report(positive: false, row: 6), report(function: 3), report(), report(row: 7), report(row: 7)]
        return [
            ("votes-and-content", [exact] + frame(0, vote) + frame(1, vote) + frame(2, vote) + frame(0, content) + frame(1, content)),
            ("signals", [exact] + frame(0, vote) + frame(0, signal) + oneDay + frame(0, signal)),
            ("wrong-key", [exact] + wrongKey + frame(1, vote)),
            ("replay", [exact] + frame(0, vote) + [12, 0, 0] + frame(0, vote) + [13, 1, 0]),
            ("foreign-app", [exact, 11] + frame(3, vote).dropFirst()),
            ("header-changed", [exact, 8] + frame(0, vote).dropFirst() + [/* at */ 20, /* to */ 7]),
            ("junk", [exact, 15, 0, 1, 20, 0x53, 0x4c]),
            ("page-from-device", [exact] + frame(0, vote) + frame(0, page) + frame(1, vote)),
            ("page-by-hand", [exact] + frame(0, handWritten(rating: 0)) + frame(0, handWritten(rating: 1)) + frame(0, vote)),
            ("as-crawler", [exact] + asCrawler + frame(0, vote)),
            ("ldp-reports", [ldp] + frame(0, [vote, report()]) + frame(0, reports) + frame(1, [report(), otherSketch, byHand])
                + oneDay + frame(0, [report(), report(positive: false)]) + [12, 0, 0]),
            ("ldp-out-of-range", [ldp] + frame(0, [report(), outOfRange]) + frame(0, [byHand, report()])
                + frame(1, [0, 0, 19, /* 3 bytes */ 3, 1, 0xff, 0xff])),
            ("ldp-mode-change", [ldp] + frame(0, [report(), report()]) + [changeMode, 0, /* 4 × 16 */ 5] + frame(0, report())
                + frame(0, [report(), report(row: 15)]) + frame(1, report()) + [changeMode, 1, /* exact */ 0] + frame(2, report())),
            ("ldp-budget-change", [ldp] + frame(0, [report(), report(), report()]) + [changeMode, 0, /* 5 a day */ 3]
                + frame(0, [report(), report(), report()]) + frame(1, reports)),
            ("exact-reports", [exact] + frame(0, [vote, report(), byHand]) + frame(3, report())),
            ("ldp-both-apps", [bothLDP] + frame(3, [report(), report(), report(), report()]) + frame(0, [report(), otherSketch])),
            ("ldp-largest", [largest] + frame(0, [report(function: 0xffff, row: 0xffff), report(positive: false, function: 0, row: 0)])),
            ("ldp-smallest", [smallest] + frame(0, [report(), report()]) + oneDay + frame(0, report(positive: false))),
        ]
    }
}

extension IngestResult.Outcome {
    /// Accepted, or acknowledged again: the cloud took the frame as the device's.
    var isTaken: Bool {
        switch self {
        case .accepted, .duplicate: true
        case .rejected: false
        }
    }

    var isUnavailable: Bool {
        if case .rejected(let error) = self { error.code == .unavailable } else { false }
    }
}
