import CloudCore
import CloudSQLite
import Foundation
import IndexModel
import PostgresNIO
import SyncWire

/// The settings a fold depends on, as the store holds them: a server that
/// folds with others must fold with what the database says now.
struct FoldSettings: Equatable, Sendable {
    var threshold: Int
    var agreement: Int
}

extension FoldSettings {
    /// The settings as `cloud_meta` holds them now.
    static func read(_ session: PostgresSession) throws -> FoldSettings {
        var stored: [(name: Int64, value: Int64?)] = []
        for row in try session.query("SELECT \(PostgresCloud.settingColumns) FROM cloud_meta WHERE key IN ('threshold', 'agreement')") {
            stored.append((try row.integer(0, "a setting's name"), try row.optionalInteger(1, "a setting")))
        }
        return try FoldSettings(stored)
    }

    /// The settings from `cloud_meta` rows read with `PostgresCloud.settingColumns`:
    /// name 1 is K, 2 the agreement (absent: K); a value is 1 to 1,000,000.
    init(_ stored: [(name: Int64, value: Int64?)]) throws(CloudError) {
        var threshold: Int?
        var agreement: Int?
        for (name, value) in stored {
            guard let value, (1...1_000_000).contains(value) else {
                throw CloudError(.corruptStore, "cloud_meta.\(name == 1 ? "threshold" : "agreement") is not a number from 1 to 1,000,000")
            }
            if name == 1 { threshold = Int(value) } else { agreement = Int(value) }
        }
        guard let threshold else { throw CloudError(.corruptStore, "cloud_meta has no threshold") }
        self.init(threshold: threshold, agreement: agreement ?? threshold)
    }
}

/// The settings changed since the transaction began: run it again.
struct SettingsChanged: Error {
    let settings: FoldSettings
}

/// The device of a frame is not in the registry (a restore removed it).
struct DeviceNotEnrolled: Error {}

/// Ingest's reads and writes in PostgreSQL, in one READ COMMITTED
/// transaction on `session` (`docs/CLOUD.md`, "Many servers, one database"):
///
/// - It begins by locking the device's registry row (`FOR UPDATE`): one
///   frame of a device is placed at a time, whichever server took it, so a
///   frame retried on another server after the first committed finds it
///   held, and an overlap is compared with what was committed.
/// - A frame that appends locks its app's row too, and only then reads the
///   log head and the rows the fold will change: an app's appends and folds
///   run one at a time, so its log's order is the order its folds saw, and a
///   replay of the log equals the projections. Locks are taken device first,
///   app second, by every transaction that takes both.
/// - The fold runs in memory (`WorkingSet`); its changes, the log row and the
///   device's epoch are written back in one statement.
/// - The rows the fold reads, and the ack's content requests, come from what
///   the server kept of the app's last fold (`KeptFold`) when the log head
///   read under the app's lock says it is exact; otherwise every row the
///   frame needs is read, and the ack checks every wanted hash.
final class PostgresIngestTransaction: IngestTransaction {
    let session: PostgresSession
    let app: AppID
    let device: DeviceID
    let secrets: CloudSecrets
    /// The fold's memory for this transaction, whose `asks` may be swapped for the kept one.
    private let memory: FoldMemory
    private let kept: KeptFold
    /// The frame's messages, for the hashes an ack rechecks.
    private let messages: [OutboxMessage]
    /// What the fold runs with; the app lock checks it has not changed.
    let settings: FoldSettings
    private let held: [(epoch: Epoch, last: OutboxSeq)]
    private let backedUpPosition: OutboxPosition
    /// The app's popularity: read with the device's row, then again under
    /// the app's lock (`foldRows`), which is what a fold and its ack use.
    private var appPopularity: PopularityMode
    /// Set by `foldRows`: the app's log head and the rows loaded.
    private var head: (seq: Int64, hash: [UInt8]) = (0, CloudLog.genesis)
    private var rows: WorkingSet?
    private var logRow: [PostgresValue]?
    /// Ask states for this device by key, read in batches: with the wanted
    /// list, or for the hashes an ack rechecks. Keys read and absent are in
    /// `absentAskStates`.
    private var askStates: [Data: AskState] = [:]
    private var absentAskStates: Set<Data> = []
    private var recheckedHashesRead = false

    private enum IngestLockDevice: PostgresStatement {
        static let sql = """
            SELECT d.backed_up_epoch, d.backed_up_seq, a.popularity FROM devices d LEFT JOIN apps a ON a.app = d.app
            WHERE d.app = $1 AND d.device = $2 FOR UPDATE OF d
            """
        static let parameters: [PostgresDataType] = [.text, .text]
    }

    private enum IngestHeldEpochs: PostgresStatement {
        static let sql = """
            SELECT 0, epoch, last_seq FROM device_epochs WHERE app = $1 AND device = $2
            UNION ALL SELECT 1, \(PostgresCloud.settingColumns) FROM cloud_meta WHERE key IN ('threshold', 'agreement')
            """
        static let parameters: [PostgresDataType] = [.text, .text]
    }

    /// Locks the device's row and reads what the cloud holds of it.
    init(session: PostgresSession, app: AppID, device: DeviceID, secrets: CloudSecrets, memory: FoldMemory, kept: KeptFold,
         messages: [OutboxMessage]) throws {
        self.session = session
        self.app = app
        self.device = device
        self.secrets = secrets
        self.memory = memory
        self.kept = kept
        self.messages = messages
        if CrawlerRule.isReserved(device) {
            // The cloud's own stream has no device row: the app's row is the
            // lock (`foldRows` takes it too), and no backup ever drops it.
            let registry = try session.query("SELECT popularity FROM apps WHERE app = $1 FOR UPDATE", [.text(app.rawValue)]).first
            appPopularity = try Stored.popularity(try registry?.optionalBytes(0, "apps.popularity of \(app)"), app: app)
            backedUpPosition = .nothing
        } else {
            guard let registry = try session.query(IngestLockDevice.self, [.text(app.rawValue), .text(device.rawValue)]).first else {
                throw DeviceNotEnrolled()
            }
            backedUpPosition = OutboxPosition(epoch: Epoch(try registry.position(0, "devices.backed_up_epoch of \(device)")),
                                              seq: OutboxSeq(try registry.position(1, "devices.backed_up_seq of \(device)")))
            appPopularity = try Stored.popularity(try registry.optionalBytes(2, "apps.popularity of \(app)"), app: app)
        }
        // A statement of its own, after the lock: its snapshot sees what the
        // last holder of the lock committed.
        let rows = try session.query(IngestHeldEpochs.self, [.text(app.rawValue), .text(device.rawValue)])
        var epochs: [(epoch: Epoch, last: OutboxSeq)] = []
        var stored: [(name: Int64, value: Int64?)] = []
        for row in rows {
            if try row.integer(0, "a loaded row's kind") == 0 {
                epochs.append((Epoch(try row.position(1, "device_epochs.epoch of \(device)")),
                               OutboxSeq(try row.position(2, "device_epochs.last_seq of \(device)"))))
            } else {
                stored.append((try row.integer(1, "a setting's name"), try row.optionalInteger(2, "a setting")))
            }
        }
        held = epochs.sorted { $0.epoch < $1.epoch }
        settings = try FoldSettings(stored)
    }

    var wantsEntries: Bool { true }

    func heldEpochs(app: AppID, device: DeviceID) throws -> [(epoch: Epoch, last: OutboxSeq)] {
        held
    }

    func holdsFrame(app: AppID, _ frame: UploadFrame) throws -> Bool {
        try !session.query("""
            SELECT 1 FROM cloud_log WHERE app = $1 AND device = $2 AND epoch = $3 AND first_seq = $4 AND last_seq = $5
            AND accepted_from = first_seq AND digest = $6 LIMIT 1
            """, [.text(app.rawValue), .text(frame.device.rawValue), .position(frame.epoch),
                  .position(frame.firstSeq), .position(frame.lastSeq), .bytea(frame.digest)]).isEmpty
    }

    func loggedRows(app: AppID, device: DeviceID, epoch: Epoch, from: OutboxSeq, through: OutboxSeq) throws -> [StoredLogRow] {
        try session.query("""
            SELECT \(PostgresCloud.logColumns) FROM cloud_log
            WHERE app = $1 AND device = $2 AND epoch = $3 AND last_seq >= $4 AND accepted_from <= $5 ORDER BY accepted_from
            """, [.text(app.rawValue), .text(device.rawValue), .position(epoch), .position(from),
                  .position(through)]).map { row throws(CloudError) in try PostgresCloud.logRow(row) }
    }

    private enum IngestLockApp: PostgresStatement {
        static let sql = "SELECT popularity FROM apps WHERE app = $1 FOR UPDATE"
        static let parameters: [PostgresDataType] = [.text]
    }

    /// Locks the app's row, checks the settings, and reads the app's log
    /// head, its wanted seq and every row of the hashes `entries` name: the
    /// rows the server kept of the app's last fold when the head says they
    /// are exact (`KeptFold`), and from the store the rest.
    func foldRows(app: AppID, entries: [FoldMemory.Entry]) throws -> WorkingSet {
        let registry = try session.query(IngestLockApp.self, [.text(app.rawValue)]).first
        appPopularity = try Stored.popularity(try registry?.optionalBytes(0, "apps.popularity of \(app)"), app: app)
        var keySet = Set(entries.map(\.key))
        if messages.contains(where: { if case .page = $0 { true } else { false } }) {
            // A frame that records pages drops the offers of every wanted
            // hash (`CloudFold`): their rows and offers are loaded too.
            for row in try session.query("SELECT key FROM hashes WHERE app = $1 AND wanted_seq IS NOT NULL", [.text(app.rawValue)]) {
                keySet.insert(Data(try row.bytes(0, "hashes.key")))
            }
        }
        let voteSet = Set(entries.map { WorkingSet.VoteKey(key: $0.key, voter: Data($0.voter)) })
        // The pages at the URLs the frame's content names, which an offer looks for.
        var urls = Set<String>()
        for case .content(_, let content) in messages {
            if let url = content.webpageURL { urls.insert(url) }
        }
        let kept = self.kept.take(app: app)
        let held = kept?.rows
        let read = try load(app: app, keys: held.map { rows in keySet.filter { !rows.holds($0) } } ?? keySet,
                            votes: held.map { rows in voteSet.filter { !rows.holds($0) } } ?? voteSet, urls: urls)
        guard read.settings == settings else { throw SettingsChanged(settings: read.settings) }
        head = read.head

        let rows: WorkingSet
        if let kept, kept.isExact(head: KeptFold.Head(seq: head.seq, hash: head.hash), settings: settings) {
            memory.asks = kept.asks
            rows = held ?? WorkingSet(app: app, wantedSeq: read.wantedSeq, isComplete: false)
            rows.beginFrame(wantedSeq: read.wantedSeq)
            rows.loaded(keys: read.keys, votes: read.votes, hashes: read.hashes, votes: read.voteRows, offers: read.offers)
        } else {
            rows = WorkingSet(app: app, wantedSeq: read.wantedSeq, isComplete: false)
            rows.loaded(keys: read.keys, votes: read.votes, hashes: read.hashes, votes: read.voteRows, offers: read.offers)
            if held != nil {
                // What was taken as kept is not exact: its rows are read too.
                let rest = try load(app: app, keys: keySet.subtracting(read.keys), votes: voteSet.subtracting(read.votes), urls: [])
                rows.loaded(keys: rest.keys, votes: rest.votes, hashes: rest.hashes, votes: rest.voteRows, offers: rest.offers)
            }
        }
        let session = self.session
        let storedURLs = read.pages
        rows.storedPage = { url in
            if urls.contains(url) { return storedURLs.contains(url) }
            return try session.query("SELECT EXISTS (SELECT 1 FROM pages WHERE app = $1 AND url = $2)",
                                     [.text(app.rawValue), .text(url)])[0].flag(0, "a page's presence")
        }
        rows.storedAllowance = { device in
            try session.query("SELECT day, reports FROM report_allowances WHERE app = $1 AND device = $2",
                              [.text(app.rawValue), .text(device.rawValue)]).first.map { row throws(CloudError) in
                ReportRule.Allowance(day: try row.integer(0, "report_allowances.day of \(device)"),
                                     used: try row.count(1, "report_allowances.reports of \(device)"))
            }
        }
        self.rows = rows
        return rows
    }

    /// What `load` read under the app's lock.
    private struct Loaded {
        var keys: Set<Data>
        var votes: Set<WorkingSet.VoteKey>
        var hashes: [Data: WorkingSet.HashRow] = [:]
        var voteRows: [WorkingSet.VoteKey: WorkingSet.VoteRow] = [:]
        var offers: [Data: [Data: Data]] = [:]
        /// Of the URLs asked for, those the app has a page at.
        var pages: Set<String> = []
        var head: (seq: Int64, hash: [UInt8]) = (0, CloudLog.genesis)
        var wantedSeq: Int64 = 0
        var settings = FoldSettings(threshold: 1, agreement: 1)
    }

    private enum IngestLoad: PostgresStatement {
        static let sql = """
            SELECT 0, h.key, NULL::bytea, h.hash, h.live_votes, h.voters, h.views, h.shown, h.engaged, h.wanted_seq, h.has_content
              FROM unnest($2::bytea[]) AS t(key)
              CROSS JOIN LATERAL (SELECT * FROM hashes WHERE app = $1 AND key = t.key OFFSET 0) h
            UNION ALL
            SELECT 1, v.key, v.voter, v.token, v.live, v.signal_day, v.day_views, v.day_shown, v.day_engaged, NULL, NULL
              FROM unnest($3::bytea[], $4::bytea[]) AS t(key, voter)
              CROSS JOIN LATERAL (SELECT * FROM votes WHERE app = $1 AND key = t.key AND voter = t.voter OFFSET 0) v
            UNION ALL
            SELECT 2, o.key, o.voter, o.digest, NULL, NULL, NULL, NULL, NULL, NULL, NULL
              FROM unnest($2::bytea[]) AS t(key)
              CROSS JOIN LATERAL (SELECT * FROM content_offers WHERE app = $1 AND key = t.key OFFSET 0) o
            UNION ALL
            SELECT 3, NULL, NULL, hash, seq, NULL, NULL, NULL, NULL, NULL, NULL
              FROM (SELECT seq, hash FROM cloud_log WHERE app = $1 ORDER BY seq DESC LIMIT 1) head
            UNION ALL
            SELECT 4, NULL, NULL, NULL, wanted_seq, NULL, NULL, NULL, NULL, NULL, NULL FROM app_state WHERE app = $1
            UNION ALL
            SELECT 5, NULL, NULL, NULL, \(PostgresCloud.settingColumns), NULL, NULL, NULL, NULL, NULL
              FROM cloud_meta WHERE key IN ('threshold', 'agreement')
            UNION ALL
            SELECT 6, NULL, NULL, convert_to(url, 'UTF8'), NULL, NULL, NULL, NULL, NULL, NULL, NULL
              FROM pages WHERE app = $1 AND url = ANY($5::text[])
            """
        static let parameters: [PostgresDataType] = [.text, .byteaArray, .byteaArray, .byteaArray, .textArray]
    }

    /// Reads, in one statement, the rows of `keys` (the hashes' and their
    /// offers) and of `votes`, which of `urls` the app has pages at, and the
    /// app's log head, wanted seq and settings.
    private func load(app: AppID, keys: Set<Data>, votes: Set<WorkingSet.VoteKey>, urls: Set<String>) throws -> Loaded {
        let keyList = Array(keys)
        let voteList = Array(votes)
        let rows = try session.query(IngestLoad.self, [
            .text(app.rawValue), .byteaArray(keyList.map { [UInt8]($0) }), .byteaArray(voteList.map { [UInt8]($0.key) }),
            .byteaArray(voteList.map { [UInt8]($0.voter) }), .textArray(Array(urls)),
        ])
        var loaded = Loaded(keys: keys, votes: votes)
        loaded.hashes.reserveCapacity(keyList.count)
        loaded.voteRows.reserveCapacity(voteList.count)
        var stored: [(name: Int64, value: Int64?)] = []
        for row in rows {
            switch try row.integer(0, "a loaded row's kind") {
            case 0: loaded.hashes[Data(try row.bytes(1, "hashes.key"))] = try PostgresCloud.hashRow(row, from: 3)
            case 1:
                let key = WorkingSet.VoteKey(key: Data(try row.bytes(1, "votes.key")), voter: Data(try row.bytes(2, "votes.voter")))
                loaded.voteRows[key] = try PostgresCloud.voteRow(row, from: 3)
            case 2:
                loaded.offers[Data(try row.bytes(1, "content_offers.key")), default: [:]][Data(try row.bytes(2, "content_offers.voter"))] =
                    Data(try row.bytes(3, "content_offers.digest"))
            case 3: loaded.head = (try row.integer(4, "cloud_log.seq of app \(app)"), try row.bytes(3, "cloud_log.hash of app \(app)"))
            case 4: loaded.wantedSeq = try row.count(4, "app_state.wanted_seq of \(app)")
            case 5: stored.append((try row.integer(4, "a setting's name"), try row.optionalInteger(5, "a setting")))
            default:
                guard let url = String(validating: try row.bytes(3, "pages.url of app \(app)"), as: UTF8.self) else {
                    throw CloudError(.corruptStore, "pages.url of app \(app) is not UTF-8")
                }
                loaded.pages.insert(url)
            }
        }
        loaded.settings = try FoldSettings(stored)
        return loaded
    }

    /// Chains the frame after the app's head; the row is written with the
    /// fold's changes (`finishFold`).
    func appendLog(app: AppID, _ frame: UploadFrame, acceptedFrom: OutboxSeq, receivedAt: Timestamp) throws -> Int64 {
        let seq = head.seq + 1
        let hash = CloudLog.chainHash(previous: head.hash, app: app, device: frame.device, epoch: frame.epoch,
                                      firstSeq: frame.firstSeq, lastSeq: frame.lastSeq, acceptedFrom: acceptedFrom,
                                      digest: frame.digest, receivedAt: receivedAt)
        logRow = [.int64(seq), .text(frame.device.rawValue), .position(frame.epoch),
                  .position(frame.firstSeq), .position(frame.lastSeq),
                  .position(acceptedFrom), .int64(Int64(frame.codec.rawValue)),
                  .int64(Int64(frame.uncompressedLength)), .bytea(frame.digest), .bytea(frame.payload),
                  .int64(receivedAt.millisecondsSince1970), .bytea(head.hash), .bytea(hash)]
        head = (seq, hash)
        return seq
    }

    func finishFold(_ rows: WorkingSet) throws {
        try PostgresCloud.write(rows, logRow: logRow, session: session)
    }

    /// After the ack, before the commit: keeps the fold's memory of requests
    /// and its rows, which the write made the store's, for the next
    /// transaction of the app, exact once this one's append is the log head
    /// (`KeptFold`). A transaction that appended nothing read no head under
    /// the app's lock and keeps nothing.
    func keepFold() {
        guard logRow != nil else { return }
        kept.keep(memory.asks, rows: rows, app: app, head: KeptFold.Head(seq: head.seq, hash: head.hash), settings: settings)
    }

    func backedUp(app: AppID, device: DeviceID) throws -> OutboxPosition {
        backedUpPosition
    }

    func popularity(app: AppID) throws -> PopularityMode {
        appPopularity
    }

    private enum IngestWantedHashes: PostgresStatement {
        static let sql = """
            SELECT hash, key, wanted_seq FROM hashes WHERE app = $1 AND wanted_seq IS NOT NULL ORDER BY wanted_seq
            """
        static let parameters: [PostgresDataType] = [.text]
    }

    /// The app's wanted hashes, and (in the same breath) what each says of
    /// this device's vote and offer.
    func wantedHashes(app: AppID) throws -> [(hash: PublicHash, key: Data, wantedSeq: Int64)] {
        var wanted: [(hash: PublicHash, key: Data, wantedSeq: Int64)] = []
        for row in try session.query(IngestWantedHashes.self, [.text(app.rawValue)]) {
            guard let hash = PublicHash(try row.bytes(0, "hashes.hash of a wanted hash of app \(app)")) else {
                throw CloudError(.corruptStore, "hashes.hash of a wanted hash of app \(app) is not a public hash")
            }
            wanted.append((hash, Data(try row.bytes(1, "hashes.key")), try row.integer(2, "hashes.wanted_seq")))
        }
        guard !wanted.isEmpty else { return [] }
        let names = memory.names(for: DeviceStream(app: app, device: device), secrets: secrets)
        try readAskStates(app: app, keys: wanted.map(\.key), voters: wanted.map { names.voter($0.hash) })
        return wanted
    }

    private enum IngestAskStates: PostgresStatement {
        static let sql = """
            SELECT t.key, h.wanted_seq, h.live_votes, h.has_content, v.live, o.voter IS NOT NULL
            FROM unnest($2::bytea[], $3::bytea[]) AS t(key, voter)
            CROSS JOIN LATERAL (SELECT wanted_seq, live_votes, has_content FROM hashes WHERE app = $1 AND key = t.key OFFSET 0) h
            LEFT JOIN LATERAL (SELECT live FROM votes WHERE app = $1 AND key = t.key AND voter = t.voter OFFSET 0) v ON TRUE
            LEFT JOIN LATERAL (SELECT voter FROM content_offers WHERE app = $1 AND key = t.key AND voter = t.voter OFFSET 0) o ON TRUE
            """
        static let parameters: [PostgresDataType] = [.text, .byteaArray, .byteaArray]
    }

    /// Reads the ask states of `keys` for this device (`voters`, its
    /// pseudonym for each) in one statement, into `askStates`.
    private func readAskStates(app: AppID, keys: [Data], voters: [[UInt8]]) throws {
        for row in try session.query(IngestAskStates.self, [.text(app.rawValue), .byteaArray(keys.map { [UInt8]($0) }), .byteaArray(voters)]) {
            askStates[Data(try row.bytes(0, "hashes.key"))] = AskState(
                wantedSeq: try row.optionalInteger(1, "hashes.wanted_seq"), liveVotes: try row.count(2, "hashes.live_votes"),
                hasContent: try row.integer(3, "hashes.has_content") != 0,
                isLive: try row.optionalInteger(4, "votes.live") == 1, hasOffer: try row.flag(5, "an offer's presence"))
        }
        absentAskStates.formUnion(keys.filter { askStates[$0] == nil })
    }

    /// The hashes an ack that remembers the device rechecks (`IngestCore`'s
    /// ack): those whose wanted state changed since its last ack, and those
    /// the frame votes for, withdraws or offers. Read in one statement before
    /// the first is asked for, instead of one statement each; a hash asked
    /// for that is not among them is read on its own.
    private func readRecheckedHashes(app: AppID) throws {
        let stream = DeviceStream(app: app, device: device)
        var hashes = Set<PublicHash>()
        if let known = memory.asks.device(stream), let changed = memory.asks.changes(since: known.mark) {
            hashes.formUnion(changed)
        }
        for message in messages {
            switch message {
            case .vote(let hash, _), .withdraw(let hash, _), .content(let hash, _): hashes.insert(hash)
            case .signal, .page, .report, .reindexAsk, .contentPurged, .contentWithheld: break
            }
        }
        let names = memory.names(for: stream, secrets: secrets)
        var keys: [Data] = []
        var voters: [[UInt8]] = []
        for hash in hashes {
            let named = names.of(hash)
            guard askStates[named.key] == nil, !absentAskStates.contains(named.key) else { continue }
            keys.append(named.key)
            voters.append(named.voter)
        }
        guard !keys.isEmpty else { return }
        try readAskStates(app: app, keys: keys, voters: voters)
    }

    func askState(app: AppID, key: Data, voter: [UInt8]) throws -> AskState? {
        if let known = askStates[key] { return known }
        if absentAskStates.contains(key) { return nil }
        if !recheckedHashesRead {
            recheckedHashesRead = true
            try readRecheckedHashes(app: app)
            if let known = askStates[key] { return known }
            if absentAskStates.contains(key) { return nil }
        }
        guard let row = try session.query("""
            SELECT h.wanted_seq, h.live_votes, h.has_content,
                   (SELECT live FROM votes WHERE app = $1 AND key = $2 AND voter = $3),
                   EXISTS (SELECT 1 FROM content_offers WHERE app = $1 AND key = $2 AND voter = $3)
            FROM hashes h WHERE h.app = $1 AND h.key = $2
            """, [.text(app.rawValue), .bytea([UInt8](key)), .bytea(voter)]).first else { return nil }
        return AskState(wantedSeq: try row.optionalInteger(0, "hashes.wanted_seq"), liveVotes: try row.count(1, "hashes.live_votes"),
                        hasContent: try row.integer(2, "hashes.has_content") != 0,
                        isLive: try row.optionalInteger(3, "votes.live") == 1, hasOffer: try row.flag(4, "an offer's presence"))
    }
}
